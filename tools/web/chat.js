// specd chat page: streams generations over the WebSocket /v1/ws (DESIGN.md's wire
// protocol) and colours every token by who produced it, as in Figure 1 of Leviathan et
// al.: in a burst with `accepted` = n, the first n tokens are draft tokens the target
// accepted, the rest (normally one) the target supplied as a correction or bonus.
// Per-token text comes from the frame's optional `pieces` array; without it a burst
// is coloured as a whole only where that is exact (no accepted drafts: all target).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    status: $('status'), tps: $('tps'), acceptance: $('acceptance'), ttft: $('ttft'),
    tokens: $('tokens'), perRound: $('per-round'), transcript: $('transcript'),
    composer: $('composer'), prompt: $('prompt'), send: $('send'), stop: $('stop'),
    temperature: $('temperature'), topP: $('top_p'), topK: $('top_k'), maxTokens: $('max_tokens'),
    seed: $('seed'), speculative: $('speculative'), k: $('k'), mode: $('mode'),
    system: $('system'), clear: $('clear'),
  };

  let socket = null;
  let retryMs = 500;
  let nextId = 1;
  let current = null;   // the Reply streaming now, if any
  let history = [];     // chat turns sent with the next request in chat mode

  // ---------------------------------------------------------------- connection

  function connect() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    // A server with a bearer token takes it as ?access_token= on the handshake (browsers
    // cannot set headers there); the page passes on its own ?access_token=.
    const token = new URLSearchParams(location.search).get('access_token');
    const query = token ? `?access_token=${encodeURIComponent(token)}` : '';
    socket = new WebSocket(`${scheme}://${location.host}/v1/ws${query}`);
    setConnection('connecting', 'connecting…');
    socket.onopen = () => {
      retryMs = 500;
      setConnection('open', 'connected');
    };
    socket.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (e) {
        console.error('specd: frame is not JSON', event.data);
        return;
      }
      onFrame(frame);
    };
    socket.onclose = (event) => {
      setConnection('closed', `disconnected (${event.code}${event.reason ? ' ' + event.reason : ''}), retrying`);
      if (current) current.fail('disconnected', `connection closed with code ${event.code}`);
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 8000);
    };
  }

  function setConnection(state, label) {
    document.body.dataset.connection = state;
    ui.status.textContent = label;
    ui.status.className = `status ${state}`;
    updateButtons();
  }

  function updateButtons() {
    const open = socket && socket.readyState === WebSocket.OPEN;
    ui.send.disabled = !open || current !== null;
    ui.stop.disabled = current === null;
  }

  function onFrame(frame) {
    if (!current || (frame.id !== undefined && frame.id !== null && frame.id !== current.id)) {
      if (frame.type === 'error') showError(frame.code, frame.message);
      return;
    }
    if (frame.type === 'tokens') current.addBurst(frame);
    else if (frame.type === 'done') current.finish(frame);
    else if (frame.type === 'error') current.fail(frame.code, frame.message);
  }

  // ---------------------------------------------------------------- requests

  function numberField(input, parse) {
    const value = parse(input.value);
    if (!Number.isFinite(value)) throw new Error(`${input.id} is not a number`);
    return value;
  }

  function buildRequest(id, text) {
    const request = {
      type: 'generate',
      id,
      max_tokens: numberField(ui.maxTokens, (v) => parseInt(v, 10)),
      temperature: numberField(ui.temperature, parseFloat),
      top_p: numberField(ui.topP, parseFloat),
      top_k: numberField(ui.topK, (v) => parseInt(v, 10)),
    };
    if (ui.seed.value.trim() !== '') request.seed = numberField(ui.seed, (v) => parseInt(v, 10));
    request.speculative = ui.speculative.checked
      ? { enabled: true, k: ui.k.value === 'auto' ? 'auto' : parseInt(ui.k.value, 10) }
      : { enabled: false };
    if (ui.mode.value === 'chat') {
      const messages = [];
      if (ui.system.value.trim() !== '') messages.push({ role: 'system', content: ui.system.value });
      request.messages = messages.concat(history, [{ role: 'user', content: text }]);
    } else {
      request.prompt = text;
    }
    return request;
  }

  function send(text) {
    if (current || !socket || socket.readyState !== WebSocket.OPEN || text === '') return;
    const id = `c${nextId++}`;
    let request;
    try {
      request = buildRequest(id, text);
    } catch (e) {
      showError('bad_request', e.message);
      return;
    }
    addMessage('user', text);
    current = new Reply(id, text, ui.mode.value === 'chat');
    socket.send(JSON.stringify(request));
    ui.prompt.value = '';
    updateButtons();
  }

  function addMessage(role, text) {
    const div = document.createElement('div');
    div.className = `msg ${role}`;
    const body = document.createElement('div');
    body.className = 'body';
    body.textContent = text;
    div.append(body);
    ui.transcript.append(div);
    div.scrollIntoView({ block: 'end' });
    return div;
  }

  function showError(code, message) {
    const div = addMessage('error', `${code}: ${message}`);
    div.dataset.code = code;
  }

  // ---------------------------------------------------------------- one reply

  // The text shown is the concatenation of the bursts' `text` (authoritative: the server
  // holds back incomplete characters and stop-string prefixes). The colour of each
  // character comes from the token segments at the same offset.
  class Reply {
    constructor(id, userText, chat) {
      this.id = id;
      this.userText = userText;
      this.chat = chat;
      this.text = '';
      this.segments = [];       // {start, end, kind, corrected, title} awaiting text, in order
      this.piecesLength = 0;    // end offset of the last segment
      this.renderedTo = 0;
      this.tokens = 0;
      this.rounds = 0;
      this.drafted = 0;
      this.accepted = 0;
      this.sentAt = performance.now();
      this.firstAt = null;
      this.div = addMessage('assistant', '');
      this.body = this.div.querySelector('.body');
      this.meta = document.createElement('div');
      this.meta.className = 'meta';
      this.div.append(this.meta);
      this.div.dataset.id = id;
      this.div.dataset.state = 'streaming';
      this.updateStats();
    }

    addBurst(frame) {
      const ids = Array.isArray(frame.token_ids) ? frame.token_ids : [];
      const drafted = frame.drafted | 0;
      const accepted = frame.accepted | 0;
      const rejected = drafted > accepted;
      if (this.firstAt === null && ids.length > 0) this.firstAt = performance.now();
      this.tokens += ids.length;
      this.drafted += drafted;
      this.accepted += accepted;
      if (ids.length > 0) this.rounds += 1;
      const text = typeof frame.text === 'string' ? frame.text : '';
      const title = drafted > 0 ? `round ${this.rounds}: ${accepted} of ${drafted} drafted tokens accepted`
        : `round ${this.rounds}: target only`;
      if (Array.isArray(frame.pieces) && frame.pieces.length === ids.length) {
        frame.pieces.forEach((piece, i) => {
          const target = i >= accepted;
          this.pushSegment(piece, target ? 'target' : 'draft', target && rejected, title);
        });
      } else if (text !== '') {
        // Without per-token text only an all-target burst can be coloured exactly.
        this.pushSegment(text, accepted === 0 && ids.length > 0 ? 'target' : 'mixed', rejected, title);
      }
      this.text += text;
      this.render(false);
      this.updateStats();
    }

    pushSegment(piece, kind, corrected, title) {
      const start = this.piecesLength;
      this.piecesLength += piece.length;
      this.segments.push({ start, end: this.piecesLength, kind, corrected, title });
    }

    // Renders every segment the shown text covers; at the end also partly covered
    // segments and any text beyond the segments.
    render(final) {
      const frag = document.createDocumentFragment();
      while (this.segments.length > 0) {
        const seg = this.segments[0];
        if (seg.end > this.text.length && !final) break;
        this.segments.shift();
        const end = Math.min(seg.end, this.text.length);
        if (end <= seg.start) continue;
        const span = document.createElement('span');
        span.className = `tok ${seg.kind}${seg.corrected ? ' corrected' : ''}`;
        span.title = seg.title;
        span.textContent = this.text.slice(seg.start, end);
        frag.append(span);
        this.renderedTo = end;
      }
      if (final && this.renderedTo < this.text.length) {
        const span = document.createElement('span');
        span.className = 'tok mixed';
        span.textContent = this.text.slice(this.renderedTo);
        frag.append(span);
        this.renderedTo = this.text.length;
      }
      this.body.append(frag);
      this.div.scrollIntoView({ block: 'end' });
    }

    tokensPerSecond() {
      if (this.firstAt === null) return null;
      const seconds = (performance.now() - this.firstAt) / 1000;
      return seconds > 0 ? this.tokens / seconds : null;
    }

    updateStats() {
      const tps = this.tokensPerSecond();
      ui.tps.textContent = tps === null ? '–' : tps.toFixed(1);
      ui.acceptance.textContent = this.drafted > 0 ? `${(100 * this.accepted / this.drafted).toFixed(1)}%` : '–';
      ui.ttft.textContent = this.firstAt === null ? '–' : `${Math.round(this.firstAt - this.sentAt)} ms`;
      ui.tokens.textContent = String(this.tokens);
      ui.perRound.textContent = this.rounds > 0 ? (this.tokens / this.rounds).toFixed(2) : '–';
      Object.assign(this.div.dataset, {
        tokens: this.tokens, rounds: this.rounds, drafted: this.drafted, accepted: this.accepted,
      });
    }

    finish(frame) {
      this.render(true);
      this.updateStats();
      const reason = frame.finish_reason || 'stop';
      const parts = [`${this.tokens} tokens`, `${this.rounds} rounds`];
      if (this.drafted > 0) parts.push(`acceptance ${(100 * this.accepted / this.drafted).toFixed(1)}%`);
      const tps = this.tokensPerSecond();
      if (tps !== null) parts.push(`${tps.toFixed(1)} tokens/s`);
      parts.push(`finish: ${reason}`);
      this.meta.textContent = parts.join(' · ');
      this.div.dataset.finishReason = reason;
      if (frame.usage && Number.isFinite(frame.usage.completion_tokens)) {
        this.div.dataset.completionTokens = frame.usage.completion_tokens;
      }
      if (this.chat) {
        history.push({ role: 'user', content: this.userText }, { role: 'assistant', content: this.text });
      }
      this.end('done');
    }

    fail(code, message) {
      this.render(true);
      this.meta.textContent = `error ${code}: ${message}`;
      this.div.dataset.errorCode = code;
      this.div.classList.add('failed');
      this.end('error');
    }

    end(state) {
      this.div.dataset.state = state;
      current = null;
      updateButtons();
    }
  }

  // ---------------------------------------------------------------- controls

  ui.composer.addEventListener('submit', (event) => {
    event.preventDefault();
    send(ui.prompt.value);
  });
  ui.prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send(ui.prompt.value);
    }
  });
  ui.stop.addEventListener('click', () => {
    if (current && socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: 'cancel', id: current.id }));
    }
  });
  ui.speculative.addEventListener('change', () => {
    ui.k.disabled = !ui.speculative.checked;
  });
  ui.clear.addEventListener('click', () => {
    history = [];
    ui.transcript.replaceChildren();
  });
  setInterval(() => {
    if (current) current.updateStats();
  }, 500);

  connect();
})();
