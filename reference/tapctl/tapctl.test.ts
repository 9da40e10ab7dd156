/** tapctl workspace: init, submit, status, show, decide, tail and reap, for people and with --json for scripts. */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  Reaper,
  claimPending,
  commitTransition,
  openWorkspace,
  prepare,
  runWorkspaceAgent,
  writeLease,
  type Plan,
} from '../workspace/index.ts';
import { HERE, scratchDir, waitFor } from '../workspace/workspace.testkit.ts';
import { runCli } from './cli.ts';
import { BUILTIN_COMMANDS } from './commands.ts';
import { findCommand, registerCommand } from './registry.ts';
import { tapctl } from './tapctl.testkit.ts';

const BIN = resolve(HERE, '../../bin/tapctl.mjs');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});
beforeAll(() => {
  for (const c of BUILTIN_COMMANDS) if (!findCommand(c.name)) registerCommand(c);
});

async function dir(): Promise<string> {
  const d = await scratchDir('tapctl-');
  cleanups.push(() => fsp.rm(d, { recursive: true, force: true }));
  return join(d, 'ws');
}

async function draft(content: unknown): Promise<string> {
  const d = await scratchDir('tapctl-draft-');
  cleanups.push(() => fsp.rm(d, { recursive: true, force: true }));
  const file = join(d, 'task.json');
  await fsp.writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('tapctl workspace init', () => {
  it('creates a workspace with the settings given, and leaves an existing one alone', async () => {
    const ws = await dir();
    const first = await tapctl('workspace', 'init', ws, '--claim-mode', 'lock', '--lease-ms', '1500', '--json');
    expect(first.code).toBe(0);
    expect(first.json()).toEqual({
      workspace: ws,
      created: true,
      config: { protocol: 'tap/1.0', claim_mode: 'lock', lease_ms: 1500, max_attempts: 3, history_limit: 100 },
    });
    const again = await tapctl('workspace', 'init', ws);
    expect(again.code).toBe(0);
    expect(again.out).toContain('is already a workspace');
    const clash = await tapctl('workspace', 'init', ws, '--claim-mode', 'rename');
    expect(clash.code).toBe(1);
    expect(clash.err).toMatch(
      /already a workspace with other settings \(claim_mode is "lock"\)\n {2}where: .*tap-workspace\.json\n {2}A workspace keeps its settings/,
    );
  });

  it('explains usage errors and points at the right --help', async () => {
    const bad = await tapctl('workspace', 'init', '/tmp/x', '--claim-mode', 'nfs');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--claim-mode must be "rename" or "lock", got "nfs"');
    expect(bad.err).toContain('Run tapctl workspace init --help for usage.');
    const missing = await tapctl('workspace', 'show');
    expect(missing.err).toContain('missing <dir> and <task_id>');
    const unknown = await tapctl('workspace', 'frobnicate');
    expect(unknown.err).toMatch(
      /unknown command "workspace frobnicate"\n {2}The workspace commands are: init, submit, status, show, decide, tail, reap\./,
    );
    expect((await tapctl()).code).toBe(2);
    expect((await tapctl('--help')).out).toContain('workspace');
  });
});

describe('tapctl workspace submit', () => {
  it('submits a draft, and refuses invalid JSON, invalid records and duplicates with the place and the fix', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws);
    const ok = await tapctl(
      'workspace',
      'submit',
      ws,
      await draft({ task_id: 'demo-1', next_phase: 'analysis', input: { brief: 'x' } }),
      '--json',
    );
    expect(ok.code).toBe(0);
    expect(ok.json()).toMatchObject({
      task_id: 'demo-1',
      path: join(ws, 'tasks/pending/demo-1.tap.json'),
      record: { state: { status: 'pending', epoch: 0 } },
    });
    const human = await tapctl(
      'workspace',
      'submit',
      ws,
      await draft({ task_id: 'demo-2', next_phase: 'analysis', requirements: { target_agent: 'analyst' } }),
    );
    expect(human.out).toBe('Submitted demo-2 to tasks/pending/ (next phase analysis, for analyst).\n');

    const dup = await tapctl('workspace', 'submit', ws, await draft({ task_id: 'demo-1', next_phase: 'analysis' }), '--json');
    expect(dup.code).toBe(1);
    expect(dup.json()).toMatchObject({ error: { code: 'TASK_EXISTS', hint: 'Choose another task_id.' } });
    const syntax = await tapctl('workspace', 'submit', ws, await draft('{"task_id": '));
    expect(syntax.err).toMatch(/is not valid JSON: .*\n {2}where: .*task\.json\n {2}Fix the JSON syntax/);
    const invalid = await tapctl('workspace', 'submit', ws, await draft({ task_id: 'Demo 3', next_phase: 4 }));
    expect(invalid.code).toBe(1);
    expect(invalid.err).toContain('/task_id: must match pattern');
    expect(invalid.err).toContain('/next_phase: must be string, or must be null');
    const missing = await tapctl('workspace', 'submit', ws, join(ws, 'nope.json'));
    expect(missing.err).toMatch(/no such file: .*nope\.json/);
    const notWs = await tapctl('workspace', 'submit', join(ws, 'tasks'), await draft({ next_phase: 'a' }));
    expect(notWs.err).toMatch(/is not a TAP workspace: it has no tap-workspace\.json\n.*\n {2}Run `tapctl workspace init <dir>`/);
  });
});

