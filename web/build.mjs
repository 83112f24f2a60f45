// Builds the browser client into dist/: podium.js (bundled TypeScript),
// e2ee-worker.js (the end-to-end encryption worker),
// index.html and podium.css (copied from static/).
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');

await mkdir(dist, { recursive: true });
await build({
  entryPoints: [join(here, 'src/ui/main.ts')],
  outfile: join(dist, 'podium.js'),
  bundle: true,
  format: 'iife',
  target: ['chrome110', 'firefox115', 'safari16'],
  legalComments: 'none',
  logLevel: 'info',
});
// The end-to-end encryption worker: a file of its own, served from this origin
// (the CSP's script-src 'self' is what workers fall back to).
await build({
  entryPoints: [join(here, 'src/protocol/e2ee/worker.ts')],
  outfile: join(dist, 'e2ee-worker.js'),
  bundle: true,
  format: 'iife',
  target: ['chrome110', 'firefox115', 'safari16'],
  legalComments: 'none',
  logLevel: 'info',
});
for (const f of ['index.html', 'podium.css']) {
  await copyFile(join(here, 'static', f), join(dist, f));
}
