/**
 * Restart: rebuilds sessions, tasks, idempotency records and the durable store from the
 * journal, resumes the tasks that were non-terminal at the crash and ends those a crash
 * interrupted mid-step failed and indeterminate, never re-running them; and builds the
 * compacted journal of the current state (spec: tasks#durability, tasks#journal, shutdown#restart).
 */
import type { TaskState } from '../../schemas/src/index.ts';
import { errorPayload, isTerminal } from '../core/index.ts';
import type { JournalRecord } from './journal.ts';
import type { Plan, PlanState } from './model.ts';
import { restoreInput } from './input.ts';
import { scheduleHolding } from './plans.ts';
import type { Runtime } from './runtime.ts';
import { Session, type SessionInfo } from './sessions.ts';
import { endSession } from './shutdown.ts';
import type { TaskRunner } from './task-runner.ts';
import { journaledTrace } from './journal-limits.ts';
import { PairMap } from '../core/pair-map.ts';
import { newTask } from './new-task.ts';
import { compactFingerprint } from './fingerprint.ts';
import type { Task } from './tasks.ts';

/** Applies the journal's records, read one at a time, to an empty runtime. */
export function replayJournal(rt: Runtime, records: Iterable<JournalRecord>): void {
  const infos = new Map<string, SessionInfo>();
  const tasks = new PairMap<Task>();
  const retainedBytes = new Map<Task, number>();
  const maxTaskBytes = rt.journal?.limits.maxTaskBytes ?? Number.POSITIVE_INFINITY;
  const find = (r: { principal: string; task_id: string }): Task | undefined => tasks.get(r.principal, r.task_id);
  for (const r of records) {
    switch (r.t) {
      case 'session':
        infos.set(r.info.id, r.info);
        break;
      case 'session-end':
        infos.delete(r.id);
        break;
      case 'task': {
        const fingerprint = compactFingerprint(r.fingerprint);
        const task = newTask({
          principal: r.principal,
          taskId: r.task_id,
          sessionId: r.session_id,
          capability: r.capability,
          input: r.input,
          authorization: r.authorization as Task['authorization'],
          fingerprint,
          idempotencyKey: r.idempotency_key,
          previousTaskId: r.previous_task_id,
          attempt: r.attempt,
          trace: r.trace,
          carried: r.carried,
          delegation: r.delegation,
          quiet: r.quiet ? true : undefined,
          createdAt: r.created_at,
          deadline: r.deadline,
        });
        tasks.set(r.principal, r.task_id, task);
        if (r.idempotency_key !== undefined) {
          rt.idempotency.set({
            principal: r.principal,
            capability: r.capability,
            key: r.idempotency_key,
            fingerprint,
            taskId: r.task_id,
            released: false,
          });
        }
        break;
      }
      case 'msg': {
        const task = find(r);
        if (!task) break;
        if (task.retained.length === 0) task.firstRetained = r.seq;
        task.retained.push(r.text);
        retainedBytes.set(task, (retainedBytes.get(task) ?? 0) + r.text.length);
        while (
          task.retained.length > 1 &&
          (task.retained.length > rt.settings.maxRetainedMessages || retainedBytes.get(task)! > maxTaskBytes)
        ) {
          retainedBytes.set(task, retainedBytes.get(task)! - task.retained.shift()!.length);
          task.firstRetained++;
        }
        task.lastSequence = r.seq;
        task.state = r.state as TaskState;
        task.updatedAt = r.at;
        const msg = JSON.parse(r.text) as { type: string; payload: Record<string, unknown> };
        if (msg.type === 'task.result') task.result = msg.payload as unknown as Task['result'];
        if (msg.type === 'plan.submit') {
          const plan = msg.payload.plan as Plan;
          if (!task.plans.some((p) => p.plan.plan_id === plan.plan_id)) {
            task.plans.push({
              plan,
              state: 'pending',
              revisionOf: msg.payload.revision_of as string | undefined,
              feedback: msg.payload.feedback as string | undefined,
            });
          }
        }
        restoreInput(task, msg);
        break;
      }
      case 'bind':
        if (find(r)) find(r)!.sessionId = r.session_id;
        break;
      case 'cancel':
        if (find(r)) find(r)!.cancelRequested = true;
        break;
      case 'ckpt':
        if (find(r)) find(r)!.checkpoint = r.checkpoint;
        break;
      case 'effect': {
        const task = find(r);
        if (task && r.phase === 'begin') task.effectsBegun++;
        if (task && r.phase === 'end') task.effectsEnded++;
        break;
      }
      case 'plan': {
        const task = find(r);
        if (!task) break;
        let plan = task.plans.find((p) => p.plan.plan_id === r.plan_id);
        if (!plan && r.plan)
          task.plans.push((plan = { plan: r.plan, state: r.state as PlanState, revisionOf: r.revision_of, feedback: r.feedback }));
        if (plan) plan.state = r.state as PlanState;
        break;
      }
      case 'release': {
        const record = rt.idempotency.get(r.principal, r.capability, r.key);
        if (record) record.released = true;
        break;
      }
      case 'kv':
        rt.store.set(r.key, r.value);
        break;
    }
  }
  for (const info of infos.values()) {
    const session = new Session(info, rt.out, rt.settings);
    if (info.keyId !== undefined) {
      const key = rt.keys.get(info.keyId);
      if (key) session.signing = { keyId: key.keyId, key: key.key };
    }
    session.established = true;
    rt.sessions.set(info.id, session);
  }
  for (const task of tasks.values()) {
    // A task of an anonymous session draws on its origin's share again (spec: limits#sources).
    const share = infos.get(task.sessionId)?.share;
    if (share !== undefined) task.share = share;
    rt.tasks.add(task);
  }
}