describe('tapctl workspace status and show', () => {
  it('reports counts, claims, dead letters and agents, and renders a finished task as a script', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws, '--lease-ms', '200', '--max-attempts', '1');
    const w = await openWorkspace(ws);
    await tapctl(
      'workspace',
      'submit',
      ws,
      await draft({ task_id: 'done-1', next_phase: 'one', input: 'in', metadata: { pipeline: ['one', 'two'] } }),
    );
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'stuck-1', next_phase: 'other', input: null }));
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'dead-1', next_phase: 'other', input: null }));
    const agent = await runWorkspaceAgent({
      workspace: w,
      agentId: 'worker',
      phases: {
        one: (ctx) => ({ output: `one(${ctx.input})` }),
        two: async (ctx) => ({ output: `two(${ctx.input})`, artifacts: [await ctx.writeArtifact('notes.md', '# notes')] }),
      },
      reap: false,
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(async () => (await fsp.readdir(join(ws, 'tasks/completed'))).length === 1, 5000, 'done-1');
    // One claim that renews, one left to the reaper (max_attempts 1: a dead letter).
    await claimPending(w, 'stuck-1', 0, 'holder');
    await writeLease(w, 'stuck-1', 1, { agent_id: 'holder', epoch: 1, renewals: 0 });
    await claimPending(w, 'dead-1', 0, 'ghost');
    let clock = 0;
    const reaper = new Reaper(w, { actor: 'test', now: () => clock });
    await reaper.pass();
    await writeLease(w, 'stuck-1', 1, { agent_id: 'holder', epoch: 1, renewals: 1 });
    clock = 500;
    await reaper.pass();

    const status = await tapctl('workspace', 'status', ws, '--json');
    expect(status.code).toBe(0);
    const s = status.json();
    expect(s.counts).toEqual({ pending: 0, processing: 1, awaiting: 0, completed: 1, failed: 1 });
    expect(s.claims).toEqual([expect.objectContaining({ task_id: 'stuck-1', epoch: 1, phase: 'other', holder: 'holder', renewals: 1 })]);
    expect(s.dead_letters).toEqual([expect.objectContaining({ task_id: 'dead-1', code: 'MAX_ATTEMPTS' })]);
    expect(s.agents).toEqual([expect.objectContaining({ agent_id: 'worker', state: expect.objectContaining({ phases: ['one', 'two'] }) })]);
    const human = await tapctl('workspace', 'status', ws);
    expect(human.out).toMatch(/completed +1/);
    expect(human.out).toMatch(/failed +1 +\(1 dead letter\)/);
    expect(human.out).toMatch(/stuck-1 @1 +other +held by holder/);
    expect(human.out).toMatch(/worker +(idle|busy) +phases one, two +heartbeat .* ago/);

    const shown = await tapctl('workspace', 'show', ws, 'done-1');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('Task done-1: completed');
    expect(shown.out).toContain('pipeline: one → two');
    expect(shown.out).toMatch(/1\. one, by worker at .*\n +input +in\n +output +one\(in\)/);
    expect(shown.out).toMatch(
      /2\. two, by worker at .*\n +input +the output of 1\n +output +two\(one\(in\)\)\n +artifacts +artifacts\/done-1\/2\/notes\.md/,
    );
    const json = (await tapctl('workspace', 'show', ws, 'done-1', '--json')).json();
    expect(json).toMatchObject({ task_id: 'done-1', location: { dir: 'completed', kind: 'record' }, compacted: 0 });
    expect(json.history.map((h: { phase: string }) => h.phase)).toEqual(['one', 'two']);
    const running = await tapctl('workspace', 'show', ws, 'stuck-1');
    expect(running.out).toContain('Now: phase other is claimed (epoch 1) by holder.');
    const dead = await tapctl('workspace', 'show', ws, 'dead-1');
    expect(dead.out).toMatch(/Now: failed in tasks\/failed\/ during phase other\.\n {2}dead letter: MAX_ATTEMPTS: /);
  });
});

