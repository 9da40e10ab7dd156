/**
 * What a running workspace agent keeps on disk about itself, and how it works through a backlog
 * (spec: bindings-workspace#agents, bindings-workspace#directories).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runWorkspaceAgent, submitTask, type Workspace } from './index.ts';
import { scratchWorkspace, waitFor } from './workspace.testkit.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

const workspace = (): Promise<Workspace> => scratchWorkspace(cleanups, { lease_ms: 2000 });

const stateOf = async (ws: Workspace, id: string) =>
  JSON.parse(await fsp.readFile(join(ws.paths.agent(id), 'state.json'), 'utf8')) as { status: string; holding?: string[] };

describe('a running workspace agent', () => {
  it('reports busy with what it holds while a phase runs, and idle after, in state.json', async () => {
    const ws = await workspace();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: async (ctx) => {
        await held;
        return { output: ctx.input };
      },
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    expect((await stateOf(ws, 'worker')).status).toBe('idle');
    await submitTask(ws, { task_id: 'slow', next_phase: 'work', input: 1 });
    await waitFor(async () => (await stateOf(ws, 'worker')).status === 'busy', 5000, 'state.json to say busy');
    expect((await stateOf(ws, 'worker')).holding).toEqual(['slow@1']);
    release();
    await waitFor(async () => (await stateOf(ws, 'worker')).status === 'idle', 5000, 'state.json to say idle');
    expect((await stateOf(ws, 'worker')).holding).toEqual([]);
  });

  it('runs a record that arrives while it works through a backlog', async () => {
    const ws = await workspace();
    for (let i = 0; i < 40; i++) await submitTask(ws, { task_id: `b${String(i).padStart(2, '0')}`, next_phase: 'work', input: i });
    const done: string[] = [];
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: async (ctx) => ({ output: ctx.input }),
      onEvent: (e) => {
        if (e.type === 'finished') done.push(e.task_id);
      },
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(() => done.length >= 5, 5000, 'the backlog to start');
    await submitTask(ws, { task_id: 'late', next_phase: 'work', input: 'late' });
    await waitFor(() => done.includes('late') && done.length === 41, 10_000, 'every record, the late one too');
    expect(new Set(done).size).toBe(41);
    expect((await fsp.readdir(ws.paths.dir('completed'))).length).toBe(41);
  });
});
