// Validates Chrome trace-event JSON files against docs/trace_format.md's rules
// (trace_events.mjs). Prints the event counts per phase, or the problems and exits 1.
//
//   node tests/support/validate_trace.mjs FILE... [--expect-phases X,s,f]
// --expect-phases: each listed phase must occur at least once (a trace without them
// would pass the pairing checks vacuously).
import { readFileSync } from 'node:fs';
import { validateTrace } from './trace_events.mjs';

const files = [];
let expected = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  if (argv[i] === '--expect-phases') expected = argv[++i].split(',');
  else files.push(argv[i]);
}
if (files.length === 0) throw new Error('usage: validate_trace.mjs FILE... [--expect-phases X,s,f]');

let failed = false;
for (const file of files) {
  const { problems, counts } = validateTrace(JSON.parse(readFileSync(file, 'utf8')));
  for (const ph of expected) if (!counts[ph]) problems.push(`no event of phase ${ph}`);
  if (problems.length) {
    failed = true;
    console.log(`${file}: ${problems.length} problems`);
    for (const p of problems.slice(0, 20)) console.log(`  ${p}`);
  } else {
    console.log(`${file}: valid trace, events by phase ${JSON.stringify(counts)}`);
  }
}
process.exit(failed ? 1 : 0);
