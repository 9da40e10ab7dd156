/**
 * Claims under contention: agent processes racing over the same pending tasks
 * (spec: bindings-workspace#claiming, #lock-mode).
 */
import { promises as fsp, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initWorkspace, listRecords, submitTask, type ClaimMode, type Workspace } from './index.ts';
import { takeLock } from './lock.ts';
import { HERE, runScript, scratchDir, stopChild, waitFor, type ScriptChild } from './workspace.testkit.ts';

const AGENT = join(HERE, 'agent.testkit.ts');
const children: ScriptChild[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => stopChild(c, 2000)));
  await Promise.all(dirs.splice(0).map((d) => fsp.rm(d, { recursive: true, force: true })));
});

async function race(mode: ClaimMode, tasks: number, agents: number): Promise<void> {
  const root = await scratchDir();
  dirs.push(root);
  const { workspace: ws } = await initWorkspace(root, { claim_mode: mode, lease_ms: 10_000 });
  for (let i = 0; i < tasks; i++) await submitTask(ws, { task_id: `t${String(i).padStart(3, '0')}`, next_phase: 'work', input: { i } });
  const effects = join(root, 'effects.jsonl');
  const procs = Array.from({ length: agents }, (_, i) =>
    runScript(AGENT, ['--workspace', root, '--agent-id', `racer-${i}`, '--effects', effects, '--poll-ms', '100']),
  );
  children.push(...procs);
  await waitFor(async () => (await fsp.readdir(ws.paths.dir('completed'))).length === tasks, 40_000, `${tasks} completed tasks`);
  await Promise.all(procs.map((p) => stopChild(p)));
  await check(ws, procs, effects, tasks);
}

async function check(ws: Workspace, procs: ScriptChild[], effects: string, tasks: number): Promise<void> {
  for (const dir of ['pending', 'processing', 'awaiting', 'failed'] as const) {
    expect(
      (await fsp.readdir(ws.paths.dir(dir))).filter((n) => !n.startsWith('.')),
      `tasks/${dir}/`,
    ).toEqual([]);
  }
  const completed = await listRecords(ws, 'completed');
  expect(completed).toHaveLength(tasks);
  for (const r of completed) {
    expect(r.check.ok, r.taskId).toBe(true);
    if (!r.check.ok) continue;
    expect(r.check.record.context.history).toHaveLength(1);
    expect(r.check.record.state).toMatchObject({ status: 'completed', epoch: 1, attempts: 0 });
  }
  // Every phase ran once: one effect per task, at epoch 1.
  const lines = readFileSync(effects, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { task_id: string; epoch: number; agent: string });
  expect(lines).toHaveLength(tasks);
  expect(new Set(lines.map((l) => l.task_id)).size).toBe(tasks);
  // No double claim: each (task, epoch) claimed by exactly one agent, and each claim finished.
  const claims = procs.flatMap((p) => p.lines.filter((l) => l.event === 'claimed').map((l) => `${l.task_id}@${l.epoch}`));
  expect(claims).toHaveLength(tasks);
  expect(new Set(claims).size).toBe(tasks);
  const finished = procs.flatMap((p) => p.lines.filter((l) => l.event === 'finished'));
  expect(finished).toHaveLength(tasks);
  expect(procs.flatMap((p) => p.lines.filter((l) => l.event === 'lost'))).toEqual([]);
  // Each agent took a share (the race was real).
  expect(procs.filter((p) => p.lines.some((l) => l.event === 'claimed')).length).toBeGreaterThan(1);
}

describe('claims under contention (spec: bindings-workspace#claiming)', () => {
  it.each([1, 2])(
    'four agent processes complete 200 tasks exactly once, none lost, no double claim (run %i)',
    async () => {
      await race('rename', 200, 4);
    },
    60_000,
  );

  it('lock mode: four agent processes complete 100 tasks exactly once (spec: bindings-workspace#lock-mode)', async () => {
    await race('lock', 100, 4);
  }, 60_000);
});

describe('link-count locks (spec: bindings-workspace#lock-mode)', () => {
  it('gives each lock to exactly one of many concurrent takers', async () => {
    const root = await scratchDir();
    dirs.push(root);
    for (let round = 0; round < 20; round++) {
      const lock = join(root, `t${round}@1.claim.lock`);
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => takeLock(lock, `taker-${i}`)));
      expect(results.filter(Boolean)).toHaveLength(1);
    }
    // Unique files never stay behind.
    expect((await fsp.readdir(root)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('never takes a lock that exists already', async () => {
    const root = await scratchDir();
    dirs.push(root);
    const lock = join(root, 'x@1.commit.lock');
    expect(await takeLock(lock, 'first')).toBe(true);
    expect(await takeLock(lock, 'second')).toBe(false);
    expect(JSON.parse(await fsp.readFile(lock, 'utf8'))).toMatchObject({ holder: 'first' });
  });
});
