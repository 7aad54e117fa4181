// The trace viewer (tools/web/trace.html at /trace) in headless Chromium against
// `specd serve` on loopback (tests/support/with_server.sh sets SPECD_BASE_URL):
// 1. the synthetic trace of tests/support/trace_fixture.mjs (valid by trace_events.mjs),
//    loaded with ?src=: lane and request counts, the window's latency percentiles, a
//    round's hover card, a clicked request's waterfall rows; saves a screenshot;
// 2. live mode after some traffic: the page shows the lanes /v1/trace has, and a clicked
//    request's waterfall has its queue, prefill, rounds and bursts; saves a screenshot; and
//    with /v1/trace answered by the fixture (DevTools' Fetch domain): the page polls with
//    ?seconds= and its own ?access_token= as the bearer token, and draws what it gets;
// 3. a real `specd bench --concurrency 1,4 --trace FILE` file, valid and opened through
//    the file picker: its lanes, its requests and a request's queued/generating spans.
//
//   node trace_viewer_test.mjs --specd build/specd --screenshot build/trace_viewer.png
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Chromium } from './chromium.mjs';
import { parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';
import { traceFixture } from '../support/trace_fixture.mjs';
import { validateTrace } from '../support/trace_events.mjs';

const args = parseArgs(process.argv.slice(2));
const base = process.env.SPECD_BASE_URL;
if (!args.specd || !args.screenshot || !base) throw new Error('needs --specd, --screenshot and SPECD_BASE_URL');

const { trace, expected } = traceFixture();
assertEqual(validateTrace(trace).problems, [], 'the fixture is a valid trace');
const fixtureServer = await serveJson(trace);
const browser = await Chromium.launch({ width: 1400, height: 1000 });
const page = browser.page;
const pageErrors = [];
const work = mkdtempSync(join(tmpdir(), 'specd-trace-'));
try {
  page.on('Runtime.exceptionThrown', (e) => pageErrors.push(e.exceptionDetails.exception?.description || e.exceptionDetails.text));
  await page.send('Page.enable');
  await page.send('Runtime.enable');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false });
  await checkFixture();
  await checkLive();
  await checkLivePolling();
  await checkBenchFile();
  assertEqual(pageErrors, [], 'no uncaught exceptions in the page');
} finally {
  await browser.close();
  fixtureServer.close();
  rmSync(work, { recursive: true, force: true });
}
console.log('trace viewer test passed');

// A cross-origin JSON file for ?src=, as a user's own web server would hand it out.
function serveJson(body) {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Access-Control-Allow-Origin': '*' });
    res.end(JSON.stringify(body));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function nearestRank(samples, q) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
}

