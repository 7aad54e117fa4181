// Checks a Chrome trace-event JSON object against the rules docs/trace_format.md lists:
// every event's fields and phase, X slices nested or disjoint per track, B/E balanced,
// async b/e and flow s/f matched, flows bound to a slice. Returns the problems found
// (an empty array when the trace is valid) and counts of what it saw.
const PHASES = new Set(['B', 'E', 'X', 'i', 'I', 'C', 'b', 'n', 'e', 's', 't', 'f', 'M', 'P', 'O', 'N', 'D', 'R', 'c']);
const METADATA = new Set(['process_name', 'thread_name', 'process_sort_index', 'thread_sort_index', 'process_labels']);

export function validateTrace(trace) {
  const problems = [];
  if (!trace || typeof trace !== 'object' || !Array.isArray(trace.traceEvents)) {
    return { problems: ['not an object with a traceEvents array'], counts: {} };
  }
  const counts = {};
  const tracks = new Map();  // "pid:tid" -> events
  trace.traceEvents.forEach((e, index) => {
    const where = `event ${index} (${e && e.name} ${e && e.ph})`;
    const problem = eventProblem(e);
    if (problem) return problems.push(`${where}: ${problem}`);
    counts[e.ph] = (counts[e.ph] || 0) + 1;
    const key = `${e.pid}:${e.tid}`;
    if (!tracks.has(key)) tracks.set(key, []);
    tracks.get(key).push({ ...e, index });
  });
  for (const [key, events] of tracks) problems.push(...trackProblems(key, events));
  problems.push(...pairProblems(trace.traceEvents, 'b', 'e', (e) => `${e.cat}|${e.id}|${e.name}`));
  problems.push(...pairProblems(trace.traceEvents, 's', 'f', (e) => `${e.cat}|${e.id}`));
  problems.push(...flowBindingProblems(tracks));
  return { problems, counts };
}

function eventProblem(e) {
  if (!e || typeof e !== 'object') return 'not an object';
  if (typeof e.name !== 'string') return 'no string name';
  if (!PHASES.has(e.ph)) return `unknown phase ${JSON.stringify(e.ph)}`;
  if (!Number.isInteger(e.pid)) return 'pid is not an integer';
  if (e.ph === 'M') {
    if (!METADATA.has(e.name)) return `unknown metadata ${e.name}`;
    if (!e.args || typeof e.args !== 'object') return 'metadata without args';
    if (e.name === 'thread_name' && !Number.isInteger(e.tid)) return 'thread_name without an integer tid';
    return null;
  }
  if (!Number.isInteger(e.tid)) return 'tid is not an integer';
  if (typeof e.ts !== 'number' || !Number.isFinite(e.ts)) return 'no numeric ts';
  if (e.ph === 'X' && !(typeof e.dur === 'number' && e.dur >= 0)) return 'X without dur >= 0';
  if ((e.ph === 'i' || e.ph === 'I') && e.s !== undefined && !['g', 'p', 't'].includes(e.s)) return `bad scope ${e.s}`;
  if ('bestf'.includes(e.ph) && e.id === undefined) return `${e.ph} without an id`;
  if ('bestf'.includes(e.ph) && typeof e.cat !== 'string') return `${e.ph} without a cat`;
  if (e.args !== undefined && (typeof e.args !== 'object' || e.args === null)) return 'args is not an object';
  return null;
}

// X slices nest or are disjoint; B/E balance.
function trackProblems(key, events) {
  const problems = [];
  const slices = events.filter((e) => e.ph === 'X').sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const open = [];
  for (const s of slices) {
    while (open.length && open[open.length - 1].ts + open[open.length - 1].dur <= s.ts) open.pop();
    const parent = open[open.length - 1];
    if (parent && s.ts + s.dur > parent.ts + parent.dur + 1e-3) {
      problems.push(`track ${key}: "${s.name}" at ${s.ts} overlaps "${parent.name}" at ${parent.ts} partly`);
    }
    open.push(s);
  }
  let depth = 0;
  for (const e of events.filter((x) => x.ph === 'B' || x.ph === 'E').sort((a, b) => a.ts - b.ts)) {
    depth += e.ph === 'B' ? 1 : -1;
    if (depth < 0) {
      problems.push(`track ${key}: E at ${e.ts} without a B`);
      depth = 0;
    }
  }
  if (depth > 0) problems.push(`track ${key}: ${depth} B without an E`);
  return problems;
}

// Each `begin` has exactly one `end` with the same key, not earlier.
function pairProblems(events, begin, end, keyOf) {
  const problems = [];
  const begins = new Map();
  for (const e of events.filter((x) => x && x.ph === begin)) {
    const key = keyOf(e);
    if (begins.has(key)) problems.push(`${begin} ${key} appears twice before its ${end}`);
    begins.set(key, e);
  }
  const ended = new Set();
  for (const e of events.filter((x) => x && x.ph === end)) {
    const key = keyOf(e);
    const b = begins.get(key);
    if (!b || ended.has(key)) {
      problems.push(`${end} ${key} at ${e.ts} has no ${begin}`);
      continue;
    }
    if (e.ts < b.ts) problems.push(`${end} ${key} at ${e.ts} comes before its ${begin} at ${b.ts}`);
    ended.add(key);
  }
  for (const key of begins.keys()) if (!ended.has(key)) problems.push(`${begin} ${key} has no ${end}`);
  return problems;
}

// A flow event binds to the X slice of its own track that encloses its ts.
function flowBindingProblems(tracks) {
  const problems = [];
  for (const [key, events] of tracks) {
    const slices = events.filter((e) => e.ph === 'X');
    for (const f of events.filter((e) => e.ph === 's' || e.ph === 'f')) {
      const inside = slices.some((s) => s.ts <= f.ts && f.ts <= s.ts + s.dur);
      if (!inside) problems.push(`track ${key}: flow ${f.ph} ${f.cat}|${f.id} at ${f.ts} is inside no slice`);
    }
  }
  return problems;
}
