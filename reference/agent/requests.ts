/**
 * The task requests after the common pipeline: task.request (task_id and idempotency →
 * SHUTTING_DOWN → deadline → capability → authorization → BUSY), task.status, task.cancel,
 * task.resume and plan.decision (spec: errors#order-of-checks, tasks, cancellation, resume,
 * idempotency, plans#decision).
 */
import type { MessageOf, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { fitsUtf8 } from '../core/decode.ts';
import {
  DEFAULT_DELEGATION_DEPTH,
  delegationProblem,
  errorPayload,
  isTerminal,
  negotiatesExtensions,
  newMessageId,
  traceContextOf,
  traceDisagreement,
  type ErrorPayload,
  type TraceContext,
} from '../core/index.ts';
import type { AgentExtension } from './options.ts';
import { buildMessage, iso } from './outbound.ts';
import { authorizationProblem, grantOf } from './grants.ts';
import { journaledTrace, journalProblem, persistOrRefuse } from './journal-limits.ts';
import { keptTableProblem } from './table-limits.ts';
import { listTasks } from './listing.ts';
import { applyDecision, checkDecision } from './plans.ts';
import { applyAnswer, checkAnswer, checkAnswerTarget } from './input.ts';
import type { Replier } from './replier.ts';
import type { Session } from './sessions.ts';
import { newTask } from './new-task.ts';
import { describeSource, isOriginShare } from './shares.ts';
import { snapshotOf, traceOf, type Task } from './tasks.ts';
import { fingerprint } from './fingerprint.ts';

/**
 * What a new task's stream carries besides its trace: the request's trace context and the
 * metadata of each extension the session uses (spec: envelope#trace-context, handshake#negotiated-extensions).
 */
function carriedOf(
  extensions: readonly AgentExtension[],
  session: Session,
  context: TraceContext | undefined,
): Record<string, unknown> | undefined {
  const carried: Record<string, unknown> = {};
  for (const e of extensions) if (e.metadata && session.extensions.includes(e.uri)) Object.assign(carried, e.metadata);
  Object.assign(carried, context);
  return Object.keys(carried).length ? carried : undefined;
}

/** Handles a task or plan request of an established session. */
export function handleRequest(conn: Replier, session: Session, msg: TapMessage): void {
  switch (msg.type) {
    case 'task.request':
      return onTaskRequest(conn, session, msg);
    case 'task.status':
    case 'task.cancel':
    case 'task.resume':
    case 'plan.decision':
    case 'input.response':
      return onTaskMessage(conn, session, msg);
    case 'task.list':
      return onTaskList(conn, session, msg);
    default:
      conn.refuse(errorPayload('UNKNOWN_MESSAGE_TYPE', `an agent does not accept ${msg.type}`), { replyTo: msg.message_id });
  }
}

/** task.list: a page of the principal's tasks, or INVALID_CURSOR (spec: tasks#listing). */
function onTaskList(conn: Replier, session: Session, msg: MessageOf<'task.list'>): void {
  const build = (page: PayloadOf<'task.page'>) =>
    buildMessage(conn.rt.out, session.addressing(), 'task.page', page, { reply_to: msg.message_id });
  const page = listTasks(conn.rt, session.principal, msg.payload, (p) => fitsUtf8(build(p), session.params.max_message_bytes));
  if ('code' in page) return conn.refuse(page, { replyTo: msg.message_id });
  conn.reply(build(page));
}

/** The direct reply "here is the task now", before the request's effects (spec: tasks#status). */
function replySnapshot(conn: Replier, session: Session, task: Task, replyTo: string): void {
  // The snapshot shares the task's result; its duplicate is rebuilt from it, not kept as a second copy (spec: limits#table-limits).
  const payload = snapshotOf(task, iso);
  const to = session.addressing();
  const rebuild = { message_id: conn.rt.out.nextId?.() ?? newMessageId(conn.rt.random), timestamp: iso(conn.rt.now()) };
  const build = () => buildMessage(conn.rt.out, to, 'task.snapshot', payload, { task_id: task.taskId, reply_to: replyTo, rebuild });
  conn.reply(build(), { rebuild: build, bytes: SNAPSHOT_RECIPE_BYTES });
}

/** What a rebuildable snapshot costs the duplicate table: ids, addressing and the closure. */
const SNAPSHOT_RECIPE_BYTES = 512;
/** What a quiet request's remembered replay costs the duplicate table: a record of its task, whose stream is counted with the task. */
const QUIET_RECIPE_BYTES = 128;

/**
 * The remembered reply of a quiet request: the stream sent so far. Made apart from the request's
 * handling, so that the duplicate table keeps the task alone, not the request and its closures: one
 * small object, no closure.
 */
class QuietReplay {
  readonly bytes = QUIET_RECIPE_BYTES;
  constructor(private readonly task: Task) {}
  replay(): readonly string[] {
    return this.task.retained.slice();
  }
}

function onTaskRequest(conn: Replier, session: Session, msg: MessageOf<'task.request'>): void {
  const rt = conn.rt;
  const p = msg.payload;
  const taskId = msg.task_id!; // required by the task.request schema
  const to = { replyTo: msg.message_id, taskId };
  const refuse = (error: ErrorPayload): void => conn.refuse(error, to);
  // In 1.1, a traceparent agrees with trace_id and span_id (spec: envelope#trace-context); its form the schema checked.
  const withContext = negotiatesExtensions(session.version);
  const disagreement = withContext ? traceDisagreement(msg.metadata) : null;
  if (disagreement) {
    return refuse(
      errorPayload('INVALID_MESSAGE', `${disagreement}; send the trace id and span of the traceparent, or leave trace_id and span_id out`, {
        issues: [{ path: '/metadata/traceparent', keyword: 'trace-context', message: disagreement }],
      }),
    );
  }
  const now = rt.now();
  const entry = rt.capabilities.get(p.capability);
  const fp = fingerprint(p.capability, p.input);

  // A repeated request gets the original task's snapshot, once its authorization still holds (spec: idempotency#retries).
  const retry = (original: Task): void => {
    const problem = authorizationProblem(entry?.capability, p.authorization, now, session);
    if (problem) return refuse(problem);
    replySnapshot(conn, session, original, msg.message_id);
  };
  const existing = rt.tasks.get(session.principal, taskId);
  if (existing) {
    if (existing.fingerprint !== fp) {
      return refuse(errorPayload('TASK_EXISTS', `task ${taskId} exists with a different request`, { task_id: taskId }));
    }
    return retry(existing);
  }
  let previousTaskId: string | undefined;
  if (msg.idempotency_key !== undefined) {
    const record = rt.idempotency.get(session.principal, p.capability, msg.idempotency_key);
    if (record && !record.released) {
      if (record.fingerprint !== fp) {
        return refuse(
          errorPayload('IDEMPOTENCY_CONFLICT', `idempotency key ${JSON.stringify(msg.idempotency_key)} was used for a different request`, {
            task_id: record.taskId,
          }),
        );
      }
      const original = rt.tasks.get(session.principal, record.taskId);
      if (original) return retry(original);
    } else if (record?.released) {
      previousTaskId = record.taskId;
    }
  }
  if (rt.shuttingDown || session.ending)
    return refuse(errorPayload('SHUTTING_DOWN', 'the session is shutting down and takes no new tasks'));
  if (msg.deadline !== undefined && !(Date.parse(msg.deadline) > now)) {
    return refuse(errorPayload('DEADLINE_EXCEEDED', `the request arrived after its deadline ${msg.deadline}`, { deadline: msg.deadline }));
  }
  // A task that came back along its own delegation path, or one too deep, is refused (spec: mesh#delegation).
  const delegation = withContext && p.delegation?.length ? p.delegation : undefined;
  const loop =
    delegation && delegationProblem(rt.card.agent_id, rt.card.limits.max_delegation_depth ?? DEFAULT_DELEGATION_DEPTH, delegation);
  if (loop) return refuse(loop);
  if (!entry)
    return refuse(errorPayload('CAPABILITY_NOT_SUPPORTED', `this agent has no capability ${p.capability}`, { capability: p.capability }));
  const inputIssues = entry.validateInput?.(p.input, conn.frameText);
  if (inputIssues) {
    const issues = inputIssues.map((i) => ({ ...i, path: `/payload/input${i.path}` }));
    return refuse(errorPayload('INVALID_MESSAGE', `the input does not match the input schema of ${p.capability}`, { issues }));
  }
  const problem = authorizationProblem(entry.capability, p.authorization, now, session);
  if (problem) return refuse(problem);
  const busy = busyProblem(conn, session) ?? journalProblem(rt, session.principal);
  if (busy) return refuse(busy);
  // Room in the task table is made only from tasks past their retention; otherwise BUSY (spec: limits#table-limits).
  const full = keptTableProblem(rt, session.principal);
  if (full) return refuse(full);

  // The capability's name as the card holds it: one string every task of it shares, its hash known.
  const capability = entry.capability.name;
  // Effective deadline (spec: tasks#deadlines).
  let deadline = now + rt.card.limits.max_task_seconds * 1000;
  if (p.timeout_ms !== undefined) deadline = Math.min(deadline, now + p.timeout_ms);
  if (msg.deadline !== undefined) deadline = Math.min(deadline, Date.parse(msg.deadline));
  // Quiet only in a session of 1.1; a session of 1.0 ignores the member (spec: tasks#quiet-1-0).
  const quiet = p.quiet === true && session.version !== '1.0';
  const task = newTask({
    principal: session.principal,
    share: session.share !== session.principal ? session.share : undefined,
    taskId,
    sessionId: session.id,
    capability,
    input: p.input,
    authorization: grantOf(session, p.authorization),
    fingerprint: fp,
    idempotencyKey: msg.idempotency_key,
    previousTaskId,
    attempt: msg.metadata?.attempt ?? 1,
    trace: traceOf(msg.metadata),
    carried: carriedOf(rt.settings.extensions, session, withContext ? traceContextOf(msg.metadata) : undefined),
    delegation: delegation ? [...delegation] : undefined,
    quiet: quiet ? true : undefined,
    createdAt: now,
    deadline,
  });
  // The journal record and the idempotency record come before task.accepted (spec: tasks#durability);
  // a task that could not be made durable is not acknowledged (spec: tasks#journal). Without a journal there is no record to make.
  const durable =
    rt.journal &&
    persistOrRefuse(rt, {
      t: 'task',
      principal: task.principal,
      task_id: task.taskId,
      session_id: task.sessionId,
      capability: task.capability,
      input: task.input,
      authorization: task.authorization,
      fingerprint: fp,
      idempotency_key: task.idempotencyKey,
      previous_task_id: previousTaskId,
      attempt: task.attempt,
      created_at: now,
      deadline,
      ...(quiet ? { quiet: true as const } : {}),
      ...journaledTrace(task),
    });
  if (durable) return refuse(durable);
  if (task.idempotencyKey !== undefined) {
    rt.idempotency.set({
      principal: task.principal,
      capability: task.capability,
      key: task.idempotencyKey,
      fingerprint: fp,
      taskId: task.taskId,
      released: false,
    });
  }
  // No task of this id was found above, and nothing ran since.
  rt.tasks.add(task, true);
  rt.monitor.taskAccepted(task);
  if (quiet) {
    // No direct reply: a duplicate of the request gets what the stream has sent so far (spec: tasks#quiet-requests).
    conn.remember(new QuietReplay(task));
  } else {
    const payload: MessageOf<'task.accepted'>['payload'] = { capability: task.capability, deadline: iso(deadline) };
    if (previousTaskId !== undefined) payload.previous_task_id = previousTaskId;
    conn.reply(conn.runner.emit(task, 'task.accepted', payload, msg.message_id, false));
  }
  conn.runner.armDeadline(task);
  conn.runner.start(task);
}

/**
 * BUSY: the caps per session, per principal and per agent; the anonymous sessions of one origin
 * count as one principal (spec: limits#concurrency, limits#sources).
 */
function busyProblem(conn: Replier, session: Session): ErrorPayload | null {
  const rt = conn.rt;
  const limits = rt.card.limits;
  const active = rt.tasks.activeCounts(session.id, session.share);
  const whose = isOriginShare(session.share) ? ` of ${describeSource(session.share)}` : '';
  return (
    capProblem('session', active.session, session.params.max_concurrent_tasks) ??
    capProblem('principal', active.principal, limits.max_tasks_per_principal, whose) ??
    capProblem('agent', active.all, limits.max_concurrent_tasks)
  );
}

function capProblem(scope: string, active: number, max: number | undefined, whose = ''): ErrorPayload | null {
  if (max === undefined || active < max) return null;
  return errorPayload('BUSY', `${active} unfinished tasks${whose} already use the ${scope} limit of ${max}; retry later`, {
    scope,
    limit: max,
  });
}

type TaskMessage =
  | MessageOf<'task.status'>
  | MessageOf<'task.cancel'>
  | MessageOf<'task.resume'>
  | MessageOf<'plan.decision'>
  | MessageOf<'input.response'>;

function onTaskMessage(conn: Replier, session: Session, msg: TaskMessage): void {
  const rt = conn.rt;
  const taskId = msg.task_id!; // required by each of these schemas
  const to = { replyTo: msg.message_id, taskId };
  const task = rt.tasks.get(session.principal, taskId);
  if (!task) return conn.refuse(unknownTask(taskId), to);
  switch (msg.type) {
    case 'task.status':
      return replySnapshot(conn, session, task, msg.message_id);
    case 'task.cancel':
      // spec: cancellation#repeated-cancels
      if (isTerminal(task.state) && !(task.result?.status === 'cancelled' && task.cancelRequested)) {
        return conn.refuse(errorPayload('TASK_TERMINAL', `task ${task.taskId} already ended ${task.state}`, { state: task.state }), to);
      }
      replySnapshot(conn, session, task, msg.message_id);
      return conn.runner.cancel(task);
    case 'task.resume': {
      // The stream belongs to the session that created the task (spec: resume#attachment).
      if (task.sessionId !== session.id) {
        return conn.refuse(
          errorPayload(
            'PROTOCOL_VIOLATION',
            `task ${task.taskId} belongs to another session of this principal; follow it with task.status`,
          ),
          to,
        );
      }
      const refusal = replayTask(conn, session, task, task.taskId, msg.payload.last_sequence, msg.message_id);
      if (refusal) conn.refuse(refusal, to);
      return;
    }
    case 'plan.decision': {
      // Task checks, then plan checks, then shutdown (spec: errors#order-of-checks, plans#decisions).
      if (isTerminal(task.state)) {
        return conn.refuse(errorPayload('TASK_TERMINAL', `task ${task.taskId} already ended ${task.state}`, { state: task.state }), to);
      }
      const violation = checkDecision(task, msg.payload);
      if (violation) return conn.refuse(violation.payload, to);
      // A rejection starts no work, so it is taken even during shutdown (spec: shutdown#rejection).
      if ((rt.shuttingDown || session.ending) && msg.payload.decision !== 'rejected')
        return conn.refuse(errorPayload('SHUTTING_DOWN', 'the session is shutting down and takes no approvals or revisions'), to);
      replySnapshot(conn, session, task, msg.message_id);
      return applyDecision(rt, conn.runner, task, msg.payload);
    }
    case 'input.response': {
      // Task checks, then the request, then shutdown, then the answer (spec: tasks#input-response, shutdown#input-shutdown).
      if (isTerminal(task.state)) {
        return conn.refuse(errorPayload('TASK_TERMINAL', `task ${task.taskId} already ended ${task.state}`, { state: task.state }), to);
      }
      const violation = checkAnswerTarget(task, msg.payload);
      if (violation) return conn.refuse(violation.payload, to);
      if (rt.shuttingDown || session.ending)
        return conn.refuse(
          errorPayload('SHUTTING_DOWN', 'the session is shutting down and takes no answers; the task will be handed off'),
          to,
        );
      const wrong = checkAnswer(task, msg.payload);
      if (wrong) return conn.refuse(wrong.payload, to);
      replySnapshot(conn, session, task, msg.message_id);
      return applyAnswer(conn.runner, task, msg.payload);
    }
  }
}

function unknownTask(taskId: string): ErrorPayload {
  return errorPayload('UNKNOWN_TASK', `no task ${taskId} in this session`, { task_id: taskId });
}

/**
 * Re-sends a task's stream after `lastSequence`, byte for byte, before any live message, and
 * moves the task's stream to this session; with `replyTo`, a snapshot is the direct reply first.
 * Returns the refusal when the task is unknown or its messages are no longer retained
 * (spec: resume#replay, resume#retention).
 */
export function replayTask(
  conn: Replier,
  session: Session,
  task: Task | undefined,
  taskId: string,
  lastSequence: number,
  replyTo?: string,
): ErrorPayload | null {
  if (!task) return unknownTask(taskId);
  // A quiet task's sequence 1 is its unsent acceptance: its stream starts at 2 (spec: tasks#quiet-sequences).
  const from = Math.max(lastSequence + 1, task.quiet ? 2 : 1);
  if (from <= task.lastSequence && from < task.firstRetained) {
    return errorPayload('RESUME_UNAVAILABLE', `messages of task ${taskId} before sequence ${task.firstRetained} are no longer retained`, {
      earliest_sequence: task.firstRetained,
    });
  }
  if (replyTo !== undefined) replySnapshot(conn, session, task, replyTo);
  if (task.sessionId !== session.id) {
    conn.rt.persist({ t: 'bind', principal: task.principal, task_id: task.taskId, session_id: session.id });
    task.sessionId = session.id;
  }
  for (let seq = Math.max(from, task.firstRetained); seq <= task.lastSequence; seq++) {
    conn.send(task.retained[seq - task.firstRetained]!);
  }
  return null;
}
