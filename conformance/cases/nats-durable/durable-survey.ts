/**
 * Which durable queues are the agent's own (spec: bindings-nats#certification): the consumers of
 * TAP_TASKS that take the conformance capabilities' subjects, whether anyone pulls from each, and
 * which agent runs a record published to it. Observed once per run, before any case publishes,
 * so that the cases judge the agent under test only: never a consumer that an agent now gone
 * left behind, nor one whose records another agent runs.
 */
import type { ConsumerInfo } from '@nats-io/jetstream';
import { DEFAULT_NAMES as S, taskSubject } from '../../../reference/jetstream/names.ts';
import { buildSubject, Wildcard } from '../../../reference/transports/nats/subjects.ts';
import type { CaseContext } from '../../context.ts';
import { count, listOf } from '../../report/model.ts';
import { harnessError, notTested, unimplemented, type Outcome } from '../../verdict.ts';
import { DurableView, type Queue } from './durable-view.ts';
import { removal } from './durable-leftovers.ts';

/** A record per conformance capability that the agent runs at once: it tells who serves the queue. */
export const PROBES: Record<string, () => unknown> = {
  'tap.test.echo': () => ({ survey: 'who runs this queue' }),
  'tap.test.stream': () => ({ count: 1 }),
  'tap.test.sleep': () => ({ ms: 1 }),
  'tap.test.fail': () => ({ code: 'EXECUTION_FAILED', retryable: false, message: 'tap-conform asks who runs this queue' }),
  'tap.test.counter': () => ({ key: `survey-${Math.random().toString(36).slice(2, 12)}` }),
};

/** A consumer of TAP_TASKS as the survey saw it. */
export interface Consumer {
  name: string;
  ackWaitMs: number;
  maxDeliver: number;
}

/** What the survey found for one capability's queue. */
export type Finding =
  /** The agent under test runs its records (or the survey could not tell who does: the cases judge it). */
  | { kind: 'own'; queue: Queue }
  /** No consumer takes the capability's subject. */
  | { kind: 'none' }
  /** A consumer takes it, but no one pulls from it: it was left by an agent that is gone. */
  | { kind: 'stale'; consumer: Consumer }
  /** Another agent runs its records. */
  | { kind: 'foreign'; consumer: Consumer; agent: string };

/** The survey of a run: every case of the profile ends with `stop` when it is set. */
export interface Survey {
  stop?: Outcome;
  findings: Map<string, Finding>;
}

