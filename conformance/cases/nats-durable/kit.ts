/** Steps that several case files of the nats-durable profile share. */
import { defineCase, type Case, type Override } from '../../case.ts';
import { DurableView, type Entry, type Queue } from './durable-view.ts';
import type { TaskRecord } from '../../../reference/workspace/record.ts';
import type { CaseContext } from '../../context.ts';
import { harnessError, notTested, type Outcome } from '../../verdict.ts';
import { check, show, Stop } from '../kit.ts';
import { findingOutcome, seconds, surveyOf } from './durable-survey.ts';
import { DEFAULT_NAMES as S, deadSubject, eventSubject, resultSubject, taskSubject } from '../../../reference/jetstream/names.ts';
import { maxDeliveriesAdvisory, Wildcard } from '../../../reference/transports/nats/subjects.ts';

/** A case of the profile, as its file writes it: the one capability whose queue it uses stands for its needs. */
export type DurableCase = Omit<Case, 'level' | 'spec' | 'profile' | 'needs' | 'run'> &
  Override & {
    /** The conformance capability whose queue the case publishes to: it needs that capability, over NATS. */
    capability: string;
    /** The version the case needs of the agent (a case of 1.1 whose first requirement is of 1.0): SKIPPED against a 1.0 agent. */
    version?: '1.1';
    /** The body, given the harness's view of the agent's streams and the capability's queue as the survey found it. */
    run: (ctx: CaseContext, view: DurableView, queue: Queue) => Promise<Outcome>;
  };

/**
 * Defines a case against the agent's own queue of one capability: the run's survey first (a
 * profile that does not apply, or queues another agent serves, end every case alike; a capability
 * whose queue is not the agent's ends this one), then a DurableView of its own. A Stop ends the
 * case with its outcome, as in any case (defineCase runs the body inside attempt).
 */
export function durableCase({ capability, version, run, ...head }: DurableCase): Case {
  return defineCase({
    ...head,
    profile: 'nats-durable',
    needs: { binding: 'nats', capabilities: [capability], ...(version ? { version } : {}) },
    run: async (ctx) => {
      const survey = await surveyOf(ctx);
      if (survey.stop) return survey.stop;
      let view: DurableView | undefined;
      try {
        view = await DurableView.open(ctx).catch((err: Error) => {
          throw new Stop(harnessError(`the harness could not reach JetStream on the server again (${err.message})`));
        });
        const f = survey.findings.get(capability) ?? { kind: 'none' };
        if (f.kind !== 'own') throw new Stop(findingOutcome(capability, f)!);
        return await run(ctx, view, f.queue);
      } finally {
        await view?.close();
      }
    },
  });
}

export const states = (entries: Entry[]): Entry[] =>
  entries.filter((e) => e.message.type === 'task.event' && e.message.payload?.kind === 'state');

export const hasResult = (entries: Entry[]): boolean => entries.some((e) => e.message.type === 'task.result');

export const randomKey = (): string => `conformance-${Math.random().toString(36).slice(2, 12)}`;

/** The numbering rule of TAP-NATS-031: sequences 1, 2, 3 … in stream order. */
export function numbered(entries: Entry[], what: string): Outcome | null {
  const seqs = entries.map((e) => e.message.sequence);
  const bad = seqs.findIndex((s, i) => s !== i + 1);
  return check(bad < 0, `${what}: the task's messages in ${S.events} are not numbered 1, 2, 3 … in order`, '1 … n', show(seqs));
}

/**
 * Stores messages in a task's stream of TAP_EVENTS as an earlier delivery by the agent would have
 * (its source, Tap-Attempt `attempt`, sequences 1, 2, 3 …), before the record is queued.
 */
export async function plantEvents(
  view: DurableView,
  taskId: string,
  messages: readonly { type: string; payload: unknown }[],
  attempt = 0,
): Promise<void> {
  for (const [i, m] of messages.entries()) {
    const message = {
      protocol: 'tap/1.0',
      message_id: randomKey(),
      source: view.agentId,
      target: '*',
      timestamp: new Date().toISOString(),
      task_id: taskId,
      sequence: i + 1,
      ...m,
    };
    const h = view.lib.headers();
    h.set('Tap-Attempt', String(attempt));
    await view.publishRaw(eventSubject(S, taskId), JSON.stringify(message), { msgID: `${taskId}:${i + 1}`, headers: h });
  }
}

/** Waits until `capability` has at least `n` dead letters after `mark`, or `ms` pass; resolves with those there are. */
export async function deadLetters(
  view: DurableView,
  ctx: CaseContext,
  capability: string,
  mark: number,
  n: number,
  ms: number,
): Promise<TaskRecord[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await view.deadAfter(capability, mark);
    if (found.length >= n || Date.now() > deadline) return found;
    await ctx.sleep(50);
  }
}

