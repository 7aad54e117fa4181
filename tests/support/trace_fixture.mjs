// A synthetic server trace that follows docs/trace_format.md: two lanes, 20 requests
// served four at a time, each with queue, target and draft prefill, rounds (with flows to
// the draft and verify jobs that served them), bursts and done. Deterministic (a fixed
// seed), so tests know every count and latency in it.
//
//   node tests/support/trace_fixture.mjs OUT.json     writes the trace
//   import { traceFixture } from './trace_fixture.mjs' returns { trace, expected }
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const TARGET = 1, DRAFT = 2;  // lane tids

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

class Builder {
  constructor() {
    this.events = [];
    this.nextFlow = 1;
  }
  meta(name, pid, tid, value) {
    const e = { name, ph: 'M', pid, args: { name: value } };
    if (tid !== null) e.tid = tid;
    this.events.push(e);
  }
  slice(name, pid, tid, ts, dur, args) {
    this.events.push({ name, ph: 'X', pid, tid, ts, dur, ...(args ? { args } : {}) });
  }
  flow(requestTid, roundStart, laneTid, laneStart) {
    const id = this.nextFlow++;
    this.events.push({ name: 'round', ph: 's', cat: 'round', id, pid: 2, tid: requestTid, ts: roundStart });
    this.events.push({ name: 'round', ph: 'f', bp: 'e', cat: 'round', id, pid: 1, tid: laneTid, ts: laneStart });
  }
}

function makeRequests(random, count) {
  const requests = [];
  let arrival = 5_000_000;
  for (let i = 0; i < count; ++i) {
    arrival += Math.round(2000 + random() * 9000);
    requests.push({ id: `req-${String(i + 1).padStart(2, '0')}`, tid: i + 1, arrival, maxTokens: 12 + Math.floor(random() * 12),
      rounds: [], bursts: [], tokens: 0 });
  }
  return requests;
}

function admit(b, newcomers, t) {
  for (const r of newcomers) {
    b.slice('queued', 2, r.tid, r.arrival, t - r.arrival);
    r.admitted = t;
  }
  for (const r of newcomers) {  // target prefills, then draft prefills: disjoint per request
    b.slice('target prefill', 1, TARGET, t, 900, { rows: 1, tokens: 6 });
    b.slice('target prefill', 2, r.tid, t, 900);
    t += 900;
  }
  for (const r of newcomers) {
    b.slice('draft prefill', 1, DRAFT, t, 150, { rows: 1, tokens: 6 });
    b.slice('draft prefill', 2, r.tid, t, 150);
    t += 150;
  }
  return t;
}

function round(b, random, active, t) {
  const plans = active.map((r) => {
    const kPlanned = 2 + Math.floor(random() * 4);
    const left = r.maxTokens - r.tokens;
    const drafted = Math.min(kPlanned, left - 1);
    const accepted = Math.floor(random() * (drafted + 1));
    return { r, kPlanned, drafted, accepted, tokens: Math.min(accepted + 1, left) };
  });
  const draftDur = 120 * Math.max(...plans.map((p) => p.drafted), 1);
  const verifyDur = 700 + 150 * active.length;
  const draftTokens = plans.reduce((n, p) => n + p.drafted, 0);
  b.slice('draft', 1, DRAFT, t, draftDur, { rows: active.length, tokens: draftTokens });
  b.slice('verify', 1, TARGET, t + draftDur, verifyDur, { rows: active.length, tokens: draftTokens + active.length });
  const end = t + draftDur + verifyDur + 40;
  let handed = end + 10;
  for (const p of plans) {
    const args = { k_planned: p.kPlanned, drafted: p.drafted, accepted: p.accepted, tokens: p.tokens };
    b.slice('round', 2, p.r.tid, t, end - t, args);
    b.flow(p.r.tid, t, DRAFT, t);
    b.flow(p.r.tid, t, TARGET, t + draftDur);
    const written = handed + 25 + 180;  // the write ends after the next round began
    b.slice('burst', 2, p.r.tid, handed, 25, { tokens: p.tokens, written_us: written });
    p.r.rounds.push(args);
    p.r.bursts.push({ tokens: p.tokens, written });
    p.r.tokens += p.tokens;
    handed += 30;
  }
  return handed + 20;
}

function finish(b, r) {
  const first = r.bursts[0].written;
  const last = r.bursts[r.bursts.length - 1].written;
  r.ttftMs = (first - r.arrival) / 1000;
  r.end = last;
  b.events.push({ name: 'done', ph: 'i', s: 't', pid: 2, tid: r.tid, ts: last,
    args: { finish_reason: 'length', completion_tokens: r.tokens, ttft_ms: r.ttftMs } });
}

export function traceFixture({ seed = 16, requests: count = 20, slots = 4 } = {}) {
  const random = rng(seed);
  const b = new Builder();
  b.meta('process_name', 1, null, 'lanes');
  b.meta('thread_name', 1, TARGET, 'target lane');
  b.meta('thread_name', 1, DRAFT, 'draft lane');
  b.meta('process_name', 2, null, 'requests');
  const requests = makeRequests(random, count);
  for (const r of requests) b.meta('thread_name', 2, r.tid, r.id);
  const waiting = [...requests];
  let active = [];
  let t = waiting[0].arrival;
  while (waiting.length || active.length) {
    const newcomers = [];
    while (waiting.length && waiting[0].arrival <= t && active.length + newcomers.length < slots) newcomers.push(waiting.shift());
    if (newcomers.length) t = admit(b, newcomers, t);
    active.push(...newcomers);
    if (!active.length) {
      t = waiting[0].arrival;
      continue;
    }
    t = round(b, random, active, t);
    for (const r of active.filter((x) => x.tokens >= x.maxTokens)) finish(b, r);
    active = active.filter((x) => x.tokens < x.maxTokens);
  }
  const nowUs = Math.max(...requests.map((r) => r.end)) + 1000;
  const windowSeconds = Math.ceil((nowUs - requests[0].arrival) / 1e6);
  const trace = { traceEvents: b.events, displayTimeUnit: 'ms',
    otherData: { window_seconds: windowSeconds, now_us: nowUs, dropped_events: 0, generator: 'tests/support/trace_fixture.mjs' } };
  return { trace, expected: expectedOf(requests) };
}

function expectedOf(requests) {
  return {
    lanes: 2,
    requests: requests.map((r) => ({ id: r.id, rounds: r.rounds, bursts: r.bursts.length, tokens: r.tokens,
      ttftMs: r.ttftMs, interTokenMs: interTokenMs(r) })),
  };
}

// As loadgen counts it: per token after the first burst, the burst's gap over its tokens.
function interTokenMs(r) {
  const out = [];
  for (let i = 1; i < r.bursts.length; ++i) {
    const gap = (r.bursts[i].written - r.bursts[i - 1].written) / 1000;
    for (let k = 0; k < r.bursts[i].tokens; ++k) out.push(gap / r.bursts[i].tokens);
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.length !== 3) throw new Error('usage: trace_fixture.mjs OUT.json');
  writeFileSync(process.argv[2], JSON.stringify(traceFixture().trace));
  console.log(`wrote ${process.argv[2]}`);
}
