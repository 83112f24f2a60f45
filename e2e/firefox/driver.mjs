// Drives one headless firefox-esr page for the Go e2e tests (e2e/firefox_test.go)
// with puppeteer-core over WebDriver BiDi. One JSON command a line on stdin, one
// JSON answer a line on stdout, in order:
//   {"id":1,"op":"script","js":"..."}  run js in every document loaded from now on
//   {"id":2,"op":"open","url":"..."}   navigate
//   {"id":3,"op":"eval","js":"..."}    evaluate a script (promises awaited);
//                                      answers {"id":3,"value":<its JSON>}
//   {"id":4,"op":"console"}            the console lines logged since the last call
// Errors answer {"id":N,"error":"..."}. End of stdin closes the browser.
// The first argument is Firefox's executable, the second a profile directory;
// a third, "default-ice", leaves Firefox's ICE prefs as a new user has them (no
// loopback candidates, host addresses hidden behind mDNS names).

import { createInterface } from 'node:readline';
import puppeteer from 'puppeteer-core';

const [executablePath, userDataDir, ice] = process.argv.slice(2);
// The SFU of most tests announces 127.0.0.1 only: gather loopback candidates, plainly.
const loopbackICE = {
  'media.peerconnection.ice.loopback': true,
  'media.peerconnection.ice.obfuscate_host_addresses': false,
};

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath,
  userDataDir,
  headless: true,
  defaultViewport: { width: 1280, height: 800 },
  extraPrefsFirefox: {
    // A fake camera and microphone, no permission prompt.
    'media.navigator.streams.fake': true,
    'media.navigator.permission.disabled': true,
    ...(ice === 'default-ice' ? {} : loopbackICE),
    // Remote videos and WebAudio play without a user gesture.
    'media.autoplay.default': 0,
    'media.autoplay.blocking_policy': 0,
  },
});
const page = (await browser.pages())[0] ?? (await browser.newPage());
// The page's console, for the test's failure messages.
const consoleLines = [];
const logLine = (line) => {
  consoleLines.push(line);
  if (consoleLines.length > 200) consoleLines.shift();
};
page.on('console', (m) => logLine(`${m.type()}: ${m.text()}`));
page.on('pageerror', (err) => logLine(`pageerror: ${err?.message ?? err}`));

const ops = {
  script: async ({ js }) => {
    await page.evaluateOnNewDocument(js);
    return null;
  },
  open: async ({ url }) => {
    await page.goto(url, { waitUntil: 'load', timeout: 20_000 });
    return null;
  },
  console: async () => consoleLines.splice(0),
  // A script, as chromedp's Evaluate takes it (statements allowed, the last
  // one's value returned, promises awaited), its value made plain JSON.
  // An evaluation that never settles answers an error after 8 s (the Go side
  // waits 10 s) instead of holding every later command behind it.
  eval: async ({ js }) => {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('eval did not settle within 8s')), 8_000);
    });
    try {
      return JSON.parse(JSON.stringify((await Promise.race([page.evaluate(js), timeout])) ?? null));
    } finally {
      clearTimeout(timer);
    }
  },
};

const answer = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');

// Commands run one at a time, in order.
let chain = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  chain = chain.then(async () => {
    let cmd;
    try {
      cmd = JSON.parse(line);
      const op = ops[cmd.op];
      if (!op) throw new Error(`unknown op ${cmd.op}`);
      answer({ id: cmd.id, value: await op(cmd) });
    } catch (err) {
      answer({ id: cmd?.id ?? 0, error: String(err?.message ?? err) });
    }
  });
});
lines.on('close', () => {
  chain = chain.then(() => browser.close()).then(() => process.exit(0));
});
answer({ id: 0, value: 'ready' });