describe('tapctl workspace decide (spec: bindings-workspace#approval-and-cancel)', () => {
  const plan = {
    plan_id: 'p-1',
    intent: 'Publish the digest.',
    steps: [{ action: 'publish', target: 'wiki://digest', expected_output: 'a wiki revision', reversible: true }],
    rollback: 'Restore the previous revision.',
    estimated_cost: { seconds: 5 },
    risk_level: 'low',
  };

  it('writes the decision on the current plan, refuses a stale plan id, and show and status render the plan and the decision', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws);
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'plan-1', next_phase: 'deploy', input: null }));
    const w = await openWorkspace(ws);
    let approved: unknown = null;
    const agent = await runWorkspaceAgent({
      workspace: w,
      agentId: 'planner',
      phases: {
        deploy: (ctx) => (ctx.approvedPlan ? ((approved = ctx.approvedPlan), { output: 'published' }) : ctx.submitPlan(plan as Plan)),
      },
      pollMs: 20,
      reap: false,
    });
    cleanups.push(() => agent.stop());
    await waitFor(
      () =>
        fsp.access(w.paths.record('awaiting', 'plan-1')).then(
          () => true,
          () => false,
        ),
      5000,
      'the record in awaiting/',
    );

    const shown = await tapctl('workspace', 'show', ws, 'plan-1');
    expect(shown.out).toContain(
      'Now: waiting in tasks/awaiting/ for a decision on plan p-1 before phase deploy runs (any agent serving it).',
    );
    expect(shown.out).toContain('  step 1      publish → wiki://digest (a wiki revision)');
    expect(shown.out).toContain('  decision    none yet: tapctl workspace decide');
    const counted = (await tapctl('workspace', 'status', ws, '--json')).json();
    expect(counted.counts.awaiting).toBe(1);
    expect(counted.awaiting).toEqual([expect.objectContaining({ task_id: 'plan-1', plan_id: 'p-1', state: 'waiting' })]);

    const usage = await tapctl('workspace', 'decide', ws, 'plan-1', '--approve', '--reject');
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('give only one of --approve, --reject and --revise');
    const none = await tapctl('workspace', 'decide', ws, 'plan-1');
    expect(none.code).toBe(2);
    const stale = await tapctl('workspace', 'decide', ws, 'plan-1', '--approve', '--plan-id', 'p-0', '--json');
    expect(stale.code).toBe(1);
    expect(stale.err).toMatch(/plan "p-0" is not the current plan of plan-1; the current plan is "p-1"\n {2}where: .*plan-1\.plan\.json/);
    expect(stale.json().error.code).toBe('STALE_PLAN');
    const missing = await tapctl('workspace', 'decide', ws, 'nope', '--reject');
    expect(missing).toMatchObject({ code: 1, err: expect.stringContaining('no task "nope"') });

    const ok = await tapctl('workspace', 'decide', ws, 'plan-1', '--approve', '--feedback', 'Go ahead.', '--json');
    expect(ok.code).toBe(0);
    expect(ok.json()).toMatchObject({ task_id: 'plan-1', plan_id: 'p-1', decision: 'approved', feedback: 'Go ahead.', replaced: false });
    await waitFor(
      () =>
        fsp.access(w.paths.record('completed', 'plan-1')).then(
          () => true,
          () => false,
        ),
      5000,
      'the completed record',
    );
    expect(approved).toEqual(plan);
    const done = await tapctl('workspace', 'show', ws, 'plan-1');
    expect(done.out).toContain('     plan        p-1, approved — Go ahead.');
    const late = await tapctl('workspace', 'decide', ws, 'plan-1', '--revise', 'smaller');
    expect(late).toMatchObject({
      code: 1,
      err: expect.stringContaining('task plan-1 is not waiting for a plan decision: it is in tasks/completed/'),
    });
  });

  it('shows a decision file that cannot be acted on in status', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws);
    const w = await openWorkspace(ws);
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'bad-1', next_phase: 'deploy', input: null }));
    const claim = (await claimPending(w, 'bad-1', 0, 'planner'))!;
    const rec = {
      ...JSON.parse(Buffer.from(claim.bytes).toString('utf8')),
      state: { attempts: 0, epoch: 1, last_error: null, checkpoint: null, processed_by: 'planner', status: 'awaiting_approval' },
    };
    await fsp.writeFile(w.paths.plan('bad-1'), JSON.stringify(plan));
    await commitTransition(w, claim, prepare(rec), 'planner');
    await fsp.writeFile(w.paths.decision('bad-1'), '{"plan_id": "p-1", "decision": "maybe"}');
    const human = await tapctl('workspace', 'status', ws);
    expect(human.out).toMatch(
      /Awaiting approval\n {2}bad-1 +deploy +plan p-1 +bad-decision: tasks\/awaiting\/bad-1\.decision\.json is refused: it does not match plan\.decision\.payload\.schema\.json/,
    );
    const shown = await tapctl('workspace', 'show', ws, 'bad-1');
    expect(shown.out).toContain('  problem     tasks/awaiting/bad-1.decision.json is refused');
  });
});

