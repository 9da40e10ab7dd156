/**
 * The workspace demo: three agent processes — requirement analysis, code generation, code
 * review — share one workspace folder and hand one task along the pipeline; the demo ends with
 * `tapctl workspace show` of the finished task.
 *
 * Usage: demo.ts [--dir DIR] [--keep]
 *   --dir DIR  use (and initialise) DIR instead of a fresh temporary directory
 *   --keep     keep the temporary workspace afterwards, to look at it
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { initWorkspace, locateTask, submitTask } from '../../workspace/index.ts';
import { DEMO_BRIEF, PIPELINE, ROLES } from './handlers.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const TAPCTL = resolve(HERE, '../../../bin/tapctl.mjs');
const TASK_ID = 'demo-slugify';

const { values } = parseArgs({ options: { dir: { type: 'string' }, keep: { type: 'boolean', default: false } } });
const dir = values.dir ? resolve(values.dir) : mkdtempSync(join(tmpdir(), 'tap-workspace-demo-'));
const say = (line: string) => process.stdout.write(line + '\n');

const { workspace: ws } = await initWorkspace(dir, { lease_ms: 5000 });
say(`Workspace: ${ws.root}`);

/** Starts one demo agent process and waits until it watches the workspace. */
function start(role: keyof typeof ROLES): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, 'agent.ts'), ws.root, role], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolveStart, reject) => {
    child.once('exit', (code) => reject(new Error(`agent ${role} exited with ${code} before it was ready`)));
    child.stdout!.setEncoding('utf8').once('data', (line: string) => {
      say(`  ${line.trim()} (pid ${child.pid})`);
      child.removeAllListeners('exit');
      resolveStart(child);
    });
  });
}

say('Starting three agent processes:');
const agents = await Promise.all((Object.keys(ROLES) as Array<keyof typeof ROLES>).map(start));

await submitTask(ws, {
  task_id: TASK_ID,
  next_phase: PIPELINE[0],
  input: DEMO_BRIEF,
  metadata: { pipeline: [...PIPELINE] },
  requirements: { expected_output_format: 'json', validation_rules: ['every acceptance check passes'], timeout_seconds: 60 },
});
say(`Submitted ${TASK_ID}: ${PIPELINE.join(' → ')}`);

const deadline = Date.now() + 60_000;
let where = await locateTask(ws, TASK_ID);
while (where?.dir !== 'completed' && where?.dir !== 'failed') {
  if (Date.now() > deadline) throw new Error(`${TASK_ID} did not finish within 60 s (it is in tasks/${where?.dir ?? '?'}/)`);
  await new Promise((r) => setTimeout(r, 100));
  where = await locateTask(ws, TASK_ID);
}
say(`${TASK_ID} is ${where.dir}; stopping the agents.`);
await Promise.all(
  agents.map(
    (a) =>
      new Promise<void>((resolveExit) => {
        a.once('exit', () => resolveExit());
        a.kill('SIGTERM');
      }),
  ),
);

say('');
say(`$ tapctl workspace show ${ws.root} ${TASK_ID}`);
const show = spawn(process.execPath, [TAPCTL, 'workspace', 'show', ws.root, TASK_ID], { stdio: 'inherit' });
const code = await new Promise<number>((r) => show.once('exit', (c) => r(c ?? 1)));
if (!values.dir && !values.keep) await fsp.rm(dir, { recursive: true, force: true });
process.exit(where.dir === 'completed' ? code : 1);
