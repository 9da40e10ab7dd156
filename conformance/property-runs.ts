/**
 * The runs of the property-based cases (properties.ts): fast-check command models of the handshake
 * and of the task lifecycle. Each run is checked as it goes and, at its end, against the task rules
 * (the harness's judge), the exactly-once rule (tap.test.counter) and the no-lost-task rule. A failure
 * shrinks to a minimal command sequence and reports the seed, the path and the command that
 * replays it (spec: conformance#properties).
 */
import fc from 'fast-check';
import type { CaseContext } from './context.ts';
import { Broken } from './models/common.ts';
import { handshakeCommands, type Phase } from './models/handshake.ts';
import { finishRun, lifecycleCommands, lifeReal, type LifeModel } from './models/lifecycle.ts';
import type { Received } from './peer.ts';
import { quoteOf } from './requirements.ts';
import { fail, harnessError, pass, type Outcome } from './verdict.ts';

/** Runs a property with the run's seed, path and run count; turns the result into an Outcome. */
export async function runProperty<T>(
  ctx: CaseContext,
  caseId: string,
  prop: fc.IAsyncPropertyWithHooks<T>,
  budgetMs: number,
): Promise<Outcome> {
  const params: fc.Parameters<T> = {
    seed: ctx.env.seed,
    numRuns: ctx.env.runs,
    interruptAfterTimeLimit: budgetMs,
    markInterruptAsFailure: false,
    endOnFailure: false,
  };
  if (ctx.env.path !== undefined) params.path = ctx.env.path;
  const out = await fc.check(prop, params);
  if (!out.failed) return pass(`${out.numRuns} runs${out.interrupted ? ' (stopped early by the time budget)' : ''}, seed ${out.seed}`);
  const err = out.errorInstance;
  if (!(err instanceof Broken)) {
    return harnessError(`the property threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  const replay = ctx.env.replay(caseId, `--path ${out.counterexamplePath}`);
  const commands = readableSequence((out.counterexample ?? []) as unknown as readonly unknown[]);
  ctx.note(`shrunk after ${out.numShrinks} shrinks to the commands: ${commands.join(', ')}`);
  const steps = err.steps?.length ? err.steps : commands;
  const rule = err.requirement ? ` — breaks ${err.requirement}: “${quoteOf([err.requirement])}”` : '';
  const o = fail(
    `${err.message}${rule}; after ${steps.length === 1 ? 'this one message' : `these ${steps.length} messages`} (shrunk): ${steps.map((m, i) => `${i + 1}. ${m}`).join('; ')} — replay: ${replay}`,
    err.requirement ? `${err.requirement} holds in every run` : 'every run obeys the rule',
    `${err.message}, after: ${steps.join(' → ')}`,
  );
  return err.requirement ? { ...o, requirements: [err.requirement] } : o;
}

/**
 * Runs `fn`, one run of a property on connection `conn`; a Broken it throws carries the messages
 * the harness sent meanwhile, so that the shrunk failure reads as the messages that caused it.
 */
async function recording<T>(ctx: CaseContext, conn: number, fn: () => Promise<T>): Promise<T> {
  const from = ctx.transcript.entries.length;
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Broken && err.steps === undefined) {
      const sent = ctx.transcript.entries.slice(from).filter((e) => e.conn === conn && e.dir === 'out');
      err.steps = describeSent(sent.map((e) => e.text));
    }
    throw err;
  }
}

/** One line per message sent: its type and the members that tell it apart (a repeat says which it repeats). */
export function describeSent(texts: readonly string[]): string[] {
  const ids = new Map<string, number>();
  return texts.map((text, i) => {
    let m: Record<string, unknown> & { payload?: Record<string, unknown> };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return `${text.slice(0, 60)}…`;
    }
    const p = m.payload ?? {};
    const parts = [String(m.type)];
    if (typeof p.capability === 'string') parts.push(p.capability);
    if (typeof m.task_id === 'string') parts.push(`task_id ${m.task_id}`);
    if (typeof m.idempotency_key === 'string') parts.push(`idempotency_key ${m.idempotency_key}`);
    if (typeof p.last_sequence === 'number') parts.push(`last_sequence ${p.last_sequence}`);
    if (typeof p.decision === 'string') parts.push(`decision ${p.decision}`);
    if (Array.isArray(p.versions)) parts.push(`versions ${p.versions.join(',')}`);
    const id = typeof m.message_id === 'string' ? m.message_id : undefined;
    const first = id === undefined ? undefined : ids.get(id);
    if (first !== undefined) parts.push(`(repeat of ${first})`);
    else if (id !== undefined) ids.set(id, i + 1);
    return parts.join(' ');
  });
}

/** The messages of a shrunk counterexample that were sent, one line each, from its command sequence. */
export function readableSequence(counterexample: readonly unknown[]): string[] {
  for (const arg of counterexample) {
    if (arg === null || typeof arg !== 'object' || typeof (arg as Iterable<unknown>)[Symbol.iterator] !== 'function') continue;
    // fast-check's command wrappers say which commands ran; the rest were never sent.
    const items = [...(arg as Iterable<unknown>)];
    const ran = items.filter((c) => (c as { hasRan?: boolean }).hasRan !== false);
    return ran.map((c) => String(c));
  }
  return [fc.stringify(counterexample)];
}

/** The run of core.property.handshake: random handshake sequences on fresh connections. */
export async function runHandshakeProperty(ctx: CaseContext): Promise<Outcome> {
  const history: Received[][] = [];
  const prop = fc.asyncProperty(fc.commands(handshakeCommands, { maxCommands: 8 }), async (cmds) => {
    const c = await ctx.connect();
    if (!c.ok) throw new Broken(c.outcome.detail);
    const peer = c.value;
    const mark = peer.mark();
    try {
      await recording(ctx, peer.conn, () => fc.asyncModelRun(() => ({ model: { phase: 'fresh' as Phase }, real: { ctx, peer } }), cmds));
    } finally {
      history.push(peer.since(mark));
      const conn = ctx.connectionOf(peer);
      void peer.close().catch(() => {});
      setTimeout(() => conn?.kill?.('SIGKILL'), 2000).unref();
    }
  });
  return runProperty(ctx, 'core.property.handshake', prop, ctx.scaled(45_000));
}

/** The run of tasks.property.lifecycle: random task operations on one session, checked as a whole. */
export async function runLifecycleProperty(ctx: CaseContext): Promise<Outcome> {
  const s = await ctx.session({ params: { max_concurrent_tasks: 16 } });
  if (!s.ok) return s.outcome;
  const peer = s.value;
  let run = 0;
  const leftovers = new Set<string>();
  const prop = fc.asyncProperty(fc.scheduler(), fc.commands(lifecycleCommands, { maxCommands: 10 }), async (scheduler, cmds) => {
    // Tasks a failed run left running would count against the session's task limit.
    for (const id of [...leftovers]) {
      await peer.post('task.cancel', {}, { task_id: id });
      leftovers.delete(id);
    }
    const real = lifeReal(ctx, peer, ++run, leftovers, scheduler);
    const model: LifeModel = { tasks: [] };
    const mark = peer.mark();
    await recording(ctx, peer.conn, async () => {
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      await finishRun(model, real, mark);
    });
  });
  return runProperty(ctx, 'tasks.property.lifecycle', prop, ctx.scaled(55_000));
}
