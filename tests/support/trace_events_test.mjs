// The trace-event validator (trace_events.mjs) accepts the fixture of trace_fixture.mjs
// and reports each kind of broken trace it exists to catch.
//
//   node tests/support/trace_events_test.mjs
import { assertEqual, assertTrue } from './expected.mjs';
import { traceFixture } from './trace_fixture.mjs';
import { validateTrace } from './trace_events.mjs';

const { trace } = traceFixture();
const valid = validateTrace(trace);
assertEqual(valid.problems, [], 'the fixture is valid');
assertEqual(valid.counts, { M: 24, X: 506, s: 280, f: 280, i: 20 }, 'the fixture\'s events by phase');

// Each case breaks a copy of the fixture and names the problem the validator must report.
const cases = [
  ['an unknown phase', (t) => { t.traceEvents[10].ph = 'Q'; }, /unknown phase "Q"/],
  ['X without dur', (t) => { delete t.traceEvents.find((e) => e.ph === 'X').dur; }, /X without dur/],
  ['a flow without its end', (t) => { t.traceEvents.splice(t.traceEvents.findIndex((e) => e.ph === 'f'), 1); }, /s round\|1 has no f/],
  ['a flow end before its start', (t) => {
    const f = t.traceEvents.find((e) => e.ph === 'f' && e.id === 2);
    f.ts -= 1e6;
  }, /f round\|2 at .* comes before its s/],
  ['a flow inside no slice', (t) => { t.traceEvents.find((e) => e.ph === 's').ts = 1; }, /flow s round\|1 at 1 is inside no slice/],
  ['slices overlapping partly', (t) => {
    const q = t.traceEvents.find((e) => e.name === 'queued' && e.dur > 0);
    q.dur += 1000;
  }, /overlaps .* partly/],
  ['an async end without a begin', (t) => {
    t.traceEvents.push({ name: 'queued', ph: 'e', cat: 'request', id: 7, pid: 1, tid: 9, ts: 5 });
  }, /e request\|7\|queued at 5 has no b/],
  ['not a trace', (t) => { delete t.traceEvents; }, /not an object with a traceEvents array/],
];
for (const [what, breakIt, expected] of cases) {
  const broken = structuredClone(trace);
  breakIt(broken);
  const { problems } = validateTrace(broken);
  assertTrue(problems.some((p) => expected.test(p)), `${what}: reported (${problems[0]})`);
}
console.log('trace events test passed');
