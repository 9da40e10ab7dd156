// The package ships dist/; a clone makes it with `npm run build` (certify, test and bench build first).
import { existsSync } from 'node:fs';

/** Imports the compiled module `path` (relative to bin/) for the command `name`; exits 2 with one line when dist/ is not built. */
export async function importBuilt(name, path) {
  const entry = new URL(path, import.meta.url);
  try {
    return await import(entry.href);
  } catch (err) {
    if (existsSync(entry)) throw err;
    process.stderr.write(`${name}: dist/ is not built here: run \`npm run build\` first\n`);
    process.exit(2);
  }
}
