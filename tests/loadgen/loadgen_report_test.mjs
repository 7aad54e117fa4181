// loadgen --report against `specd serve` on loopback (tests/support/with_server.sh sets
// SPECD_PORT) with 2 KV slots and 2 waiting places (small_server.toml): a bad report path
// is refused before any load with a clear message; the ramp 1,2,8 (--keep-going; 8
// clients overload the server) gives one self-contained page that Chromium renders with
// its five charts, one CDF curve per level, the errors by code, the same figures loadgen
// printed as JSON and the run's settings (the prompt holds "</script>", which must not
// break the page). Saves a screenshot.
//
//   node loadgen_report_test.mjs --loadgen build/loadgen --report build/loadgen_report.html
//        --screenshot build/loadgen_report.png
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Chromium } from '../web/chromium.mjs';
import { parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const port = process.env.SPECD_PORT;
if (!args.loadgen || !args.report || !args.screenshot || !port) throw new Error('needs --loadgen, --report, --screenshot, SPECD_PORT');

const bad = spawnSync(args.loadgen, ['--port', port, '--report', '/nonexistent-dir/report.html'], { encoding: 'utf8' });
assertTrue(bad.status !== 0, `a report path in a missing directory: exit ${bad.status}`);
assertTrue(bad.stderr.includes("--report: cannot write '/nonexistent-dir/report.html': No such file or directory"),
  `the refusal names the option, the path and the reason: ${bad.stderr.split('\n')[0]}`);

const prompt = 'ROMEO: </script><b>';
const ramp = [1, 2, 8];
const out = execFileSync(args.loadgen, ['--port', port, '--ramp', ramp.join(','), '--requests', '2', '--max-tokens', '16',
  '--temperature', '0', '--k', '4', '--prompt', prompt, '--keep-going', '--report', args.report], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
const report = JSON.parse(out);
assertEqual(report.levels.slice(0, 2).map((l) => l.errors), [0, 0], 'no errors below the capacity');
assertEqual(Object.keys(report.levels[2].errors_by_code), ['overloaded'], '8 clients: overloaded errors');
const html = readFileSync(args.report, 'utf8');
assertEqual(html.match(/(src|href)\s*=\s*["']?(https?:)?\/\//g), null, 'the page loads nothing from the network');

const browser = await Chromium.launch({ width: 1300, height: 1000 });
const page = browser.page;
const pageErrors = [];
try {
  page.on('Runtime.exceptionThrown', (e) => pageErrors.push(e.exceptionDetails.exception?.description || e.exceptionDetails.text));
  await page.send('Page.enable');
  await page.send('Runtime.enable');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1300, height: 1000, deviceScaleFactor: 1, mobile: false });
  await page.navigate(pathToFileURL(args.report).href);
  await page.waitFor(`document.body.dataset.rendered === 'yes'`, 15000, 'the report to render');
  const seen = await page.evaluate(`(() => {
    const data = JSON.parse(document.getElementById('report-data').textContent);
    const labels = (id) => [...document.querySelectorAll('#' + id + ' .u-legend .u-series .u-label')].map((e) => e.textContent);
    return { data, charts: document.querySelectorAll('.uplot').length, canvases: document.querySelectorAll('.uplot canvas').length,
      ttft: labels('ttft'), itl: labels('itl'), tableRows: document.querySelectorAll('#levels tr').length,
      settings: document.getElementById('settings').textContent, errors: document.getElementById('errors').textContent,
      tps: [...document.querySelectorAll('#levels tr')].slice(1).map((r) => r.children[4].textContent),
      errorRows: [...document.querySelectorAll('#errors tr')].map((r) => [...r.children].map((c) => c.textContent)) }; })()`);
  assertEqual(seen.data.report, report, 'the page\'s data is the JSON loadgen printed');
  assertEqual(seen.charts, 5, 'charts: TTFT CDF, inter-token CDF, tokens/s, acceptance, errors by code');
  assertEqual(seen.canvases, 5, 'one canvas per chart');
  const curves = ['ms', ...ramp.map((c) => `${c} clients`)];
  assertEqual(seen.ttft, curves, 'one TTFT curve per level');
  assertEqual(seen.itl, curves, 'one inter-token curve per level');
  assertEqual(seen.tableRows, ramp.length + 1, 'the levels table: a header and a row per level');
  assertEqual(seen.tps, report.levels.map((l) => l.tokens_per_second.toFixed(1)), 'tokens/s per level in the table');
  assertTrue(seen.settings.includes(prompt), `the settings show the prompt intact: ${JSON.stringify(prompt)}`);
  assertEqual(seen.errorRows, [['clients', 'overloaded'], ...report.levels.map((l) => [String(l.clients), String(l.errors_by_code.overloaded || 0)])],
    'the errors-by-code table');
  seen.data.cdfs.forEach((cdf, i) => {
    const level = report.levels[i];
    assertEqual(cdf.clients, level.clients, `level ${i}: clients`);
    assertEqual(cdf.ttft_ms.length, level.ttft_ms.count, `${level.clients} clients: one TTFT point per stream`);
    assertEqual(cdf.ttft_ms[cdf.ttft_ms.length - 1], [level.ttft_ms.max, 1], `${level.clients} clients: TTFT CDF ends at [max, 1]`);
    assertEqual(cdf.inter_token_ms.length, Math.min(400, level.inter_token_ms.count), `${level.clients} clients: inter-token points`);
  });
  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  writeFileSync(args.screenshot, Buffer.from(shot.data, 'base64'));
  console.log(`screenshot: ${args.screenshot}`);
  assertEqual(pageErrors, [], 'no uncaught exceptions in the page');
} finally {
  await browser.close();
}
console.log('loadgen report test passed');
