// Builds the browser client into dist/: podium.js (bundled TypeScript),
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
for (const f of ['index.html', 'podium.css']) {
  await copyFile(join(here, 'static', f), join(dist, f));
}