async function checkFixture() {
  const src = `http://127.0.0.1:${fixtureServer.address().port}/fixture.json`;
  await page.navigate(`${base}/trace?src=${encodeURIComponent(src)}`);
  await page.waitFor(`document.body.dataset.state === 'loaded'`, 15000, 'the fixture to load');
  const counts = await page.evaluate(`(() => { const rows = specdTraceViewer.timeline.rows;
    return { lanes: Number(document.getElementById('summary').dataset.lanes),
      requests: Number(document.getElementById('summary').dataset.requests),
      laneRows: rows.filter((r) => r.type === 'lane').map((r) => r.label),
      requestRows: rows.filter((r) => r.type === 'request').length }; })()`);
  assertEqual(counts.lanes, expected.lanes, 'lanes in the summary');
  assertEqual(counts.laneRows, ['target lane', 'draft lane'], 'lane rows drawn');
  assertEqual(counts.requests, expected.requests.length, 'requests in the summary');
  assertEqual(counts.requestRows, expected.requests.length, 'request rows drawn');

  const ttft = expected.requests.map((r) => r.ttftMs);
  const itl = expected.requests.flatMap((r) => r.interTokenMs);
  const shown = await page.evaluate(`Object.fromEntries(['ttft-p50', 'ttft-p99', 'itl-p50', 'itl-p90', 'itl-count']
    .map((id) => [id, document.getElementById(id).dataset.value ?? document.getElementById(id).textContent]))`);
  assertEqual(Number(shown['ttft-p50']), nearestRank(ttft, 0.5), 'TTFT p50 of the window');
  assertEqual(Number(shown['ttft-p99']), nearestRank(ttft, 0.99), 'TTFT p99 of the window');
  assertTrue(Math.abs(Number(shown['itl-p50']) - nearestRank(itl, 0.5)) < 1e-9, `inter-token p50 ${shown['itl-p50']}`);
  assertTrue(Math.abs(Number(shown['itl-p90']) - nearestRank(itl, 0.9)) < 1e-9, `inter-token p90 ${shown['itl-p90']}`);
  assertEqual(Number(shown['itl-count']), itl.length, 'inter-token samples');
  assertEqual(await page.evaluate(`document.querySelectorAll('.cdfs canvas').length > 0`), true, 'CDF charts drawn');

  // The request with the most rounds: hover its third round, then click it.
  const request = expected.requests.reduce((a, b) => (b.rounds.length > a.rounds.length ? b : a));
  const point = await page.evaluate(`specdTraceViewer.timeline.pointOf(${JSON.stringify(request.id)}, 'round', 2)`);
  await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: point.x, y: point.y });
  const card = await page.evaluate(`(() => { const t = document.getElementById('tooltip');
    return { hidden: t.hidden, kind: t.dataset.kind, args: JSON.parse(t.dataset.args || '{}'), text: t.textContent }; })()`);
  assertEqual(card.hidden, false, 'hovering a round shows its card');
  assertEqual(card.kind, 'round', 'the card is the round\'s');
  assertEqual(card.args, request.rounds[2], `${request.id} round 3: K planned, drafted, accepted, tokens`);
  const r3 = request.rounds[2];
  assertTrue(card.text.includes(`K planned${r3.k_planned}drafted${r3.drafted}accepted${r3.accepted}`), `card text: ${card.text}`);

  for (const type of ['mousePressed', 'mouseReleased']) {
    await page.send('Input.dispatchMouseEvent', { type, x: point.x, y: point.y, button: 'left', clickCount: 1 });
  }
  await page.waitFor(`document.querySelector('.waterfall')?.dataset.request === ${JSON.stringify(request.id)}`, 5000, 'the waterfall');
  const waterfall = await page.evaluate(`(() => { const rows = [...document.querySelectorAll('.waterfall .wf-row')];
    const kinds = {}; for (const r of rows) kinds[r.dataset.kind] = (kinds[r.dataset.kind] || 0) + 1;
    return { kinds, order: rows.map((r) => r.dataset.kind),
      roundNotes: rows.filter((r) => r.dataset.kind === 'round').map((r) => r.querySelector('.wf-note').textContent) }; })()`);
  const n = request.rounds.length;
  assertEqual(waterfall.kinds, { queued: 1, prefill: 2, round: n, burst: n }, `${request.id} waterfall rows: queue, 2 prefills, ${n} rounds, ${n} bursts`);
  assertEqual(waterfall.order.slice(0, 5), ['queued', 'prefill', 'prefill', 'round', 'burst'], 'waterfall rows in time order');
  assertEqual(waterfall.roundNotes, request.rounds.map((r) => `K planned ${r.k_planned} · drafted ${r.drafted} · accepted ${r.accepted} · tokens ${r.tokens}`),
    'every round row with its counts');
  await checkZoomAndPan(point, request.id);
  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  writeScreenshot(args.screenshot, shot);
}

// The wheel zooms around the pointer, a drag pans without selecting, Fit restores the view.
async function checkZoomAndPan(point, selectedId) {
  const view = () => page.evaluate(`[...specdTraceViewer.timeline.view, specdTraceViewer.timeline.plotWidth]`);
  const [a0, a1, plotWidth] = await view();
  await page.send('Input.dispatchMouseEvent', { type: 'mouseWheel', x: point.x, y: point.y, deltaX: 0, deltaY: -400 });
  const [b0, b1] = await page.waitFor(`(() => { const v = specdTraceViewer.timeline.view; return v[1] - v[0] < ${a1 - a0} && v; })()`,
    5000, 'the wheel to zoom');
  assertTrue(Math.abs((b1 - b0) / (a1 - a0) - Math.exp(-1)) < 1e-6, `wheel zoomed in by e: ${((a1 - a0) / (b1 - b0)).toFixed(4)}`);
  const drag = [['mousePressed', point.x], ['mouseMoved', point.x + 50], ['mouseMoved', point.x + 100], ['mouseReleased', point.x + 100]];
  for (const [type, x] of drag) {
    await page.send('Input.dispatchMouseEvent', { type, x, y: point.y + 40, button: 'left', buttons: type === 'mouseReleased' ? 0 : 1, clickCount: 1 });
  }
  const [c0, c1] = await view();
  const shift = (100 / plotWidth) * (b1 - b0);
  assertTrue(Math.abs(b0 - c0 - shift) < 1e-6 && Math.abs(c1 - c0 - (b1 - b0)) < 1e-6, `dragging 100 px panned by ${shift.toFixed(1)} us`);
  assertEqual(await page.evaluate(`document.querySelector('.waterfall').dataset.request`), selectedId, 'a drag selects nothing');
  await page.click('#fit');
  assertEqual(await view(), [a0, a1, plotWidth], 'Fit restores the whole trace');
}

