// Runs tools/loadgen against `specd serve` on loopback (tests/support/with_server.sh sets
// SPECD_PORT) and checks its JSON report against what the requests must produce: every
// stream is the greedy output of `specd generate` for the same prompt, so the token and
// speculation totals are exact multiples of one `specd generate --json` run.
//
//   node loadgen_test.mjs --specd build/specd --loadgen build/loadgen --transport ws|sse
//        [--requests R] [--ramp 2,8 --overloaded-from 8 --capacity 4] [--ignore-eos 1]
// --ignore-eos 1: loadgen --ignore-eos; the prompt, which alone ends on EOS before
// max_tokens, must then produce exactly max_tokens tokens per stream.
// --overloaded-from N --capacity C: the server (tests/loadgen/small_server.toml) holds at
// most C requests (KV slots plus waiting places), so a level of N > C simultaneous
// clients must serve at most C and refuse the rest with `overloaded`, and the sustained
// concurrency is the peak of the last level below N.
import { execFileSync } from 'node:child_process';
import { specdGenerate, parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const port = process.env.SPECD_PORT;
if (!args.specd || !args.loadgen || !args.transport || !port) throw new Error('needs --specd, --loadgen, --transport, SPECD_PORT');

const prompt = 'ROMEO:';
const maxTokens = 16;
const requests = Number(args.requests || 2);
const overloadedFrom = Number(args['overloaded-from'] || Infinity);
const capacity = Number(args.capacity || Infinity);
const ignoreEos = args['ignore-eos'] === '1';
const expected = specdGenerate(args.specd, { prompt, maxTokens, extra: ['--k', '4', ...(ignoreEos ? ['--ignore-eos'] : [])] });
if (ignoreEos) {
  const plain = specdGenerate(args.specd, { prompt, maxTokens, extra: ['--k', '4'] });
  assertTrue(plain.finish_reason === 'stop' && plain.token_ids.length < maxTokens,
    `without ignore_eos the prompt ends on EOS after ${plain.token_ids.length} < ${maxTokens} tokens`);
  assertEqual(expected.token_ids.length, maxTokens, 'specd generate --ignore-eos makes max_tokens tokens');
}
const levels = args.ramp ? args.ramp.split(',').map(Number) : [3];

const command = ['--port', port, '--transport', args.transport, '--requests', String(requests), '--prompt', prompt,
  '--max-tokens', String(maxTokens), '--temperature', '0', '--k', '4', '--timeout', '120'];
command.push(...(args.ramp ? ['--ramp', args.ramp] : ['--clients', String(levels[0])]));
if (ignoreEos) command.push('--ignore-eos');
const token = process.env.SPECD_TOKEN;
if (token) {
  // A server with a bearer token: without it every request is refused at the handshake
  // (WebSocket: HTTP 401) or with the OpenAI error `unauthorized` (SSE); loadgen exits 1.
  let refused;
  try {
    execFileSync(args.loadgen, command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) {
    refused = JSON.parse(e.stdout);
    assertEqual(e.status, 1, 'loadgen without the token exits 1');
  }
  const code = args.transport === 'ws' ? 'http_401' : 'unauthorized';
  assertEqual(refused.levels[0].errors_by_code, { [code]: levels[0] * requests }, 'every request refused without the token');
  command.push('--token', token);
}
console.log(`loadgen ${command.join(' ')}`);
const out = execFileSync(args.loadgen, command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
console.log(out.trim());
const report = JSON.parse(out);

assertEqual(report.transport, args.transport, 'transport');
assertEqual(report.levels.map((l) => l.clients), levels, 'levels run');
const tokens = expected.token_ids.length;
let lastClean = null;
for (const level of report.levels) {
  const where = `${level.clients} clients`;
  assertEqual(level.requests, level.clients * requests, `${where}: requests sent`);
  if (level.clients >= overloadedFrom) {
    assertTrue(level.streams <= capacity && level.errors >= level.requests - capacity,
      `${where}: ${level.streams} served (capacity ${capacity}), ${level.errors} refused`);
    assertEqual(Object.keys(level.errors_by_code), ['overloaded'], `${where}: error codes`);
    assertEqual(level.streams + level.errors, level.requests, `${where}: every request completed or refused`);
  } else {
    assertEqual(level.errors, 0, `${where}: errors`);
    assertEqual(level.streams, level.requests, `${where}: streams completed`);
    lastClean = level;
  }
  const n = level.streams;
  assertEqual(level.finish_reasons, { [expected.finish_reason]: n }, `${where}: finish reasons`);
  assertEqual(level.tokens, n * tokens, `${where}: tokens = streams x specd generate's ${tokens}`);
  if (ignoreEos) assertEqual(level.tokens, n * maxTokens, `${where}: tokens = streams x max_tokens`);
  assertEqual(level.ttft_ms.count, n, `${where}: one time to first token per stream`);
  assertTrue(level.ttft_ms.p50 > 0 && level.ttft_ms.p50 <= level.ttft_ms.p99, `${where}: ttft p50 ${level.ttft_ms.p50} <= p99 ${level.ttft_ms.p99}`);
  assertTrue(Math.abs(level.tokens_per_second - level.tokens / level.seconds) <= 0.01 * level.tokens_per_second + 0.01,
    `${where}: tokens/s ${level.tokens_per_second} = tokens / seconds`);
  // Streamed, not delivered at the end: rounds take milliseconds each on this model pair.
  assertTrue(level.ttft_ms.p50 < level.request_ms.p50 && level.inter_burst_ms.p50 > 1,
    `${where}: tokens arrive while the request runs (ttft p50 ${level.ttft_ms.p50} ms, request p50 ` +
    `${level.request_ms.p50} ms, inter-burst p50 ${level.inter_burst_ms.p50} ms)`);
  assertTrue(level.peak_in_flight >= 1 && level.peak_in_flight <= level.clients, `${where}: peak in flight ${level.peak_in_flight}`);
  if (args.transport === 'ws') {
    // Greedy rounds are deterministic per request: the same drafts and acceptances as alone.
    assertEqual(level.drafted, n * expected.spec.drafted, `${where}: drafted = streams x specd generate's`);
    assertEqual(level.accepted, n * expected.spec.accepted, `${where}: accepted = streams x specd generate's`);
    // One inter-token sample per token after each stream's first burst of 1..K+1 tokens.
    const itl = level.inter_token_ms.count;
    assertTrue(itl <= level.tokens - n && itl >= level.tokens - n * 5,
      `${where}: ${itl} inter-token samples for ${level.tokens} tokens in ${n} streams`);
  }
}
assertEqual(report.max_concurrent_streams_without_errors, lastClean.peak_in_flight,
  'sustained concurrency = peak of the last level without errors');
if (Number.isFinite(overloadedFrom)) {
  assertEqual(lastClean.peak_in_flight, lastClean.clients, 'the last clean level had all its clients in flight at once');
}
console.log('loadgen test passed');

