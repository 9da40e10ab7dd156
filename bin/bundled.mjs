/**
 * Starts a TypeScript entry point from a cached single-file bundle, rebuilt with esbuild whenever
 * one of its inputs is newer than the bundle; through tsx when no bundle can be built or written.
 * An agent that tap-conform spawns once per case starts in about half the time this way.
 *
 * The cache lives in node_modules/.cache/tap-agent-protocol/ beside the package's own
 * dependencies, so the bundle resolves them exactly as the sources do. TAP_NO_BUNDLE=1 skips it.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The bundle is current when it exists and no input listed in its sidecar changed after it. */
function isCurrent(bundle, sidecar) {
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(readFileSync(sidecar, 'utf8'));
    return inputs.every((file) => statSync(join(root, file)).mtimeMs <= built);
  } catch {
    return false;
  }
}

async function build(entry, bundle, sidecar) {
  const { build: esbuild } = await import('esbuild');
  const tmp = `${bundle}.${process.pid}.tmp`;
  const result = await esbuild({
    entryPoints: [join(root, entry)],
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: tmp,
    metafile: true,
    logLevel: 'silent',
  });
  writeFileSync(`${sidecar}.${process.pid}.tmp`, JSON.stringify(Object.keys(result.metafile.inputs)));
  // Renames are atomic, so agents started side by side never load a half-written bundle.
  renameSync(`${sidecar}.${process.pid}.tmp`, sidecar);
  renameSync(tmp, bundle);
}

/** Imports `entry` (a path from the package root) from its bundle, or through tsx. */
export async function runBundled(entry) {
  if (process.env.TAP_NO_BUNDLE !== '1') {
    const dir = join(root, 'node_modules', '.cache', 'tap-agent-protocol');
    // Named after the checkout too, so two checkouts sharing node_modules never load each other's bundle.
    const name = `${basename(entry).replace(/\.ts$/, '')}-${createHash('sha256').update(root).digest('hex').slice(0, 8)}`;
    const bundle = join(dir, `${name}.mjs`);
    const sidecar = join(dir, `${name}.inputs.json`);
    let ready = isCurrent(bundle, sidecar);
    if (!ready) {
      try {
        mkdirSync(dirname(bundle), { recursive: true });
        await build(entry, bundle, sidecar);
        ready = true;
      } catch {
        // No esbuild or a read-only install: run the sources instead.
      }
    }
    if (ready) return import(pathToFileURL(bundle).href);
  }
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(join(root, entry)).href);
}
