import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { CaseContext, type RunEnv } from '../context.ts';
import type { Case } from '../case.ts';
import { Broken } from '../models/common.ts';
import { Cancel, finishRun, lifeReal, type LifeModel, type LifeReal, Status, SubmitSleep } from '../models/lifecycle.ts';
import { mutateTransport } from '../mutation/layer.ts';
import { MUTANTS } from '../mutation/mutants.ts';
import { ALL_CASES } from '../cases/index.ts';
import { runProperty } from '../property-runs.ts';
import { runCases } from '../runner.ts';
import { fail, pass } from '../verdict.ts';
import type { RawTransport } from '../../reference/transports/transport.ts';
import { MEMORY_KEY, memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

const lifecycleProperty = ALL_CASES.find((c) => c.id === 'tasks.property.lifecycle')!;

function ctx(path?: string): CaseContext {
  const env = {
    target: { kind: 'stdio', command: './agent', args: [], display: './agent' },
    probe: {},
    selfId: 'tap-conform',
    stepTimeoutMs: 1000,
    startupMs: 1000,
    timeScale: 1,
    seed: 42,
    runs: 50,
    path,
    replay: (id: string, extra?: string) => `tap-conform --seed 42 ${extra ?? ''} --only ${id} ./agent`.replace(/ +/g, ' '),
    debug: false,
    shared: new Map(),
  } as RunEnv;
  return new CaseContext(env, 'x.property');
}

/** A property that breaks once a list holds a number above 100: it shrinks to [101]. */
const prop = fc.asyncProperty(fc.array(fc.nat(1000)), async (xs) => {
  if (xs.some((x) => x > 100)) throw new Broken(`saw ${Math.max(...xs)}`);
});

describe('property failures (spec: conformance#properties)', () => {
  it('shrink, and report the minimal sequence and the replay command', async () => {
    const o = await runProperty(ctx(), 'x.property', prop, 10_000);
    expect(o.verdict).toBe('FAIL');
    expect(o.detail).toMatch(
      /^saw 101; after this one message \(shrunk\): 1\. 101 — replay: tap-conform --seed 42 --path [\d:]+ --only x\.property \.\/agent$/,
    );
    expect(o.observed).toBe('saw 101, after: 101');
  });

  it('name the one requirement broken and list the messages, not fast-check syntax', async () => {
    class Send {
      constructor(readonly type: string) {}
      check = () => true;
      run = async () => {
        if (this.type === 'handshake.ready') throw new Broken('a mismatched handshake.ready got handshake.go', 'TAP-HS-011');
      };
      toString = () => `send ${this.type}`;
    }
    const commands = fc.commands([fc.constantFrom('ping', 'handshake.init', 'handshake.ready').map((t) => new Send(t))], {
      maxCommands: 6,
    });
    const p = fc.asyncProperty(commands, async (cmds) => {
      await fc.asyncModelRun(() => ({ model: {}, real: {} }), cmds);
    });
    const o = await runProperty(ctx(), 'x.property', p, 10_000);
    expect(o.verdict).toBe('FAIL');
    expect(o.detail).toMatch(
      /^a mismatched handshake\.ready got handshake\.go — breaks TAP-HS-011: “.+”; after this one message \(shrunk\): 1\. send handshake\.ready — replay: /,
    );
    expect(o.detail).not.toMatch(/replayPath|\[object|CommandWrapper/);
    expect(o.expected).toBe('TAP-HS-011 holds in every run');
  });

  it('replay the same failure from its path', async () => {
    const first = await runProperty(ctx(), 'x.property', prop, 10_000);
    const path = /--path ([\d:]+) /.exec(first.detail)![1]!;
    const again = await runProperty(ctx(path), 'x.property', prop, 10_000);
    expect(again.verdict).toBe('FAIL');
    expect(again.observed).toBe(first.observed);
  });

  it('turn a non-agent exception into ERROR', async () => {
    const o = await runProperty(
      ctx(),
      'x.property',
      fc.asyncProperty(fc.nat(), async () => {
        throw new TypeError('harness bug');
      }),
      5_000,
    );
    expect(o.verdict).toBe('ERROR');
  });
});

describe('a lifecycle property failure against an agent that breaks one rule (spec: conformance#properties)', () => {
  afterAll(() => stopMemoryAgents());

  it('names that one requirement and lists the messages sent, shrunk', { timeout: 120_000 }, async () => {
    // A cancel of a completed task is answered with a snapshot instead of TASK_TERMINAL.
    const mutant = MUTANTS.find((m) => m.id === 'TAP-CAN-007:terminal-cancel-snapshot')!;
    const target = memoryTarget((t) => mutateTransport(t, mutant.make(), MEMORY_KEY));
    const env = await memoryEnv(target, { seed: 11, runs: 20, debug: false });
    const [r] = await runCases([lifecycleProperty], env, 1, 1);
    expect(r!.verdict).toBe('FAIL');
    expect(r!.requirements).toEqual(['TAP-CAN-007']);
    expect(r!.requirement).toBe('TAP-CAN-007');
    expect(r!.detail).toMatch(/^a cancel of a completed task got task\.snapshot.*, not TASK_TERMINAL — breaks TAP-CAN-007: “/);
    const others = lifecycleProperty.requirements.filter((id) => id !== 'TAP-CAN-007');
    for (const id of others) expect(r!.detail).not.toContain(id);
    // The shrunk run: the counter task, then the cancel that got the wrong answer.
    const steps = /\(shrunk\): (.*) — replay: /.exec(r!.detail)![1]!.split('; ');
    expect(steps[0]).toMatch(/^1\. task\.request tap\.test\.counter task_id \S+/);
    expect(steps.at(-1)).toMatch(/^\d+\. task\.cancel task_id \S+$/);
    expect(steps.length).toBeLessThanOrEqual(3);
    expect(r!.detail).not.toMatch(/replayPath|CommandWrapper|\[object|=>/);
  });
});

/** Waits `ms`, as a slow run does between two commands. */
class Pause implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly ms: number) {}
  check = () => true;
  run = () => new Promise<void>((r) => setTimeout(r, this.ms));
  toString = () => `pause ${this.ms} ms`;
}

/**
 * A case that runs one fixed sequence of the lifecycle model: a long sleep, a pause past the
 * agent's max_task_seconds of 1, then a status request, a cancel, and the run's end.
 */
const outlivedSleep: Case = {
  ...lifecycleProperty,
  id: 'x.lifecycle.outlived-sleep',
  run: async (ctx) => {
    const s = await ctx.session();
    if (!s.ok) return s.outcome;
    const real = lifeReal(ctx, s.value, 1, new Set(), fc.sample(fc.scheduler(), 1)[0]!);
    const model: LifeModel = { tasks: [] };
    const mark = s.value.mark();
    try {
      await fc.asyncModelRun(() => ({ model, real }), [new SubmitSleep(), new Pause(1300), new Status(0), new Cancel(0)]);
      await finishRun(model, real, mark);
    } catch (err) {
      if (!(err instanceof Broken)) throw err;
      return { ...fail(err.message, 'every rule', err.message), ...(err.requirement ? { requirements: [err.requirement] } : {}) };
    }
    return pass(`the sleep ended ${model.tasks[0]?.state}`);
  },
};

describe('a long sleep of the lifecycle model the agent ends by its max_task_seconds (spec: tasks#deadlines)', () => {
  afterAll(() => stopMemoryAgents());
  const limits = { max_concurrent_tasks: 64, max_task_seconds: 1 };

  it('is the agent’s right once the limit has passed: the model holds it timed_out', { timeout: 30_000 }, async () => {
    const env = await memoryEnv(memoryTarget(undefined, undefined, limits), { debug: false });
    const [r] = await runCases([outlivedSleep], env, 1, 1);
    expect(`${r!.verdict}: ${r!.detail}`).toBe('PASS: the sleep ended timed_out');
  });

  it('breaks TAP-TASK-015 when the card promised longer', { timeout: 30_000 }, async () => {
    // The agent ends tasks after 1 s, but the card it shows says 30.
    const claims30 = (t: RawTransport): RawTransport => {
      const send = t.send.bind(t);
      t.send = (text: string) => send(text.replace('"max_task_seconds":1,', '"max_task_seconds":30,'));
      return t;
    };
    const env = await memoryEnv(memoryTarget(claims30, undefined, limits), { debug: false });
    const [r] = await runCases([outlivedSleep], env, 1, 1);
    expect(r!.verdict).toBe('FAIL');
    expect(r!.requirements).toEqual(['TAP-TASK-015']);
    expect(r!.detail).toMatch(/^the sleep \S+ ended timed_out \d+ ms after its request, before max_task_seconds 30 had passed/);
  });
});
