// specd trace viewer (served at /trace): loads a trace (docs/trace_format.md) from
// ?src=URL, a file (picker or drop), or live from this server's GET /v1/trace?seconds=N
// every 2 s, and shows the lanes and requests on a timeline, the clicked request's
// waterfall and the window's latency percentiles. A server without /v1/trace answers
// 404; the page then says so instead of failing.
'use strict';

(() => {
  const specd = window.specd;
  const { el } = specd.traceDetails;
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const POLL_MS = 2000;
  const LEGEND = [['verify', '#2f6fde'], ['draft', '#e0821e'], ['prefill', '#9a6ee0'], ['queued', '#c9ced6'],
    ['round', '#1f9bb0'], ['burst', '#2a9d5c'], ['generating', '#8fb8ef']];

  let model = null, selectedId = null, charts = [], pollTimer = null, paused = false;
  let liveRun = 0;  // bumped when live mode starts or stops: a poll in flight from before is dropped
  const timeline = new specd.Timeline($('timeline'), $('tooltip'), { onSelect: select });

  function setStatus(text, state) {
    $('status').textContent = text;
    document.body.dataset.state = state;
  }

  function notice(html, kind = 'info') {
    const n = $('notice');
    n.hidden = !html;
    n.className = `notice ${kind}`;
    n.innerHTML = html || '';
  }

  function select(request) {
    selectedId = request ? request.id : null;
    specd.traceDetails.renderWaterfall($('waterfall'), request);
  }

  function summarize(m) {
    // Per-request rounds where the trace has them, else the bench dialect's scheduler rounds.
    let rounds = m.requests.flatMap((r) => r.rounds);
    if (!rounds.length) rounds = m.scheduler.flatMap((l) => l.slices);
    const drafted = rounds.reduce((n, s) => n + (s.args.drafted || 0), 0);
    const accepted = rounds.reduce((n, s) => n + (s.args.accepted || 0), 0);
    const items = [['lanes', m.lanes.length, 'lanes'], ['requests', m.requests.length, 'requests'], ['rounds', rounds.length, 'rounds'],
      ['acceptance', drafted ? `${((100 * accepted) / drafted).toFixed(1)}%` : '–', 'acceptance'],
      ['window', specd.charts.formatMs((m.end - m.start) / 1000), 'window']];
    $('summary').replaceChildren(...items.map(([k, v, id]) => el('div', {}, el('dt', {}, k), el('dd', { id: `summary-${id}` }, String(v)))));
    $('summary').dataset.lanes = m.lanes.length;
    $('summary').dataset.requests = m.requests.length;
  }

  function drawCdfs(m) {
    charts.forEach((c) => c.destroy());
    charts = [];
    const curve = (samples) => specd.charts.cdfPoints([...samples].sort((a, b) => a - b));
    const plots = [['ttft-cdf', m.ttftMs, 'time to first token'], ['itl-cdf', m.interTokenMs, 'inter-token']];
    for (const [id, samples, title] of plots) {
      const box = $(id);
      box.replaceChildren();
      if (!samples.length) {
        box.append(el('p', { class: 'muted' }, `No ${title} samples: the trace has no bursts.`));
        continue;
      }
      charts.push(specd.charts.cdfChart(box, [{ label: 'window', points: curve(samples) }], { title, xLabel: 'ms', height: 200 }));
    }
  }

  function load(trace, label, live = false) {
    try {
      model = specd.traceModel.parseTrace(trace);
    } catch (e) {
      setStatus('not a trace', 'error');
      notice(`Could not read ${label}: ${e.message}`, 'error');
      return;
    }
    timeline.setModel(model, live);
    summarize(model);
    specd.traceDetails.renderPercentiles($('percentiles'), model);
    drawCdfs(model);
    const again = selectedId && model.requests.find((r) => r.id === selectedId);
    if (again) timeline.select(again);
    else select(null);
    const warnings = [];
    if (model.dropped) warnings.push(`${model.dropped} events were dropped from the server's trace buffer in this window.`);
    if (!model.hasBursts && model.requests.length) warnings.push('This trace has no bursts, so time to first token and inter-token latency are not in it.');
    notice(warnings.join(' '));
    setStatus(`${label}`, 'loaded');
  }

  async function loadUrl(url) {
    setStatus('loading…', 'loading');
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      load(await response.json(), url.split('/').pop() || url);
    } catch (e) {
      setStatus('load failed', 'error');
      notice(`Could not load ${escapeHtml(url)}: ${escapeHtml(e.message)}`, 'error');
    }
  }

  function loadFile(file) {
    stopLive();
    file.text().then((text) => {
      let trace;
      try {
        trace = JSON.parse(text);
      } catch (e) {
        setStatus('not JSON', 'error');
        notice(`${escapeHtml(file.name)} is not JSON: ${escapeHtml(e.message)}`, 'error');
        return;
      }
      load(trace, file.name);
    });
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }

  // ------------------------------------------------------------------- live mode

  async function poll() {
    pollTimer = null;
    const run = liveRun;
    const seconds = Math.max(1, Number($('seconds').value) || 10);
    // The chat page's convention: the page's own ?access_token= authorizes its API calls.
    const token = params.get('access_token');
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    let response;
    try {
      response = await fetch(`/v1/trace?seconds=${seconds}`, { headers, cache: 'no-store' });
    } catch (e) {
      return run === liveRun && retry(`the server did not answer (${e.message}); retrying`);
    }
    if (run !== liveRun) return;
    if (response.status === 404) {
      stopLive();
      setStatus('not recording', 'notice');
      notice('This server does not record traces yet: <code>GET /v1/trace</code> answered 404. ' +
        'Open a trace file instead (<code>specd bench --concurrency 1,4 --trace FILE</code> writes one), or drop it here.');
      return;
    }
    if (response.status === 401) {
      stopLive();
      setStatus('unauthorized', 'notice');
      notice('This server wants its bearer token: open the page as <code>/trace?access_token=TOKEN</code>.', 'error');
      return;
    }
    if (!response.ok) return retry(`GET /v1/trace answered ${response.status}; retrying`);
    let trace;
    try {
      trace = await response.json();
    } catch (e) {
      return run === liveRun && retry(`GET /v1/trace answered something that is not JSON (${e.message}); retrying`);
    }
    if (run !== liveRun) return;
    if (!paused) load(trace, `live: last ${seconds} s`, true);
    pollTimer = setTimeout(poll, POLL_MS);
  }

  function retry(message) {
    setStatus('retrying', 'notice');
    notice(escapeHtml(message), 'error');
    pollTimer = setTimeout(poll, POLL_MS * 2);
  }

  function startLive() {
    stopLive();
    paused = false;
    $('live').classList.add('active');
    $('pause').disabled = false;
    $('pause').textContent = 'Pause';
    setStatus('live…', 'loading');
    poll();
  }

  function stopLive() {
    liveRun += 1;
    clearTimeout(pollTimer);
    pollTimer = null;
    $('live').classList.remove('active');
    $('pause').disabled = true;
  }

  // ------------------------------------------------------------------- wiring

  $('live').addEventListener('click', startLive);
  $('pause').addEventListener('click', () => {
    paused = !paused;
    $('pause').textContent = paused ? 'Resume' : 'Pause';
  });
  $('file').addEventListener('change', (e) => e.target.files[0] && loadFile(e.target.files[0]));
  $('zoom-in').addEventListener('click', () => model && timeline.zoom(0.5));
  $('zoom-out').addEventListener('click', () => model && timeline.zoom(2));
  $('fit').addEventListener('click', () => model && timeline.fit());
  document.addEventListener('dragover', (e) => {
    e.preventDefault();
    document.body.classList.add('dragging');
  });
  document.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dragging');
    if (e.dataTransfer.files[0]) loadFile(e.dataTransfer.files[0]);
  });
  $('legend').replaceChildren(...LEGEND.map(([name, c]) => el('span', {}, el('i', { style: `background:${c}` }), name)));
  if (params.get('seconds')) $('seconds').value = params.get('seconds');
  select(null);

  // Tests and scripts reach the viewer through this.
  window.specdTraceViewer = { timeline, get model() { return model; } };
  if (params.get('src')) loadUrl(params.get('src'));
  else if (location.protocol.startsWith('http')) startLive();
})();