describe('tapctl workspace tail and reap', () => {
  it('tail prints live events until interrupted', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws);
    const controller = new AbortController();
    let out = '';
    const tail = runCli(['workspace', 'tail', ws, '--json', '--interval-ms', '20'], {
      io: { out: (t) => void (out += t), err: () => {} },
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 100));
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'live', next_phase: 'go', input: 1 }));
    // The agent starts once the tail has seen the task queued, so a slow machine cannot skip that event.
    await waitFor(() => out.includes('"queued"'), 15_000, 'a queued event');
    const agent = await runWorkspaceAgent({ workspace: ws, agentId: 'runner', phases: ['go'], handler: () => ({ output: 2 }), pollMs: 50 });
    cleanups.push(() => agent.stop());
    await waitFor(() => out.includes('"completed"'), 15_000, 'a completed event');
    controller.abort();
    expect(await tail).toBe(0);
    const kinds = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; task_id?: string });
    expect(kinds).toContainEqual(expect.objectContaining({ kind: 'queued', task_id: 'live' }));
    expect(kinds).toContainEqual(expect.objectContaining({ kind: 'agent', agent_id: 'runner' }));
    expect(kinds).toContainEqual(expect.objectContaining({ kind: 'completed', task_id: 'live', by: 'runner' }));
  });

  it('reap watches for lease_ms by its own clock, then returns the expired claim', async () => {
    const ws = await dir();
    await tapctl('workspace', 'init', ws, '--lease-ms', '150');
    await tapctl('workspace', 'submit', ws, await draft({ task_id: 'orphan', next_phase: 'go', input: null }));
    await claimPending(await openWorkspace(ws), 'orphan', 0, 'gone-agent');
    const started = Date.now();
    const reaped = await tapctl('workspace', 'reap', ws, '--json');
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(reaped.code).toBe(0);
    expect(reaped.json().actions).toEqual([expect.objectContaining({ task_id: 'orphan', action: 'requeued', attempts: 1 })]);
    const nothing = await tapctl('workspace', 'reap', ws);
    expect(nothing.out).toBe('Nothing to reap: every claim renewed its lease while watched.\n');
  });
});

describe('the tapctl executable', () => {
  it('runs through bin/tapctl.mjs and exits with the command status', async () => {
    const ws = await dir();
    const run = promisify(execFile);
    await tapctl('workspace', 'init', ws);
    const failed = await run(process.execPath, [BIN, 'workspace', 'show', ws, 'missing']).catch((e: { code: number; stderr: string }) => e);
    expect(failed).toMatchObject({ code: 1, stderr: expect.stringContaining('no task "missing"') });
  }, 30_000);
});