/**
 * Continues after replay: restored sessions wait for a resume for the resume window; each
 * non-terminal task resumes from its checkpoint, unless a crash interrupted one of its side
 * effects (or one ended after its last checkpoint), which ends it failed and indeterminate
 * (spec: tasks#durability).
 */
export function resumeAfterRestart(rt: Runtime, runner: TaskRunner): void {
  // Compaction may fail on a full disk; the journal then stays as it is and the agent still starts.
  rt.journal?.compact();
  for (const session of rt.sessions.values()) {
    session.orphanedAt = rt.now();
    session.resumeTimer = rt.clock.setTimeout(() => {
      session.resumeTimer = undefined;
      void endSession(rt, runner, session, 'SESSION_LOST', 'the session was not resumed within its resume window after a restart', false);
    }, rt.settings.resumeWindowMs);
  }
  for (const task of rt.tasks.all()) {
    try {
      resumeTask(rt, runner, task);
    } catch (err) {
      // A record that cannot be written now (a full disk): the task stays as journaled and is resumed at the next restart.
      rt.log('error', `could not resume task ${task.taskId}: ${(err as Error).message}`);
    }
  }
}

function resumeTask(rt: Runtime, runner: TaskRunner, task: Task): void {
  if (isTerminal(task.state)) return;
  if (!rt.sessionOf(task)) {
    rt.log('warn', `task ${task.taskId} lost its session in the crash; it ends failed`);
    task.state = 'failed';
    task.result = {
      status: 'failed',
      error: errorPayload('SESSION_LOST', 'the session ended while the agent restarted', undefined, { retryable: false }),
    };
    return;
  }
  const interrupted = task.effectsBegun > task.effectsEnded;
  const unrecorded = task.effectsEnded > 0 && (task.checkpoint?.effects ?? 0) < task.effectsEnded;
  // A quiet task journals no state events: a cancel taken is its cancelling (spec: tasks#quiet-tasks).
  if (task.quiet && task.cancelRequested && task.state !== 'accepted' && task.state !== 'cancelling') runner.transition(task, 'cancelling');
  if (task.state === 'cancelling' || (task.quiet && task.cancelRequested)) {
    runner.finish(task, { status: 'cancelled' });
  } else if (interrupted || unrecorded) {
    runner.finish(task, {
      status: 'failed',
      error: errorPayload(
        'INTERNAL_ERROR',
        'the agent restarted in the middle of a step of this task; the step is not run again',
        { indeterminate: true },
        { retryable: false },
      ),
    });
  } else {
    runner.armDeadline(task);
    if (task.state === 'accepted') {
      // A quiet task may have run past accepted without a record of it: it resumes from its checkpoint.
      if (task.quiet && task.checkpoint) task.restored = task.checkpoint;
      queueMicrotask(() => runner.start(task));
    } else {
      task.restored = task.checkpoint ?? { state: {} };
      for (const plan of task.plans) if (plan.state === 'pending' || plan.state === 'holding') scheduleHolding(rt, runner, task, plan);
      runner.run(task);
    }
  }
}

/**
 * The records that rebuild the current state, for compaction: sessions (with those journaled
 * but not yet established), tasks with at most `maxTaskBytes` of their latest retained
 * messages, released idempotency keys and the durable store (spec: tasks#journal).
 */
export function* compactedRecords(rt: Runtime): Generator<JournalRecord> {
  const maxTaskBytes = rt.journal?.limits.maxTaskBytes ?? Number.POSITIVE_INFINITY;
  for (const session of rt.sessions.values()) yield { t: 'session', info: session.info() };
  for (const info of rt.journal?.journaledSessions() ?? []) if (!rt.sessions.has(info.id)) yield { t: 'session', info };
  for (const t of [...rt.tasks.all()]) {
    const ref = { principal: t.principal, task_id: t.taskId };
    yield {
      t: 'task',
      ...ref,
      session_id: t.sessionId,
      capability: t.capability,
      input: t.input,
      authorization: t.authorization,
      fingerprint: t.fingerprint,
      idempotency_key: t.idempotencyKey,
      previous_task_id: t.previousTaskId,
      attempt: t.attempt,
      created_at: t.createdAt,
      deadline: t.deadline,
      ...(t.quiet ? { quiet: true as const } : {}),
      ...journaledTrace(t),
    };
    let first = t.retained.length - 1;
    for (let bytes = t.retained[first]?.length ?? 0; first > 0 && bytes + t.retained[first - 1]!.length <= maxTaskBytes; first--)
      bytes += t.retained[first - 1]!.length;
    for (let i = Math.max(first, 0); i < t.retained.length; i++)
      yield { t: 'msg', ...ref, seq: t.firstRetained + i, text: t.retained[i]!, state: t.state, at: t.updatedAt };
    if (t.cancelRequested) yield { t: 'cancel', ...ref };
    if (t.checkpoint) yield { t: 'ckpt', ...ref, checkpoint: t.checkpoint };
    for (let i = 0; i < t.effectsBegun; i++) yield { t: 'effect', ...ref, phase: 'begin' };
    for (let i = 0; i < t.effectsEnded; i++) yield { t: 'effect', ...ref, phase: 'end' };
    for (const p of t.plans) {
      yield {
        t: 'plan',
        ...ref,
        plan_id: p.plan.plan_id,
        state: p.state,
        plan: p.plan,
        revision_of: p.revisionOf,
        feedback: p.feedback,
      };
    }
  }
  for (const r of [...rt.idempotency.all()])
    if (r.released) yield { t: 'release', principal: r.principal, capability: r.capability, key: r.key };
  for (const [key, value] of [...rt.store]) yield { t: 'kv', key, value };
}
