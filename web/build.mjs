// Bundles src/ into ../internal/ui/assets (committed, so `go build` needs no
// node) and keeps ECharts' licence and notice beside the bundle.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

// TRIALFORM_UI_OUT: another directory (scripts/ui-check.sh builds into a
// temporary one to compare with the committed bundle).
const out = process.env.TRIALFORM_UI_OUT || '../internal/ui/assets';
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: ['src/main.js'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  outfile: `${out}/app.js`,
  legalComments: 'none',
  logLevel: 'info',
});
await esbuild.build({
  entryPoints: ['src/style.css'],
  bundle: true,
  minify: true,
  outfile: `${out}/app.css`,
  logLevel: 'info',
});
copyFileSync('src/index.html', `${out}/index.html`);
copyFileSync('node_modules/echarts/LICENSE', `${out}/LICENSE-echarts.txt`);
copyFileSync('node_modules/echarts/NOTICE', `${out}/NOTICE-echarts.txt`);