/** The input of tap.test.fail that fails each delivery of its record retryably, so that the queue delivers it again. */
export const FAIL_RETRYABLY = { code: 'BUSY', retryable: true, message: 'retry me' };

/**
 * The deliveries of a record on `q`: a case that waits for each of them stops NOT-TESTED unless the
 * queue delivers a record `fewest` to 20 times.
 */
export function deliveriesOf(q: Queue, fewest: number): number {
  if (q.maxDeliver < fewest || q.maxDeliver > 20)
    throw new Stop(notTested(`${q.capability}'s queue delivers a record ${q.maxDeliver} times; this case needs ${fewest} to 20`));
  return q.maxDeliver;
}

/** How often a long wait tells the person running the suite how far it is. */
const PROGRESS_EVERY_MS = 15_000;

/** Resolves with `p`; a wait of `expectedMs` or more says what it waits for, then how long it has waited, every 15 s. */
export async function waiting<T>(ctx: CaseContext, what: string, expectedMs: number, p: Promise<T>): Promise<T> {
  if (expectedMs < PROGRESS_EVERY_MS) return p;
  const t0 = Date.now();
  ctx.inform(`${ctx.caseId}: ${what}; waiting about ${seconds(expectedMs)}`);
  const timer = setInterval(
    () => ctx.inform(`${ctx.caseId}: waited ${seconds(Date.now() - t0)} of about ${seconds(expectedMs)}`),
    PROGRESS_EVERY_MS,
  );
  try {
    return await p;
  } finally {
    clearInterval(timer);
  }
}

/** What TAP-NATS-052 asks of each stream: its subjects, retention and de-duplication window (0: the server's). */
export const STREAMS: readonly { name: string; subjects: string[]; retention: string; dedupMs: number }[] = [
  { name: S.tasks, subjects: [taskSubject(S, Wildcard.TAIL)], retention: 'workqueue', dedupMs: 120_000 },
  { name: S.results, subjects: [resultSubject(S, Wildcard.TAIL)], retention: 'limits', dedupMs: 0 },
  { name: S.events, subjects: [eventSubject(S, Wildcard.TAIL)], retention: 'limits', dedupMs: 120_000 },
  { name: S.dead, subjects: [deadSubject(S, Wildcard.TAIL)], retention: 'limits', dedupMs: 120_000 },
  { name: S.advisories, subjects: [maxDeliveriesAdvisory(S.tasks, Wildcard.TOKEN)], retention: 'workqueue', dedupMs: 0 },
];

/** The name of a capability's consumer (TAP-NATS-053). */
export const consumerOf = (capability: string): string => `tap-${capability.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/**
 * Watches, on one NATS connection, the acknowledgements of TAP_TASKS deliveries (`ack <stream
 * sequence>`) and the publishes to TAP_RESULTS (`result <task_id>`) in the order they reach the
 * server: NATS keeps the order of one client's messages, so the order seen is the runner's.
 */
export async function watchOrder(view: DurableView): Promise<{ seen: string[]; stop(): void }> {
  const seen: string[] = [];
  const subs = [
    view.nc.subscribe('$JS.ACK.>', {
      callback: (err, m) => {
        if (err) return;
        const tokens = m.subject.split('.');
        const at = tokens.indexOf(S.tasks);
        const body = new TextDecoder().decode(m.data).trim();
        if (at > 0 && (body === '' || body === '+ACK')) seen.push(`ack ${tokens[at + 3]}`);
      },
    }),
    view.nc.subscribe(resultSubject(S, Wildcard.TAIL), {
      callback: (err, m) => {
        if (!err) seen.push(`result ${m.subject.slice(S.prefix.length + '.results.'.length)}`);
      },
    }),
  ];
  await view.nc.flush();
  return { seen, stop: () => subs.forEach((sub) => sub.unsubscribe()) };
}

/** The replicas TAP-NATS-070 asks of a stream or bucket a runner created, on a cluster of `servers` servers. */
export const wantedReplicas = (servers: number): number => Math.min(3, Math.max(1, servers));

/** What differs from TAP-NATS-070 among streams found on a cluster of `servers` servers: one sentence per stream. */
export function replicaProblems(servers: number, found: ReadonlyArray<{ name: string; replicas: number | undefined }>): string[] {
  const want = wantedReplicas(servers);
  return found
    .filter((f) => (f.replicas ?? 1) !== want)
    .map(
      (f) =>
        `${f.name} has ${f.replicas ?? 1} replica${(f.replicas ?? 1) === 1 ? '' : 's'} on a cluster of ${servers} servers, not ${want}${
          (f.replicas ?? 1) < want ? ': the loss of the server holding it stops the durable tasks' : ''
        }`,
    );
}
