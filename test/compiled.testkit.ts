/**
 * The TypeScript scripts tests start as processes (test agents, broken peers), compiled to plain
 * JavaScript once per run of vitest, so that each process runs `node script.mjs` on the package as
 * built, the way users run it. Started under the tsx loader, a process spent about 0.55 CPU-s
 * getting ready against 0.17 CPU-s compiled, and a full `npm test` starts some sixty of them.
 * They are compiled as the bench's peers are (bench/lib/bundle.ts): the script bundled, the
 * package's modules imported from dist/ (vitest's global set-up builds dist/ first).
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtOf, bundleScripts } from '../bench/lib/bundle.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where the scripts are compiled to, by vitest's global set-up: inside node_modules, so their imports of dependencies resolve. */
const OUT = join(ROOT, 'node_modules', '.cache', 'tap', 'test-scripts');

/**
 * The scripts of test support that tests start as processes, compiled by vitest's global set-up
 * (tools/vitest-build.ts). A script of the package itself needs no entry: its file in dist/ runs.
 */
export const SCRIPTS: readonly string[] = [
  'reference/workspace/agent.testkit.ts',
  'reference/workspace/mailbox-peer.testkit.ts',
  'conformance/test/registry-broken.testkit.ts',
];

const outOf = (script: string): string => join(OUT, `${relative(ROOT, script).replace(/\.ts$/, '').replaceAll('/', '__')}.mjs`);

/** Compiles every script of SCRIPTS (after dist/ is built): each file is written whole, then renamed into place. */
export async function compileScripts(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const tmp = mkdtempSync(join(OUT, '.new-'));
  try {
    await bundleScripts(Object.fromEntries(SCRIPTS.map((s) => [basename(outOf(resolve(ROOT, s)), '.mjs'), resolve(ROOT, s)])), tmp);
    for (const s of SCRIPTS) {
      const out = outOf(resolve(ROOT, s));
      renameSync(join(tmp, basename(out)), out);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The JavaScript file that runs the TypeScript script `file` (absolute, or relative to the
 * repository root): a module of the package (`reference/agents/reference-agent.ts`) is its file in
 * dist/; a script of test support is its compiled form (it must be listed in SCRIPTS).
 */
export function compiledScript(file: string): string {
  const path = resolve(ROOT, file);
  const built = builtOf(path);
  if (built) return built;
  if (!SCRIPTS.some((s) => resolve(ROOT, s) === path))
    throw new Error(`${relative(ROOT, path)} is not compiled for tests: add it to SCRIPTS in test/compiled.testkit.ts`);
  const out = outOf(path);
  if (!existsSync(out)) throw new Error(`${out} is missing: vitest's global set-up compiles it (tools/vitest-build.ts)`);
  return out;
}
