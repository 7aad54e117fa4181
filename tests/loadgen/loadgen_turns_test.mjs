// loadgen --turns against `specd serve` on loopback (tests/support/with_server.sh sets
// SPECD_PORT): two clients each hold a three-turn conversation; the JSON report must
// have three turns with no errors and prompts that grow turn by turn. Without --chat the
// conversation is one plain prompt, so each turn's prompt tokens are checked exactly
// against `specd generate` replaying the same greedy conversation. With --report the
// page is rendered in Chromium and its per-turn table and TTFT chart are checked.
//
//   node loadgen_turns_test.mjs --specd build/specd --loadgen build/loadgen --transport ws|sse
//        [--chat 1] [--report build/loadgen_turns.html --screenshot build/loadgen_turns.png]
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { specdGenerate, parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const port = process.env.SPECD_PORT;
if (!args.specd || !args.loadgen || !args.transport || !port) throw new Error('needs --specd, --loadgen, --transport, SPECD_PORT');

const chat = args.chat === '1';
const prompt = 'ROMEO:';
const turnPrompt = 'Speak again.';
const maxTokens = 16;
const clients = 2;
const turns = 3;
const command = ['--port', port, '--transport', args.transport, '--turns', String(turns), '--clients', String(clients),
  '--prompt', prompt, '--turn-prompt', turnPrompt, '--max-tokens', String(maxTokens), '--temperature', '0', '--k', '4',
  '--timeout', '120'];
if (chat) command.push('--chat');
if (args.report) command.push('--report', args.report);
console.log(`loadgen ${command.join(' ')}`);
const out = execFileSync(args.loadgen, command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
console.log(out.trim());
const report = JSON.parse(out);

assertEqual([report.turns, report.requests_per_client, report.turn_prompt], [turns, turns, turnPrompt], 'settings');
const level = report.levels[0];
assertEqual([level.requests, level.streams, level.errors], [clients * turns, clients * turns, 0], 'requests, streams, errors');
assertEqual(level.turns.map((t) => t.turn), [1, 2, 3], 'one entry per turn');
for (const t of level.turns) {
  assertEqual([t.requests, t.streams, t.errors, t.ttft_ms.count], [clients, clients, 0, clients], `turn ${t.turn}: every client's request`);
  assertTrue(t.ttft_ms.p50 > 0 && t.ttft_ms.p50 <= t.ttft_ms.p90 && t.ttft_ms.p90 <= t.ttft_ms.max,
    `turn ${t.turn}: TTFT p50 ${t.ttft_ms.p50} <= p90 ${t.ttft_ms.p90} <= max ${t.ttft_ms.max}`);
  assertTrue(t.mean_cached_tokens !== null && t.mean_cached_tokens >= 0 && t.mean_cached_tokens <= t.mean_prompt_tokens,
    `turn ${t.turn}: ${t.mean_cached_tokens} cached of ${t.mean_prompt_tokens} prompt tokens`);
}
const prompts = level.turns.map((t) => t.mean_prompt_tokens);
assertTrue(prompts[0] < prompts[1] && prompts[1] < prompts[2], `the prompt grows turn by turn: ${prompts}`);

if (!chat) {
  // The same conversation, greedy, replayed turn by turn: both clients sent exactly these prompts.
  let transcript = '';
  const expected = [];
  for (let turn = 1; turn <= turns; ++turn) {
    transcript += `USER:\n${turn === 1 ? prompt : turnPrompt}\nASSISTANT:\n`;
    const r = specdGenerate(args.specd, { prompt: transcript, maxTokens, extra: ['--k', '4'] });
    expected.push(r.prompt_tokens);
    transcript += `${r.text}\n`;
  }
  assertEqual(prompts, expected, 'prompt tokens per turn = specd generate on the same conversation');
}

if (args.report) {
  const { Chromium } = await import('../web/chromium.mjs');
  const browser = await Chromium.launch({ width: 1300, height: 1200 });
  const page = browser.page;
  const pageErrors = [];
  try {
    page.on('Runtime.exceptionThrown', (e) => pageErrors.push(e.exceptionDetails.exception?.description || e.exceptionDetails.text));
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    await page.send('Emulation.setDeviceMetricsOverride', { width: 1300, height: 1200, deviceScaleFactor: 1, mobile: false });
    await page.navigate(pathToFileURL(args.report).href);
    await page.waitFor(`document.body.dataset.rendered === 'yes'`, 15000, 'the report to render');
    const seen = await page.evaluate(`(() => ({
      hidden: document.getElementById('turns').hidden,
      rows: [...document.querySelectorAll('#turn-table tr')].map((r) => [...r.children].map((c) => c.textContent)),
      charts: document.querySelectorAll('#turn-ttft .uplot canvas').length,
      title: document.querySelector('#turn-ttft .u-title')?.textContent,
      legend: [...document.querySelectorAll('#turn-ttft .u-legend .u-series .u-label')].map((e) => e.textContent) }))()`);
    assertEqual(seen.hidden, false, 'the turns panel is shown');
    assertEqual(seen.rows.length, 1 + turns, 'the turn table: a header and a row per turn');
    assertEqual(seen.rows.slice(1).map((r) => r.slice(0, 4)), level.turns.map((t) => [String(clients), String(t.turn), String(t.requests), '0']),
      'the turn table\'s clients, turn, requests and errors');
    assertEqual(seen.rows.slice(1).map((r) => r[8]), prompts.map((p) => p.toFixed(1)), 'the turn table\'s prompt tokens');
    assertEqual([seen.charts, seen.title], [1, 'Time to first token per turn'], 'one TTFT-per-turn chart');
    assertEqual(seen.legend, ['turn', `${clients} clients p50`, `${clients} clients p90`], 'its lines: p50 and p90');
    const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
    writeFileSync(args.screenshot, Buffer.from(shot.data, 'base64'));
    console.log(`screenshot: ${args.screenshot}`);
    assertEqual(pageErrors, [], 'no uncaught exceptions in the page');
  } finally {
    await browser.close();
  }
}
console.log('loadgen turns test passed');