async function checkLive() {
  // Traffic first: one streamed completion (its bursts are written to the socket, so they
  // carry written_us) and one whole-body completion.
  for (const [prompt, stream] of [['ROMEO:', true], ['JULIET:', false]]) {
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'specd', prompt, max_tokens: 12, temperature: 0, stream }) });
    assertEqual(r.status, 200, `completion for ${prompt}`);
    await r.text();
  }
  const answer = await fetch(`${base}/v1/trace?seconds=60`);
  assertEqual(answer.status, 200, 'specd serve records a trace by default');
  const live = await answer.json();
  assertEqual(validateTrace(live).problems, [], 'GET /v1/trace is a valid trace');
  const lanes = live.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 1 &&
    e.args.name !== 'scheduler').length;  // the scheduler's row is not a lane
  // The streamed request: the older of the two newest request tracks (tids follow the
  // engine's request numbers).
  const names = new Map(live.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 2).map((e) => [e.tid, e.args.name]));
  const onTrack = (tid, name) => live.traceEvents.filter((e) => e.pid === 2 && e.tid === tid && e.ph === 'X' && e.name === name);
  const tids = [...names.keys()].sort((a, b) => a - b);
  assertTrue(tids.length >= 2, `both requests have tracks (${tids.length})`);
  const tid = tids[tids.length - 2];
  const rounds = onTrack(tid, 'round').length, bursts = onTrack(tid, 'burst');
  assertTrue(rounds >= 1, `${names.get(tid)} took part in rounds`);
  // SSE skips a burst without text (one holding only the end-of-sequence token).
  const written = bursts.filter((b) => b.args.written_us >= b.ts).length;
  assertTrue(written >= bursts.length - 1 && written >= 1, `the streamed request's bursts were written (${written} of ${bursts.length})`);

  await page.navigate(`${base}/trace?seconds=60`);
  await page.waitFor(`document.body.dataset.state === 'loaded'`, 15000, 'the live trace');
  assertEqual(await page.evaluate(`Number(document.getElementById('summary').dataset.lanes)`), lanes, 'live lanes');
  const id = JSON.stringify(names.get(tid));
  const point = await page.evaluate(`specdTraceViewer.timeline.pointOf(${id}, 'round', 0)`);
  for (const type of ['mousePressed', 'mouseReleased']) {
    await page.send('Input.dispatchMouseEvent', { type, x: point.x, y: point.y, button: 'left', clickCount: 1 });
  }
  await page.waitFor(`document.querySelector('.waterfall')?.dataset.request === ${id}`, 5000, 'the live waterfall');
  const waterfall = await page.evaluate(`(() => { const rows = [...document.querySelectorAll('.waterfall .wf-row')];
    const kinds = {}; for (const r of rows) kinds[r.dataset.kind] = (kinds[r.dataset.kind] || 0) + 1;
    return { kinds, order: rows.map((r) => r.dataset.kind),
      gaps: rows.filter((r) => r.dataset.kind === 'burst' && r.querySelector('.wf-note').textContent.includes('gap')).length,
      written: rows.filter((r) => r.dataset.kind === 'burst' && r.querySelector('.wf-note').textContent.includes('written after')).length }; })()`);
  // In kind order: the first burst may come before or after round 1 (docs/trace_format.md).
  const sorted = (o) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  assertEqual(sorted(waterfall.kinds), sorted({ queued: 1, prefill: 1, round: rounds, burst: bursts.length }),
    `${names.get(tid)} live waterfall: queue, prefill, ${rounds} rounds, ${bursts.length} bursts`);
  assertEqual(waterfall.order.slice(0, 2), ['queued', 'prefill'], 'live waterfall rows in time order');
  assertEqual(waterfall.gaps, bursts.length - 1, 'every burst after the first shows its gap to the one before');
  assertEqual(waterfall.written, written, 'every written burst says when it was written');
  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  writeScreenshot(args.screenshot.replace(/\.png$/, '_live.png'), shot);
}

