/**
 * The TypeScript scripts tests start as processes (test agents, broken peers), compiled to plain
 * JavaScript once per run of vitest, so that each process runs `node script.mjs` on the package as
 * built, the way users run it. Started under the tsx loader, a process spent about 0.55 CPU-s
 * getting ready against 0.17 CPU-s compiled, and a full `npm test` starts some sixty of them.
 *
 * The script's own module, and any other module of test support, is bundled into the output;
 * every module of the package it imports is taken from dist/ (vitest's global set-up builds dist/
 * first), left outside the bundle, so the package's code runs as built and finds its files where
 * it expects them. Dependencies stay in node_modules.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
/** A module of test support: bundled, never taken from dist/ (which has none). */
const TEST_SUPPORT = /\.(test|testkit)\.ts$/;

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

/** The built file of a module of the package under ROOT, if dist/ has it: `reference/x/y.ts` → `dist/reference/x/y.js`. */
function builtOf(path: string): string | undefined {
  if (!path.startsWith(`${ROOT}/`) || !path.endsWith('.ts') || TEST_SUPPORT.test(path)) return undefined;
  const built = join(DIST, relative(ROOT, path).replace(/\.ts$/, '.js'));
  return existsSync(built) ? built : undefined;
}

/** Resolves a relative import of the package's own modules to its built file in dist/, outside the bundle. */
const packageFromDist: Plugin = {
  name: 'package-from-dist',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const built = builtOf(resolve(args.resolveDir, args.path));
      return built ? { path: built, external: true } : undefined;
    });
  },
};

const outOf = (script: string): string => join(OUT, `${relative(ROOT, script).replace(/\.ts$/, '').replaceAll('/', '__')}.mjs`);

/** Compiles every script of SCRIPTS (after dist/ is built): each file is written whole, then renamed into place. */
export async function compileScripts(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const tmp = mkdtempSync(join(OUT, '.new-'));
  try {
    await build({
      entryPoints: Object.fromEntries(SCRIPTS.map((s) => [basename(outOf(resolve(ROOT, s)), '.mjs'), resolve(ROOT, s)])),
      outdir: tmp,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      packages: 'external',
      plugins: [packageFromDist],
      logLevel: 'warning',
    });
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
