/** Vitest's global set-up: compiles dist/ when a source is newer, so tests that start the bins run the current code. */
import { build, isBuilt } from './build.ts';

export default async function setup(): Promise<void> {
  if (!isBuilt()) await build();
}