async function checkLivePolling() {
  const polls = [];
  const body = Buffer.from(JSON.stringify(trace)).toString('base64');
  page.on('Fetch.requestPaused', (e) => {
    polls.push({ url: e.request.url, authorization: e.request.headers.Authorization });
    page.send('Fetch.fulfillRequest', { requestId: e.requestId, responseCode: 200,
      responseHeaders: [{ name: 'Content-Type', value: 'application/json' }], body });
  });
  await page.send('Fetch.enable', { patterns: [{ urlPattern: '*/v1/trace?*' }] });
  await page.navigate(`${base}/trace?access_token=viewer-token&seconds=5`);
  await page.waitFor(`document.body.dataset.state === 'loaded'`, 15000, 'the live trace');
  assertEqual(await page.evaluate(`[document.getElementById('summary').dataset.lanes, document.getElementById('summary').dataset.requests]`),
    [String(expected.lanes), String(expected.requests.length)], 'live mode draws the lanes and requests /v1/trace answered');
  await page.waitFor(`new Promise((resolve) => setTimeout(() => resolve(true), 2500))`, 5000, 'a second poll');
  assertTrue(polls.length >= 2, `live mode polls again (${polls.length} polls)`);
  assertEqual(new URL(polls[0].url).search, '?seconds=5', 'it asks for the window of ?seconds=');
  assertEqual(polls[0].authorization, 'Bearer viewer-token', 'it passes the page\'s ?access_token= on as the bearer token');
  await page.send('Fetch.disable');
}

async function checkBenchFile() {
  const file = join(work, 'bench_trace.json');
  execFileSync(args.specd, ['bench', '--concurrency', '1,4', '--requests-per-client', '1', '--max-tokens', '12',
    '--repeat', '1', '--skip-no-overlap', '--trace', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  const bench = JSON.parse(readFileSync(file, 'utf8'));
  assertEqual(validateTrace(bench).problems, [], 'the bench trace is a valid trace');
  const ids = new Set(bench.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 2).map((e) => e.tid));
  const { root } = await page.send('DOM.getDocument');
  const { nodeId } = await page.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#file' });
  await page.send('DOM.setFileInputFiles', { nodeId, files: [file] });
  await page.waitFor(`document.body.dataset.state === 'loaded' && document.getElementById('status').textContent === 'bench_trace.json'`,
    15000, 'the bench trace to load');
  const seen = await page.evaluate(`(() => { const rows = specdTraceViewer.timeline.rows;
    return { lanes: rows.filter((r) => r.type === 'lane').map((r) => r.label), scheduler: rows.filter((r) => r.type === 'scheduler').length,
      requests: rows.filter((r) => r.type === 'request').length }; })()`);
  assertEqual(seen.lanes, ['target lane', 'draft lane'], 'bench trace: lane rows');
  assertEqual(seen.scheduler, 1, 'bench trace: the scheduler row');
  assertEqual(seen.requests, ids.size, 'bench trace: one row per request');
  const first = await page.evaluate(`specdTraceViewer.model.requests[0].id`);
  const point = await page.evaluate(`specdTraceViewer.timeline.pointOf(${JSON.stringify(first)}, 'round', 0)`);
  for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased']) {
    await page.send('Input.dispatchMouseEvent', { type, x: point.x, y: point.y, button: 'left', clickCount: 1 });
  }
  await page.waitFor(`document.querySelector('.waterfall')?.dataset.request === ${JSON.stringify(first)}`, 5000, 'the bench waterfall');
  // The bench runs the server's Engine, so its trace has the server's request spans: a
  // request's rounds and bursts follow its queue and prefill, one burst per round plus the prefill's.
  const kinds = await page.evaluate(`[...document.querySelectorAll('.waterfall .wf-row')].map((r) => r.dataset.kind)`);
  const count = (kind) => kinds.filter((k) => k === kind).length;
  assertEqual(kinds.slice(0, 2), ['queued', 'prefill'], 'bench trace: a request starts queued, then prefilled');
  assertTrue(count('round') >= 1, `bench trace: the request's rounds: ${count('round')}`);
  assertEqual(count('burst'), count('round') + 1, 'bench trace: a burst per round and one for the first token');
  writeScreenshot(args.screenshot.replace(/\.png$/, '_bench.png'), await page.send('Page.captureScreenshot', { format: 'png' }));
}

function writeScreenshot(path, shot) {
  writeFileSync(path, Buffer.from(shot.data, 'base64'));
  console.log(`screenshot: ${path}`);
}
