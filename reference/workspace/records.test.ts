/**
 * Task records: submission, refused files, phase routing, history compaction and cancellation
 * (spec: bindings-workspace#task-record, #phase-routing, #history-compaction, #approval-and-cancel).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  WorkspaceError,
  cancelTask,
  claimPending,
  fullHistory,
  initWorkspace,
  locateTask,
  openWorkspace,
  recordFromDraft,
  runWorkspaceAgent,
  submitTask,
  type PhaseContext,
  type RunnerEvent,
  type TaskRecord,
  type Workspace,
} from './index.ts';
import { scratchDir, scratchWorkspace, waitFor } from './workspace.testkit.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

const workspace = (settings: Parameters<typeof initWorkspace>[1] = {}): Promise<Workspace> =>
  scratchWorkspace(cleanups, { lease_ms: 2000, ...settings });

async function read(ws: Workspace, dir: 'pending' | 'completed' | 'failed', id: string): Promise<TaskRecord> {
  return JSON.parse(await fsp.readFile(ws.paths.record(dir, id), 'utf8')) as TaskRecord;
}

const valid = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify(recordFromDraft({ task_id: id, next_phase: 'work', input: 'hi', ...extra }));

describe('workspace configuration (spec: bindings-workspace#configuration)', () => {
  it('creates the tree and tap-workspace.json, and keeps its settings for good', async () => {
    const ws = await workspace({ claim_mode: 'lock', max_attempts: 5 });
    expect(JSON.parse(await fsp.readFile(ws.paths.config, 'utf8'))).toEqual({
      protocol: 'tap/1.0',
      claim_mode: 'lock',
      lease_ms: 2000,
      max_attempts: 5,
      history_limit: 100,
    });
    for (const d of [
      'tasks/pending',
      'tasks/processing',
      'tasks/awaiting',
      'tasks/completed',
      'tasks/failed',
      'tasks/history',
      'artifacts',
      'agents',
      'mailboxes',
    ]) {
      expect((await fsp.stat(join(ws.root, d))).isDirectory(), d).toBe(true);
    }
    expect((await initWorkspace(ws.root)).created).toBe(false);
    await expect(initWorkspace(ws.root, { claim_mode: 'rename' })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('refuses a directory without tap-workspace.json, and a workspace of another major version', async () => {
    const root = await scratchDir();
    cleanups.push(() => fsp.rm(root, { recursive: true, force: true }));
    await expect(openWorkspace(root)).rejects.toMatchObject({
      code: 'NOT_A_WORKSPACE',
      hint: expect.stringContaining('tapctl workspace init'),
    });
    await fsp.writeFile(
      join(root, 'tap-workspace.json'),
      JSON.stringify({ protocol: 'tap/2.0', claim_mode: 'rename', lease_ms: 1000, max_attempts: 3, history_limit: 10 }),
    );
    await expect(openWorkspace(root)).rejects.toMatchObject({ code: 'UNSUPPORTED_WORKSPACE' });
    await fsp.writeFile(join(root, 'tap-workspace.json'), JSON.stringify({ protocol: 'tap/1.0', claim_mode: 'nfs' }));
    await expect(openWorkspace(root)).rejects.toMatchObject({
      code: 'BAD_CONFIG',
      message: expect.stringContaining('"claim_mode" must be "rename" or "lock"'),
    });
  });
});

describe('submitting (spec: bindings-workspace#task-record)', () => {
  it('publishes a completed draft in pending/ with attempts 0, epoch 0 and status pending', async () => {
    const ws = await workspace();
    const { record, path } = await submitTask(ws, { task_id: 'first', next_phase: 'analysis', input: { text: 'x' } });
    expect(path).toBe(ws.paths.record('pending', 'first'));
    expect(await read(ws, 'pending', 'first')).toEqual(record);
    expect(record.state).toEqual({ attempts: 0, epoch: 0, last_error: null, checkpoint: null, processed_by: null, status: 'pending' });
    expect(record.context.current_input).toEqual({ text: 'x' });
  });

  it('refuses a task id that exists in any directory, an invalid record, and a record that is not new', async () => {
    const ws = await workspace();
    await submitTask(ws, { task_id: 'dup', next_phase: 'work', input: 1 });
    await claimPending(ws, 'dup', 0, 'someone');
    await expect(submitTask(ws, { task_id: 'dup', next_phase: 'work', input: 2 })).rejects.toMatchObject({
      code: 'TASK_EXISTS',
      message: expect.stringContaining('tasks/processing/'),
    });
    const bad = await submitTask(ws, { task_id: 'Bad Id', next_phase: 'work' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(WorkspaceError);
    expect((bad as WorkspaceError).details?.issues).toEqual([expect.objectContaining({ path: '/task_id' })]);
    await expect(submitTask(ws, { task_id: 'old', next_phase: 'work', state: { epoch: 4 } })).rejects.toMatchObject({
      code: 'INVALID_RECORD',
      message: expect.stringContaining('state.epoch must be 0'),
    });
    await expect(
      submitTask(ws, {
        task_id: 'esc',
        next_phase: 'work',
        context: {
          history: [{ agent: 'a', phase: 'p', timestamp: '2025-01-01T00:00:00Z', input: null, output: null, artifacts: ['../x'] }],
        },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_RECORD' });
  });
});

describe('refused task files (spec: bindings-workspace#task-record)', () => {
  it('moves malformed, schema-invalid and forged files to failed/ with a clear last_error, and keeps working', async () => {
    const ws = await workspace();
    const outside = await scratchDir('tap-outside-');
    cleanups.push(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.writeFile(join(outside, 'secret.txt'), 'do not read');
    await fsp.symlink(outside, join(ws.paths.artifacts, 'escape'));
    const entry = (artifacts: string[]) => ({
      agent: 'a',
      phase: 'p',
      timestamp: '2025-01-01T00:00:00Z',
      input: null,
      output: null,
      artifacts,
    });
    const files: Record<string, string> = {
      'not-json': '{"protocol": "tap/1.0", ',
      bom: '\ufeff' + valid('bom'),
      'top-array': '[1, 2]',
      'schema-invalid': JSON.stringify({ protocol: 'tap/1.0', task_id: 'schema-invalid' }),
      'wrong-protocol': valid('wrong-protocol', { protocol: 'tap/2.0' }),
      'other-name': valid('someone-else'),
      'dot-dot': valid('dot-dot', { context: { history: [entry(['../../etc/passwd'])] } }),
      absolute: valid('absolute', { context: { history: [entry(['/etc/passwd'])] } }),
      'symlink-out': valid('symlink-out', { context: { history: [entry(['escape/secret.txt'])] } }),
      'not-pending': valid('not-pending', { state: { status: 'completed' } }),
    };
    for (const [id, text] of Object.entries(files)) await fsp.writeFile(ws.paths.record('pending', id), text);
    await submitTask(ws, { task_id: 'good', next_phase: 'work', input: 'fine' });
    const events: RunnerEvent[] = [];
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: (ctx) => ({ output: ctx.input }),
      onEvent: (e) => events.push(e),
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(
      async () =>
        (await fsp.readdir(ws.paths.dir('failed'))).length === Object.keys(files).length &&
        (await locateTask(ws, 'good'))?.dir === 'completed',
      10_000,
      'every file to be handled',
    );

    const expected: Record<string, [string, RegExp]> = {
      'not-json': ['MALFORMED_MESSAGE', /not UTF-8 JSON/],
      bom: ['MALFORMED_MESSAGE', /byte order mark/],
      'top-array': ['MALFORMED_MESSAGE', /one JSON object/],
      'schema-invalid': ['INVALID_MESSAGE', /task-record\.schema\.json: \/created_at must have required property/],
      'wrong-protocol': ['UNSUPPORTED_VERSION', /tap\/2\.0/],
      'other-name': ['INVALID_MESSAGE', /task_id "someone-else" differs/],
      'dot-dot': ['INVALID_MESSAGE', /artifacts\/0 must match pattern/],
      absolute: ['INVALID_MESSAGE', /artifacts\/0 must match pattern/],
      'symlink-out': ['PERMISSION_DENIED', /escape\/secret\.txt.*symbolic link/],
      'not-pending': ['INVALID_MESSAGE', /state\.status "completed"/],
    };
    for (const [id, [code, message]] of Object.entries(expected)) {
      const rec = await read(ws, 'failed', id);
      expect(rec.task_id, id).toBe(id);
      expect(rec.state.status, id).toBe('failed');
      expect(rec.state.last_error?.code, id).toBe(code);
      expect(rec.state.last_error?.message, id).toMatch(message);
    }
    // A file that was not a record keeps an excerpt for the operator.
    expect((await read(ws, 'failed', 'not-json')).metadata['x-rejected-record']).toMatchObject({ excerpt: '{"protocol": "tap/1.0", ' });
    expect((await read(ws, 'completed', 'good')).context.history[0]).toMatchObject({ agent: 'worker', output: 'fine' });
    expect(events.filter((e) => e.type === 'rejected')).toHaveLength(Object.keys(files).length);
    expect(agent.holding()).toEqual([]);
  });

  it('ignores temporary files and names the binding does not define', async () => {
    const ws = await workspace();
    await fsp.writeFile(join(ws.paths.dir('pending'), '.tmp-abc'), 'half written');
    await fsp.writeFile(join(ws.paths.dir('pending'), 'README.txt'), 'notes');
    await fsp.writeFile(join(ws.paths.dir('pending'), 'Upper.tap.json'), valid('x'));
    await submitTask(ws, { task_id: 'real', next_phase: 'work', input: null });
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: () => ({ output: 1 }),
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(async () => (await locateTask(ws, 'real'))?.dir === 'completed', 5000, 'the real task');
    expect((await fsp.readdir(ws.paths.dir('pending'))).sort()).toEqual(['.tmp-abc', 'README.txt', 'Upper.tap.json']);
    expect(await fsp.readdir(ws.paths.dir('failed'))).toEqual([]);
  });
});

describe('phase routing (spec: bindings-workspace#phase-routing)', () => {
  it('claims only the phases an agent serves, for it or for anyone, and passes the task along the pipeline', async () => {
    const ws = await workspace();
    await submitTask(ws, { task_id: 'pipe', next_phase: 'analyse', input: 'brief', metadata: { pipeline: ['analyse', 'build'] } });
    await submitTask(ws, { task_id: 'for-b', next_phase: 'build', input: 'x', requirements: { target_agent: 'builder-b' } });
    await submitTask(ws, { task_id: 'other-phase', next_phase: 'deploy', input: 'x' });
    const seen: string[] = [];
    const handler = (ctx: { agentId: string; taskId: string; phase: string; input: unknown }) => {
      seen.push(`${ctx.agentId}:${ctx.taskId}:${ctx.phase}`);
      return { output: `${ctx.phase}(${JSON.stringify(ctx.input)})` };
    };
    const analyst = await runWorkspaceAgent({ workspace: ws, agentId: 'analyst', phases: ['analyse'], handler, pollMs: 50 });
    const builderA = await runWorkspaceAgent({ workspace: ws, agentId: 'builder-a', phases: ['build'], handler, pollMs: 50 });
    cleanups.push(
      () => analyst.stop(),
      () => builderA.stop(),
    );
    await waitFor(async () => (await locateTask(ws, 'pipe'))?.dir === 'completed', 5000, 'the pipeline');
    const pipe = await read(ws, 'completed', 'pipe');
    expect(pipe.context.history.map((h) => [h.agent, h.phase])).toEqual([
      ['analyst', 'analyse'],
      ['builder-a', 'build'],
    ]);
    expect(pipe.context.history[1]!.input).toBe('analyse("brief")');
    expect(pipe).toMatchObject({ current_phase: 'build', next_phase: null });
    // Targeted at builder-b: builder-a leaves it; nobody serves deploy.
    await new Promise((r) => setTimeout(r, 200));
    expect((await locateTask(ws, 'for-b'))?.dir).toBe('pending');
    expect((await locateTask(ws, 'other-phase'))?.dir).toBe('pending');
    const builderB = await runWorkspaceAgent({ workspace: ws, agentId: 'builder-b', phases: ['build'], handler, pollMs: 50 });
    cleanups.push(() => builderB.stop());
    await waitFor(async () => (await locateTask(ws, 'for-b'))?.dir === 'completed', 5000, 'the targeted task');
    expect(seen).not.toContain('builder-a:for-b:build');
    expect(JSON.parse(await fsp.readFile(join(ws.paths.agent('builder-b'), 'state.json'), 'utf8'))).toMatchObject({ phases: ['build'] });
  });
});

describe('history compaction (spec: bindings-workspace#history-compaction)', () => {
  it('moves older entries to tasks/history/<task_id>.<epoch>.jsonl behind a summary entry, and reads the whole history back', async () => {
    const ws = await workspace({ history_limit: 3 });
    const phases = Array.from({ length: 7 }, (_, i) => `step-${i}`);
    await submitTask(ws, { task_id: 'long', next_phase: 'step-0', input: 0, metadata: { pipeline: phases } });
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'stepper',
      phases: Object.fromEntries(phases.map((p, i) => [p, () => ({ output: i + 1 })])),
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(async () => (await locateTask(ws, 'long'))?.dir === 'completed', 10_000, 'seven phases');
    const rec = await read(ws, 'completed', 'long');
    expect(rec.context.history).toHaveLength(3);
    expect(rec.context.history[0]).toMatchObject({ summary: true, output: { compacted: 5, history_ref: 'long.7.jsonl' } });
    expect(rec.context.history.slice(1).map((h) => h.phase)).toEqual(['step-5', 'step-6']);
    expect(rec.history_ref).toBe('long.7.jsonl');
    const file = (await fsp.readFile(join(ws.paths.history, 'long.7.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { phase: string });
    expect(file.map((e) => e.phase)).toEqual(['step-0', 'step-1', 'step-2', 'step-3', 'step-4']);
    const all = await fullHistory(ws, rec);
    expect(all.entries.map((e) => e.output)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(all.compacted).toBe(5);
  });
});

describe('cancellation (spec: bindings-workspace#approval-and-cancel)', () => {
  it('cancels a pending task at once, and a running one through the cancel sidecar its claimant checks', async () => {
    const ws = await workspace({ lease_ms: 60_000 });
    await submitTask(ws, { task_id: 'waiting', next_phase: 'nobody-serves-this', input: null });
    expect(await cancelTask(ws, 'waiting', 'operator')).toBe('cancelled');
    expect((await read(ws, 'failed', 'waiting')).state).toMatchObject({ status: 'cancelled', epoch: 1, processed_by: 'operator' });

    await submitTask(ws, { task_id: 'busy', next_phase: 'work', input: null });
    let started = false;
    let seenCtx: PhaseContext | undefined;
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: (ctx) =>
        new Promise((_, reject) => {
          started = true;
          seenCtx = ctx;
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        }),
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(() => started, 5000, 'the phase to start');
    expect(await cancelTask(ws, 'busy', 'operator')).toBe('requested');
    expect(await seenCtx!.isCancelled()).toBe(true);
    await waitFor(async () => (await locateTask(ws, 'busy'))?.dir === 'failed', 5000, 'the cancellation');
    expect((await read(ws, 'failed', 'busy')).state).toMatchObject({ status: 'cancelled', processed_by: 'worker' });
    await expect(cancelTask(ws, 'busy', 'operator')).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('ends a phase that runs past timeout_seconds as timed_out', async () => {
    const ws = await workspace();
    await submitTask(ws, { task_id: 'slowpoke', next_phase: 'work', input: null, requirements: { timeout_seconds: 1 } });
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: () => new Promise(() => {}),
      graceMs: 50,
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(async () => (await locateTask(ws, 'slowpoke'))?.dir === 'failed', 5000, 'the timeout');
    expect((await read(ws, 'failed', 'slowpoke')).state).toMatchObject({ status: 'timed_out', last_error: { code: 'DEADLINE_EXCEEDED' } });
  });
});

describe('shutdown (spec: bindings-workspace#leases)', () => {
  it('releases the phase it holds back to pending/ with its checkpoint when stopped', async () => {
    const ws = await workspace();
    await submitTask(ws, { task_id: 'held', next_phase: 'work', input: null });
    let started = false;
    const agent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'worker',
      phases: ['work'],
      handler: async (ctx) => {
        await ctx.saveCheckpoint({ step: 2 });
        started = true;
        return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      },
      pollMs: 50,
    });
    await waitFor(() => started, 5000, 'the phase to start');
    await agent.stop();
    const rec = await read(ws, 'pending', 'held');
    expect(rec.state).toMatchObject({
      status: 'pending',
      attempts: 0,
      epoch: 1,
      checkpoint: { step: 2 },
      last_error: { code: 'SHUTTING_DOWN' },
    });
    expect(JSON.parse(await fsp.readFile(join(ws.paths.agent('worker'), 'state.json'), 'utf8'))).toMatchObject({ status: 'stopped' });
    expect((await fsp.readdir(ws.paths.dir('processing'))).filter((n) => !n.startsWith('.'))).toEqual([]);
  });
});
