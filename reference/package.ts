/**
 * The package's own files (schemas, spec, fixtures, package.json), found from any of its modules,
 * whether they run from the sources of a clone or compiled from dist/ in an installed package.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The name this package is published under. */
export const PACKAGE_NAME = 'tap-agent-protocol';

interface Manifest {
  name?: string;
  version?: string;
}

function readManifest(dir: string): Manifest | undefined {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** The nearest folder at or above `from` whose package.json names this package. */
export function findPackageRoot(from: string): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    if (readManifest(dir)?.name === PACKAGE_NAME) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json of ${PACKAGE_NAME} at or above ${from}`);
  }
}

/** The package's root folder (the one holding package.json, schemas/ and spec/). */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** A path inside the package. */
export function packagePath(relative: string): string {
  return resolve(PACKAGE_ROOT, relative);
}

/**
 * The built spec site: site/ in the package, which ships it (a clone builds it with
 * `npm run site`). Reports link into it by default; `tapctl site` copies it.
 */
export const SPEC_SITE_DIR = packagePath('site');

/** The package's version, from its package.json. */
export function packageVersion(): string {
  return readManifest(PACKAGE_ROOT)?.version ?? '0.0.0';
}
