// The chat page (tools/web) in headless Chromium against `specd serve` on loopback
// (tests/support/with_server.sh sets SPECD_BASE_URL). Types a prompt, sends it, waits for
// the streamed answer and checks: the text equals `specd generate` for the same greedy
// request; the token colouring matches the frames the page received (draft-accepted vs
// target tokens, per token when the server sends `pieces`); the counters match the done
// frame. Then a target-only completion, whose tokens must all be target-coloured.
// Saves a screenshot.
//
//   node chat_page_test.mjs --specd build/specd --screenshot build/chat_page.png
import { writeFileSync } from 'node:fs';
import { Chromium } from './chromium.mjs';
import { specdGenerate, parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const base = process.env.SPECD_BASE_URL;
if (!args.specd || !args.screenshot || !base) throw new Error('needs --specd, --screenshot and SPECD_BASE_URL');

const maxTokens = 40;
const chatPrompt = 'Speak, what are you?';
const completionPrompt = 'KING HENRY:';
const chatExpected = specdGenerate(args.specd, { prompt: chatPrompt, chat: true, maxTokens });
const completionExpected = specdGenerate(args.specd, { prompt: completionPrompt, maxTokens, extra: ['--no-spec'] });

const browser = await Chromium.launch();
const page = browser.page;
const pageErrors = [];
const frames = [];
try {
  page.on('Runtime.exceptionThrown', (e) => pageErrors.push(e.exceptionDetails.exception?.description || e.exceptionDetails.text));
  page.on('Network.webSocketFrameReceived', (e) => frames.push(JSON.parse(e.response.payloadData)));
  await page.send('Page.enable');
  await page.send('Runtime.enable');
  await page.send('Network.enable');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
  await page.navigate(`${base}/`);
  await page.waitFor(`document.body.dataset.connection === 'open'`, 15000, 'the WebSocket to connect');

  // Turn 1: chat mode, speculation on with K = 4, greedy.
  await setField('#temperature', '0');
  await setField('#max_tokens', String(maxTokens));
  await setField('#k', '4');
  await page.type('#prompt', chatPrompt);
  await page.click('#send');
  const first = await waitForReply(1);
  const perToken = checkReply(first, chatExpected, 'c1', 'chat, speculative');
  // Without per-token pieces a burst holding accepted drafts can only be shown as a whole.
  const draftSpans = perToken ? first.kinds.draft.length : first.kinds.mixed.length;
  assertTrue(draftSpans > 0, `some tokens came from the draft (${draftSpans} spans)`);
  assertTrue(first.kinds.target.length > 0, `some tokens came from the target (${first.kinds.target.length} spans)`);
  assertTrue(first.drafted > 0, `the draft proposed ${first.drafted} tokens`);
  const done = frames.find((f) => f.type === 'done' && f.id === 'c1');
  assertEqual(first.accepted, done.spec.accepted, 'accepted tokens counted by the page equal done.spec.accepted');
  assertEqual(first.drafted, done.spec.drafted, 'drafted tokens counted by the page equal done.spec.drafted');
  assertEqual(first.header.acceptance, `${(100 * done.spec.accepted / done.spec.drafted).toFixed(1)}%`,
    'header acceptance rate');
  assertEqual(first.header.tokens, String(done.usage.completion_tokens), 'header token count');

  // Turn 2: completion mode, speculation off (a real click on the checkbox).
  await setField('#mode', 'completion');
  await page.click('#speculative');
  assertEqual(await page.evaluate(`document.getElementById('k').disabled`), true, 'K is disabled with speculation off');
  await page.type('#prompt', completionPrompt);
  await page.click('#send');
  const second = await waitForReply(2);
  checkReply(second, completionExpected, 'c2', 'completion, target only');
  assertEqual(second.drafted, 0, 'target-only reply drafted nothing');
  assertEqual(second.kinds.draft.length + second.kinds.mixed.length, 0, 'target-only reply has only target tokens');

  const shot = await page.send('Page.captureScreenshot', { format: 'png' });
  writeFileSync(args.screenshot, Buffer.from(shot.data, 'base64'));
  console.log(`screenshot: ${args.screenshot}`);
  assertEqual(pageErrors, [], 'no uncaught exceptions in the page');
} finally {
  await browser.close();
}
console.log('chat page test passed');

async function setField(selector, value) {
  await page.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)});
    e.value = ${JSON.stringify(value)}; e.dispatchEvent(new Event('input', { bubbles: true }));
    e.dispatchEvent(new Event('change', { bubbles: true })); })()`);
}

async function waitForReply(n) {
  await page.waitFor(`document.querySelectorAll('.msg.assistant').length === ${n} &&
    document.querySelectorAll('.msg.assistant')[${n - 1}].dataset.state !== 'streaming'`, 120000, `reply ${n}`);
  return page.evaluate(`(() => {
    const msg = document.querySelectorAll('.msg.assistant')[${n - 1}];
    const spans = [...msg.querySelectorAll('.body .tok')];
    const kinds = { draft: [], target: [], mixed: [] };
    for (const s of spans) for (const k of Object.keys(kinds)) if (s.classList.contains(k)) kinds[k].push(s.textContent);
    const text = (id) => document.getElementById(id).textContent;
    return { state: msg.dataset.state, id: msg.dataset.id, text: msg.querySelector('.body').textContent, kinds,
      tokens: Number(msg.dataset.tokens), drafted: Number(msg.dataset.drafted), accepted: Number(msg.dataset.accepted),
      finishReason: msg.dataset.finishReason, completionTokens: Number(msg.dataset.completionTokens),
      header: { acceptance: text('acceptance'), tokens: text('tokens') } };
  })()`);
}

// The colour of every character as the frames of request `id` determine it.
function expectedKinds(id) {
  const kinds = { draft: '', target: '', mixed: '' };
  let pieces = 0;
  for (const f of frames.filter((x) => x.type === 'tokens' && x.id === id)) {
    if (Array.isArray(f.pieces) && f.pieces.length === f.token_ids.length) {
      pieces += 1;
      f.pieces.forEach((p, i) => { kinds[i < f.accepted ? 'draft' : 'target'] += p; });
    } else {
      kinds[f.accepted === 0 && f.token_ids.length > 0 ? 'target' : 'mixed'] += f.text;
    }
  }
  return { kinds, perToken: pieces > 0 };
}

function checkReply(reply, expected, id, what) {
  assertEqual(reply.state, 'done', `${what}: reply state`);
  assertEqual(reply.id, id, `${what}: request id`);
  assertEqual(reply.text, expected.text, `${what}: page text equals specd generate`);
  assertEqual(reply.finishReason, expected.finish_reason, `${what}: finish reason`);
  assertEqual(reply.tokens, expected.token_ids.length, `${what}: tokens counted from bursts`);
  assertEqual(reply.completionTokens, expected.token_ids.length, `${what}: usage.completion_tokens`);
  const { kinds, perToken } = expectedKinds(id);
  console.log(`${what}: colouring ${perToken ? 'per token (pieces)' : 'per burst (no pieces in the frames)'}`);
  for (const k of ['draft', 'target', 'mixed']) {
    assertEqual(reply.kinds[k].join(''), kinds[k], `${what}: text coloured ${k}`);
  }
  return perToken;
}
