// A small driver for headless Chromium over the Chrome DevTools Protocol: launches
// Debian's /usr/bin/chromium with a throwaway profile, connects to its first page
// with the `ws` package (scripts/fetch_test_clients.sh) and sends CDP commands.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const clientsDir = new URL('../../third_party/node-clients/node_modules/', import.meta.url).pathname;
let WebSocket;
try {
  WebSocket = require(join(clientsDir, 'ws'));
} catch (e) {
  throw new Error(`the ws package is missing: run scripts/fetch_test_clients.sh (${e.message})`);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// One CDP connection to a page target.
class PageSession {
  constructor(socket) {
    this.socket = socket;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Map();
    socket.on('message', (data) => this.onMessage(JSON.parse(data.toString())));
    socket.on('close', () => {
      for (const { reject } of this.pending.values()) reject(new Error('DevTools connection closed'));
      this.pending.clear();
    });
  }

  onMessage(message) {
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.error) waiter.reject(new Error(`${waiter.method}: ${message.error.message}`));
      else waiter.resolve(message.result);
    } else {
      for (const listener of this.listeners.get(message.method) || []) listener(message.params);
    }
  }

  send(method, params = {}) {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return withTimeout(new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method })),
      60000, method);
  }

  on(method, listener) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(listener);
  }

  // Evaluates an expression in the page (awaiting promises) and returns its value.
  async evaluate(expression) {
    const result = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (result.exceptionDetails) {
      const details = result.exceptionDetails;
      throw new Error(`page: ${details.exception ? details.exception.description : details.text}`);
    }
    return result.result.value;
  }

  // Navigates and waits for the load event (Page.enable must have been sent).
  async navigate(url) {
    const loaded = new Promise((resolve) => this.once('Page.loadEventFired', resolve));
    const result = await this.send('Page.navigate', { url });
    if (result.errorText) throw new Error(`navigating to ${url}: ${result.errorText}`);
    await withTimeout(loaded, 30000, `loading ${url}`);
  }

  once(method, listener) {
    const wrapped = (params) => {
      this.listeners.set(method, this.listeners.get(method).filter((l) => l !== wrapped));
      listener(params);
    };
    this.on(method, wrapped);
  }

  // Polls `expression` until it is truthy; returns its value.
  async waitFor(expression, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate(expression);
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  // A real mouse click at the centre of the element `selector`.
  async click(selector) {
    const box = await this.evaluate(`(() => { const r = document.querySelector(${JSON.stringify(selector)})` +
      `.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`);
    for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased']) {
      await this.send('Input.dispatchMouseEvent', { type, x: box.x, y: box.y, button: 'left', clickCount: 1 });
    }
  }

  // Focuses `selector` and types `text` into it as keyboard input.
  async type(selector, text) {
    await this.evaluate(`document.querySelector(${JSON.stringify(selector)}).focus()`);
    await this.send('Input.insertText', { text });
  }
}

export class Chromium {
  static async launch({ width = 1280, height = 860 } = {}) {
    const executable = process.env.SPECD_CHROMIUM || '/usr/bin/chromium';
    const profile = mkdtempSync(join(tmpdir(), 'specd-chromium-'));
    const args = [
      '--headless=new', '--remote-debugging-port=0', `--user-data-dir=${profile}`,
      '--no-first-run', '--no-default-browser-check', '--disable-gpu', '--disable-extensions',
      '--disable-background-networking', '--disable-dev-shm-usage', '--hide-scrollbars',
      `--window-size=${width},${height}`, 'about:blank',
    ];
    // Chromium refuses to run its sandbox as root (CI containers).
    if (process.getuid && process.getuid() === 0) args.unshift('--no-sandbox');
    // Its own process group, so close() can stop the helper processes too.
    const proc = spawn(executable, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    const browser = new Chromium(proc, profile);
    let log = '';
    const endpoint = await withTimeout(new Promise((resolve, reject) => {
      proc.on('error', reject);
      proc.on('exit', (code) => reject(new Error(`chromium exited with ${code}: ${log}`)));
      proc.stderr.on('data', (chunk) => {
        log += chunk.toString();
        const match = log.match(/DevTools listening on (ws:\/\/[^\s]+)/);
        if (match) resolve(new URL(match[1]));
      });
    }), 30000, 'chromium start').catch((e) => {
      browser.close();
      throw e;
    });
    const targets = await (await fetch(`http://${endpoint.host}/json/list`)).json();
    const page = targets.find((t) => t.type === 'page');
    if (!page) throw new Error('chromium has no page target');
    const socket = new WebSocket(page.webSocketDebuggerUrl, { perMessageDeflate: false });
    await withTimeout(new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    }), 10000, 'DevTools connection');
    browser.page = new PageSession(socket);
    return browser;
  }

  constructor(proc, profile) {
    this.proc = proc;
    this.profile = profile;
    this.page = null;
  }

  async close() {
    if (this.page) this.page.socket.close();
    const signalGroup = (signal) => {
      try {
        process.kill(-this.proc.pid, signal);
      } catch {
        // ESRCH: the group is gone already
      }
    };
    if (this.proc.exitCode === null) {
      const exited = new Promise((resolve) => this.proc.once('exit', resolve));
      signalGroup('SIGTERM');
      await withTimeout(exited, 5000, 'chromium exit').catch(() => {});
    }
    // Helper processes (crashpad, utility) outlive the browser and keep writing into the
    // profile, which made removing it fail with ENOTEMPTY now and then.
    signalGroup('SIGKILL');
    rmSync(this.profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}
