/** Steps that several case files of the nats-durable profile share. */
import { defineCase, type Case, type Override } from '../../case.ts';
import { DurableView, type Entry, type Queue } from './durable-view.ts';
import type { TaskRecord } from '../../../reference/workspace/record.ts';
import type { CaseContext } from '../../context.ts';
import { harnessError, notTested, type Outcome } from '../../verdict.ts';
import { check, show, Stop } from '../kit.ts';
import { findingOutcome, surveyOf } from './durable-survey.ts';
import { DEFAULT_NAMES as S, eventSubject } from '../../../reference/jetstream/names.ts';

/** A case of the profile, as its file writes it: the one capability whose queue it uses stands for its needs. */
export type DurableCase = Omit<Case, 'level' | 'spec' | 'profile' | 'needs' | 'run'> &
  Override & {
    /** The conformance capability whose queue the case publishes to: it needs that capability, over NATS. */
    capability: string;
    /** The body, given the harness's view of the agent's streams and the capability's queue as the survey found it. */
    run: (ctx: CaseContext, view: DurableView, queue: Queue) => Promise<Outcome>;
  };

/**
 * Defines a case against the agent's own queue of one capability: the run's survey first (a
 * profile that does not apply, or queues another agent serves, end every case alike; a capability
 * whose queue is not the agent's ends this one), then a DurableView of its own. A Stop ends the
 * case with its outcome, as in any case (defineCase runs the body inside attempt).
 */
export function durableCase({ capability, run, ...head }: DurableCase): Case {
  return defineCase({
    ...head,
    profile: 'nats-durable',
    needs: { binding: 'nats', capabilities: [capability] },
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
    await view.js.publish(eventSubject(S, taskId), JSON.stringify(message), { msgID: `${taskId}:${i + 1}`, headers: h });
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
