// Reads a Chrome trace-event object (docs/trace_format.md: the server's trace, or the
// older `specd bench --trace` dialect) into what the viewer draws: lane rows with their
// jobs, request rows with their spans, rounds, bursts and flows, and the window's
// latency samples. Missing fields leave the matching figures empty instead of failing.
'use strict';

(() => {
  const specd = (window.specd = window.specd || {});
  const PREFILL = new Set(['prefill', 'target prefill', 'draft prefill']);

  function threadNames(events) {
    const processes = new Map(), threads = new Map();
    for (const e of events) {
      if (e.ph !== 'M' || !e.args) continue;
      if (e.name === 'process_name') processes.set(e.pid, String(e.args.name));
      if (e.name === 'thread_name') threads.set(`${e.pid}:${e.tid}`, String(e.args.name));
    }
    return { processes, threads };
  }

  function trackKind(pid, name, processes) {
    const process = processes.get(pid);
    if (process === 'requests' || (process === undefined && pid === 2)) return 'request';
    if (name === 'scheduler') return 'scheduler';
    if (process === 'lanes' || /lane$/.test(name)) return 'lane';
    return null;  // e.g. the bench dialect's "requests" track, which holds only async spans
  }

  function newRequest(key, id) {
    return { key, id, spans: [], rounds: [], bursts: [], flows: [], done: null, ttftMs: null, interTokenMs: [] };
  }

  function slice(e) {
    return { name: e.name, ts: e.ts, dur: e.dur || 0, args: e.args || {} };
  }

  function addRequestEvent(r, e) {
    if (e.ph === 'i' || e.ph === 'I') {
      if (e.name === 'done') r.done = { ts: e.ts, args: e.args || {} };
      return;
    }
    if (e.ph !== 'X') return;
    const s = slice(e);
    if (e.name === 'round') r.rounds.push(s);
    else if (e.name === 'burst') r.bursts.push(s);
    r.spans.push(s);
  }

  // The bench dialect's async request spans: 'b'/'e' pairs with cat "request", on the
  // request's own track when the file has one, else grouped by id.
  function addAsyncSpans(events, requests) {
    const open = new Map();
    for (const e of events) {
      if ((e.ph !== 'b' && e.ph !== 'e') || e.cat !== 'request') continue;
      const track = `${e.pid}:${e.tid}`;
      const key = requests.has(track) ? track : `async:${e.id}`;
      if (e.ph === 'b') {
        open.set(`${key}|${e.name}`, e.ts);
        continue;
      }
      const start = open.get(`${key}|${e.name}`);
      if (start === undefined) continue;
      if (!requests.has(key)) requests.set(key, newRequest(key, `#${e.id}`));
      requests.get(key).spans.push({ name: e.name, ts: start, dur: e.ts - start, args: {} });
    }
  }

  function attachFlows(events, lanesByTrack, requestsByTrack) {
    const starts = new Map();
    for (const e of events) if (e.ph === 's') starts.set(`${e.cat}|${e.id}`, e);
    for (const e of events) {
      if (e.ph !== 'f') continue;
      const s = starts.get(`${e.cat}|${e.id}`);
      const request = s && requestsByTrack.get(`${s.pid}:${s.tid}`);
      const lane = lanesByTrack.get(`${e.pid}:${e.tid}`);
      if (request && lane) request.flows.push({ from: s.ts, to: e.ts, lane });
    }
  }

  // TTFT and inter-token gaps as loadgen measures them (per token after the first burst:
  // the gap between burst writes over the burst's tokens).
  function latencies(r) {
    r.spans.sort((a, b) => a.ts - b.ts);
    r.rounds.sort((a, b) => a.ts - b.ts);
    r.bursts.sort((a, b) => a.ts - b.ts);
    const writtenAt = (b) => (Number.isFinite(b.args.written_us) ? b.args.written_us : b.ts + b.dur);
    const start = r.spans.length ? r.spans[0].ts : null;
    if (r.done && Number.isFinite(r.done.args.ttft_ms)) r.ttftMs = r.done.args.ttft_ms;
    else if (r.bursts.length && start !== null) r.ttftMs = (writtenAt(r.bursts[0]) - start) / 1000;
    for (let i = 1; i < r.bursts.length; ++i) {
      const tokens = r.bursts[i].args.tokens || 1;
      const gap = (writtenAt(r.bursts[i]) - writtenAt(r.bursts[i - 1])) / 1000;
      for (let k = 0; k < tokens; ++k) r.interTokenMs.push(gap / tokens);
    }
    r.start = start;
    const ends = r.spans.map((s) => s.ts + s.dur).concat(r.bursts.map(writtenAt), r.done ? [r.done.ts] : []);
    r.end = ends.length ? Math.max(...ends) : start;
  }

  function laneOrder(a, b) {
    const rank = (l) => (l.kind === 'scheduler' ? 2 : /target/.test(l.name) ? 0 : 1);
    return rank(a) - rank(b) || a.name.localeCompare(b.name);
  }

  function parseTrace(trace) {
    const events = Array.isArray(trace) ? trace : trace && trace.traceEvents;
    if (!Array.isArray(events)) throw new Error('not a Chrome trace: no traceEvents array');
    const { processes, threads } = threadNames(events);
    const lanesByTrack = new Map(), requestsByTrack = new Map(), requests = new Map();
    for (const e of events) {
      if (e.ph === 'M' || typeof e.ts !== 'number') continue;
      const track = `${e.pid}:${e.tid}`;
      const name = threads.get(track) || `tid ${e.tid}`;
      const kind = trackKind(e.pid, name, processes);
      if (kind === 'request') {
        if (!requestsByTrack.has(track)) requestsByTrack.set(track, newRequest(track, name));
        addRequestEvent(requestsByTrack.get(track), e);
      } else if (kind && e.ph === 'X') {
        if (!lanesByTrack.has(track)) lanesByTrack.set(track, { key: track, name, kind, slices: [] });
        lanesByTrack.get(track).slices.push(slice(e));
      }
    }
    for (const [k, r] of requestsByTrack) requests.set(k, r);
    addAsyncSpans(events, requests);
    attachFlows(events, lanesByTrack, requestsByTrack);
    return finishModel(trace, [...lanesByTrack.values()], [...requests.values()]);
  }

  function finishModel(trace, rows, requests) {
    rows.sort(laneOrder);
    for (const l of rows) l.slices.sort((a, b) => a.ts - b.ts);
    requests.forEach(latencies);
    requests.sort((a, b) => a.start - b.start);
    const other = (trace && trace.otherData) || {};
    const times = rows.flatMap((l) => l.slices.flatMap((s) => [s.ts, s.ts + s.dur]))
      .concat(requests.flatMap((r) => [r.start, r.end]).filter((t) => t !== null));
    // A loop, not Math.max(...times): a long window holds more values than the call stack.
    const lo = times.reduce((m, t) => Math.min(m, t), Infinity), hi = times.reduce((m, t) => Math.max(m, t), -Infinity);
    const end = Number.isFinite(other.now_us) ? other.now_us : times.length ? hi : 0;
    const start = Number.isFinite(other.window_seconds) ? end - other.window_seconds * 1e6 : times.length ? lo : 0;
    const hasBursts = requests.some((r) => r.bursts.length);
    return {
      lanes: rows.filter((l) => l.kind === 'lane'), scheduler: rows.filter((l) => l.kind === 'scheduler'),
      rows, requests, start, end, hasBursts,
      dataStart: times.length ? lo : start, dataEnd: times.length ? hi : end,
      dropped: Number.isFinite(other.dropped_events) ? other.dropped_events : 0,
      ttftMs: requests.map((r) => r.ttftMs).filter((v) => v !== null),
      interTokenMs: requests.flatMap((r) => r.interTokenMs),
    };
  }

  // "queued", "prefill", "round", "burst" or the span's own name (bench: "generating").
  function spanKind(name) {
    return PREFILL.has(name) ? 'prefill' : name;
  }

  specd.traceModel = { parseTrace, spanKind };
})();
