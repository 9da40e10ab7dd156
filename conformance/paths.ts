/** Where the harness finds the files it reads at run time: schemas, the requirement index, fixtures. */
import { PACKAGE_ROOT, packagePath } from '../reference/package.ts';

/** The package root (the folder holding conformance/ in a clone, dist/ in an installed package). */
export const REPO_ROOT = PACKAGE_ROOT;

/** A path inside the package. */
export function repoPath(relative: string): string {
  return packagePath(relative);
}
