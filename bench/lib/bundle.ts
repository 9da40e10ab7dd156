/**
 * TypeScript scripts compiled to one JavaScript file each, run on the package as built: the
 * script's own modules (and any module of test support) are bundled in; an import of dist/, or of
 * a module of the package that dist/ has (`reference/x/y.ts` → `dist/reference/x/y.js`), stays an
 * import of that built file, so the package's code is never bundled again and finds its files
 * where it expects them; dependencies stay in node_modules. The bench's peers (children.ts) and
 * the scripts tests start as processes (test/compiled.testkit.ts) are compiled this way.
 */
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { ROOT } from './paths.ts';

const DIST = join(ROOT, 'dist');
/** A module of test support: bundled, never taken from dist/ (which has none). */
const TEST_SUPPORT = /\.(test|testkit)\.ts$/;

/** The built file an import resolving to `path` runs: the path itself inside dist/, a package module's file in dist/, else none. */
export function builtOf(path: string): string | undefined {
  if (path.startsWith(`${DIST}/`)) return path;
  if (!path.startsWith(`${ROOT}/`) || !path.endsWith('.ts') || TEST_SUPPORT.test(path)) return undefined;
  const built = join(DIST, relative(ROOT, path).replace(/\.ts$/, '.js'));
  return existsSync(built) ? built : undefined;
}

/** Leaves every relative import of the package as built an import of its file in dist/. */
const packageAsBuilt: Plugin = {
  name: 'package-as-built',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const built = builtOf(resolve(args.resolveDir, args.path));
      return built ? { path: built, external: true } : undefined;
    });
  },
};

/** Bundles each entry (output name → script) into `outdir` as `<name>.mjs`; dist/ must be built. */
export async function bundleScripts(entryPoints: Record<string, string>, outdir: string): Promise<void> {
  if (!existsSync(join(DIST, '.built'))) throw new Error('dist/ is missing: run npm run build first');
  await build({
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    plugins: [packageAsBuilt],
    logLevel: 'warning',
  });
}