/** True if the subject filter `filter` (with * and > wildcards) takes `subject`. */
export function takesSubject(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

/** True if consumer `c` is given the messages of `subject` (an unfiltered consumer takes them all). */
export function takes(c: ConsumerInfo, subject: string): boolean {
  const filters = [c.config.filter_subject, ...(c.config.filter_subjects ?? [])].filter((f): f is string => !!f);
  return filters.length === 0 || filters.some((f) => takesSubject(f, subject));
}

export const summary = (c: ConsumerInfo): Consumer => ({
  name: c.name,
  ackWaitMs: Math.round((c.config.ack_wait ?? 30e9) / 1e6),
  maxDeliver: c.config.max_deliver ?? -1,
});

/** Seconds, for people: "30 s", "0.4 s". */
export const seconds = (ms: number): string => `${ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10} s`;

/** Why a capability's queue is not tested, or null when it is the agent's own. */
export function findingOutcome(capability: string, f: Finding): Outcome | null {
  if (f.kind === 'own') return null;
  if (f.kind === 'none')
    return notTested(`no durable queue serves ${capability}: no consumer of ${S.tasks} takes ${taskSubject(S, capability)}`);
  if (f.kind === 'stale')
    return notTested(
      `no durable queue serves ${capability}: no one pulls from consumer ${f.consumer.name} of ${S.tasks}, which takes ${taskSubject(S, capability)}; it was left by an agent that is gone (delete it with \`${removal([f.consumer.name])}\`)`,
    );
  return harnessError(`agent ${f.agent}, not the agent under test, ran the record published to ${capability}`);
}

/** One line for the person running the suite about consumers no one pulls from, and what to do. */
export function staleLine(stale: readonly { capability: string; consumer: Consumer }[]): string {
  const names = [...new Set(stale.map((s) => s.consumer.name))];
  const queues = `the ${stale.length === 1 ? 'queue' : 'queues'} of ${listOf(stale.map((s) => s.capability))}`;
  return names.length === 1
    ? `no one pulls from consumer ${names[0]} of ${S.tasks} (${queues}, ack_wait ${seconds(stale[0]!.consumer.ackWaitMs)}): it was left by an agent that is gone. Delete it with \`${removal(names)}\`, or start the agent that serves it`
    : `no one pulls from the consumers ${listOf(names)} of ${S.tasks} (${queues}): they were left by an agent that is gone. Delete them with \`${removal(names)}\`, or start the agent that serves them`;
}

/**
 * Samples the consumers of TAP_TASKS that take a conformance capability a few times: a consumer
 * with a pull request waiting (or a bound push subscription) has a live agent behind it.
 */
export async function sample(view: DurableView, ctx: CaseContext): Promise<{ consumers: ConsumerInfo[]; live: Set<string> }> {
  const live = new Set<string>();
  let consumers: ConsumerInfo[] = [];
  // A runner between two pull requests has none waiting for a moment: look several times.
  for (let round = 0; round < 8; round++) {
    consumers = [];
    for await (const c of view.jsm.consumers.list(S.tasks))
      if (Object.keys(PROBES).some((capability) => takes(c, taskSubject(S, capability)))) consumers.push(c);
    for (const c of consumers) if (c.num_waiting > 0 || c.push_bound) live.add(c.name);
    if (consumers.every((c) => live.has(c.name))) break;
    await ctx.sleep(250);
  }
  return { consumers, live };
}

/**
 * Publishes a record to the capability's queue and resolves with the `source` of its first stream
 * message, or, when none comes, with the code of the dead letter the probe became at once.
 */
export async function runner(view: DurableView, ctx: CaseContext, capability: string): Promise<{ source?: string; refused?: string }> {
  try {
    const mark = await view.deadMark();
    // For any agent: a runner of another agent hands back a record meant for the agent under test (TAP-NATS-055).
    const { record } = await view.publish(capability, PROBES[capability]!(), {
      record: (r) => ({ ...r, requirements: { ...r.requirements, target_agent: '' } }),
    });
    const entries = await view.stream(record.task_id, (e) => e.length > 0, ctx.scaled(5000));
    const source = entries[0]?.message.source;
    if (typeof source === 'string') return { source };
    const dead = await view.dead(capability, record.task_id, mark, 0);
    return dead?.state.last_error ? { refused: dead.state.last_error.code } : {};
  } catch {
    return {};
  }
}

export async function survey(ctx: CaseContext): Promise<Survey> {
  const findings = new Map<string, Finding>();
  let view: DurableView;
  try {
    view = await DurableView.open(ctx);
  } catch (err) {
    return {
      stop: unimplemented(
        `the agent serves no durable queue: the NATS server has no JetStream the harness can reach (${(err as Error).message})`,
      ),
      findings,
    };
  }
  try {
    const agentId = view.agentId;
    const queueStream = await view.jsm.streams.info(S.tasks).catch(() => null);
    if (!queueStream)
      return {
        stop: unimplemented(
          `the agent serves no durable queue: the NATS server has no stream ${S.tasks} (an agent built on runAgent, such as tap-reference-agent, serves its capabilities on durable queues when started with --durable)`,
        ),
        findings,
      };
    const seen = await sample(view, ctx);
    const signedOnly: string[] = [];
    await Promise.all(
      Object.keys(PROBES).map(async (capability) => {
        const takers = seen.consumers.filter((c) => takes(c, taskSubject(S, capability)));
        const live = takers.find((c) => seen.live.has(c.name));
        if (!live) {
          findings.set(capability, takers[0] ? { kind: 'stale', consumer: summary(takers[0]) } : { kind: 'none' });
          return;
        }
        const { source: by, refused } = await runner(view, ctx, capability);
        const c = summary(live);
        ctx.note(
          `${capability}: consumer ${c.name} (ack_wait ${c.ackWaitMs} ms, max_deliver ${c.maxDeliver}) is pulled from; the probe record was run by ${by ?? (refused ? `no one: it became a dead letter with ${refused}` : 'no one within 5 s')}`,
        );
        if (refused === 'INVALID_SIGNATURE') signedOnly.push(capability);
        findings.set(
          capability,
          by === undefined || by === agentId
            ? { kind: 'own', queue: { capability, consumer: c.name, ackWaitMs: c.ackWaitMs, maxDeliver: c.maxDeliver } }
            : { kind: 'foreign', consumer: c, agent: by },
        );
      }),
    );
    const all = Object.keys(PROBES).map((capability) => [capability, findings.get(capability)!] as const);
    const stale = all.flatMap(([capability, f]) => (f.kind === 'stale' ? [{ capability, consumer: f.consumer }] : []));
    if (stale.length > 0) {
      const line = staleLine(stale);
      ctx.note(line);
      ctx.inform(line);
    }
    // spec: bindings-nats#signed-records: runners with a trust file take only records signed by a principal in it.
    if (signedOnly.length > 0)
      return {
        stop: harnessError(
          `the agent's durable runners take only signed records: they dead-lettered tap-conform's ${view.signingKey ? 'signed' : 'unsigned'} probe of ${listOf(signedOnly)} with INVALID_SIGNATURE. ${view.signingKey ? `Add the public key of ${view.signingKey.principal} to their trust file` : 'Pass --signing-key with the key of a principal in their trust file'}`,
        ),
        findings,
      };
    const foreign = all.flatMap(([capability, f]) => (f.kind === 'foreign' ? [{ capability, ...f }] : []));
    if (foreign.length > 0) {
      const agents = [...new Set(foreign.map((f) => f.agent))];
      const which = listOf(foreign.map((f) => f.capability));
      return {
        stop: harnessError(
          `another agent serves the durable queues of this server: ${listOf(agents)} ran the records tap-conform published to the queues of ${which}, so these cases cannot judge ${agentId}. Stop ${listOf(agents)}, or test ${agentId} on a NATS server of its own`,
        ),
        findings,
      };
    }
    if (!all.some(([, f]) => f.kind === 'own')) {
      const names = [...new Set(stale.map((s) => s.consumer.name))];
      const why = stale.length
        ? `no one pulls from the ${count(names.length, 'consumer')} of ${S.tasks} that take the conformance capabilities (${listOf(names)}: left by an agent that is gone)`
        : `no consumer of ${S.tasks} takes ${buildSubject(taskSubject(S, 'tap.test'), Wildcard.TOKEN)}`;
      return { stop: unimplemented(`the agent serves no durable queue: ${why}`), findings };
    }
    return { findings };
  } finally {
    await view.close();
  }
}

/** The run's survey: made by the first case of the profile that asks, shared by the others. */
export function surveyOf(ctx: CaseContext): Promise<Survey> {
  const key = 'nats-durable:survey';
  let p = ctx.env.shared.get(key) as Promise<Survey> | undefined;
  if (p) {
    ctx.note('the durable queues were surveyed once for the run; the transcript of the case that surveyed them shows how');
    return p;
  }
  p = survey(ctx).catch((err: Error) => ({
    stop: harnessError(`the harness could not survey the durable queues: ${err.message}`),
    findings: new Map<string, Finding>(),
  }));
  ctx.env.shared.set(key, p);
  return p;
}
