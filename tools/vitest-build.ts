/**
 * Vitest's global set-up: compiles dist/ when a source is newer, so tests that start the bins run
 * the current code, then the scripts of test support that tests start as processes
 * (test/compiled.testkit.ts), against that dist/.
 */
import { compileScripts } from '../test/compiled.testkit.ts';
import { build, isBuilt } from './build.ts';

// Every worker of the run waits for this one build.
let building: Promise<void> | undefined;

export default async function setup(): Promise<void> {
  building ??= (isBuilt() ? Promise.resolve() : build()).then(compileScripts);
  await building;
}
