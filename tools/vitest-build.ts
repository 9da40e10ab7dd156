/** Vitest's global set-up: compiles dist/ when a source is newer, so tests that start the bins run the current code. */
import { build, isBuilt } from './build.ts';

// Both projects (fast and slow) run this set-up: one build serves them.
let building: Promise<void> | undefined;

export default async function setup(): Promise<void> {
  building ??= isBuilt() ? Promise.resolve() : build();
  await building;
}
