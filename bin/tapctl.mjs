#!/usr/bin/env node
// The package ships dist/; a clone makes it with `npm run build` (certify, test and bench build first).
const entry = new URL('../dist/reference/tapctl/main.js', import.meta.url);
try {
  await import(entry.href);
} catch (err) {
  if ((await import('node:fs')).existsSync(entry)) throw err;
  process.stderr.write('tapctl: dist/ is not built here: run `npm run build` first\n');
  process.exit(2);
}
