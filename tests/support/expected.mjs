// Expected outputs for the loopback client tests: what `specd generate --json` prints for
// the same greedy request on the same default model pair. Greedy speculative output is
// identical to target-only output, so any client of the server must see exactly this.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Runs `specd generate ... --json` and returns its parsed object.
export function specdGenerate(specd, { prompt, chat = false, maxTokens, extra = [] }) {
  const args = ['generate', '--prompt', prompt, '--max-tokens', String(maxTokens), '--temperature', '0', '--json'];
  if (chat) args.push('--chat');
  args.push(...extra);
  const out = execFileSync(specd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const result = JSON.parse(out.trim().split('\n').pop());
  if (typeof result.text !== 'string' || !Array.isArray(result.token_ids)) {
    throw new Error(`unexpected specd generate output: ${out}`);
  }
  return result;
}

// Loads a package installed by scripts/fetch_test_clients.sh.
export function requireClient(name) {
  const dir = new URL('../../third_party/node-clients/node_modules/', import.meta.url).pathname;
  const require = createRequire(import.meta.url);
  try {
    return require(join(dir, name));
  } catch (e) {
    throw new Error(`${name} is missing: run scripts/fetch_test_clients.sh (${e.message})`);
  }
}

// Parses --name value pairs.
export function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad arguments: ${argv.join(' ')}`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  return args;
}

export function assertEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
  console.log(`ok  ${what}: ${e.length > 80 ? e.slice(0, 77) + '...' : e}`);
}

export function assertTrue(condition, what) {
  if (!condition) throw new Error(`failed: ${what}`);
  console.log(`ok  ${what}`);
}
