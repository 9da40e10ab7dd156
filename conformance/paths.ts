/** Where the harness finds the files it reads at run time: schemas, the requirement index. */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (the folder holding conformance/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A path inside the repository. */
export function repoPath(relative: string): string {
  return resolve(REPO_ROOT, relative);
}
