/**
 * Small checks shared by the case files. Each returns null when the agent behaved, or the
 * FAIL outcome that says what was expected and what was observed.
 */
import { need, require } from '../case.ts';
import type { Peer, Received } from '../peer.ts';
import { canTransition, errorEntry, isTerminal } from '../schemas.ts';
import type { Wire } from '../session-state.ts';
import { describeMessage, startTask, collectUntilResult, type RequestOptions } from '../steps.ts';
import { fail, got, pass, skipped, type Got, type Outcome } from '../verdict.ts';
import { MAX_TASK_VAR } from '../target.ts';

/** FAIL unless `ok`. */
export function check(ok: boolean, detail: string, expected?: string, observed?: string): Outcome | null {
  return ok ? null : fail(detail, expected, observed);
}

/** The first outcome that is not null, or null. */
export function firstFailure(...outcomes: (Outcome | null | undefined)[]): Outcome | null {
  for (const o of outcomes) if (o) return o;
  return null;
}

/** All checks, or PASS with `detail`. */
export function verdictOf(detail: string, ...outcomes: (Outcome | null | undefined)[]): Outcome {
  return firstFailure(...outcomes) ?? pass(detail);
}

/** JSON text of a value for expected/observed lines, cut short. */
export function show(v: unknown, max = 300): string {
  const t = v === undefined ? 'nothing' : JSON.stringify(v);
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

/** Deep equality of JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  return ak.length === Object.keys(bo).length && ak.every((k) => k in bo && jsonEqual(ao[k], bo[k]));
}

export interface ErrorExpectation {
  /** The code(s) accepted. */
  code: string | string[];
  /** The request it must answer (reply_to). */
  replyTo?: string;
  /** The task_id it must carry. */
  taskId?: string;
  /** Check `retryable` against the registry default (default true). */
  registryRetryable?: boolean;
  /** The error must be marked fatal. */
  fatal?: boolean;
}

/** Checks that `m` is the expected error: code, reply_to, task_id, retryable as registered. */
export function checkError(m: Wire | undefined, e: ErrorExpectation, context: string): Outcome | null {
  const codes = Array.isArray(e.code) ? e.code : [e.code];
  const want = `error ${codes.join(' or ')}`;
  if (!m) return fail(`${context}: no reply`, want, 'nothing');
  if (m.type !== 'error' || !codes.includes(m.payload?.code))
    return fail(`${context}: expected ${want}, got ${describeMessage(m)}`, want, describeMessage(m));
  if (e.replyTo !== undefined && m.reply_to !== e.replyTo) {
    return fail(
      `${context}: the ${m.payload.code} error does not carry reply_to ${e.replyTo}`,
      `reply_to ${e.replyTo}`,
      `reply_to ${m.reply_to ?? 'absent'}`,
    );
  }
  if (e.taskId !== undefined && m.task_id !== e.taskId) {
    return fail(
      `${context}: the ${m.payload.code} error does not carry the request's task_id ${e.taskId}`,
      `task_id ${e.taskId}`,
      `task_id ${m.task_id ?? 'absent'}`,
    );
  }
  const reg = errorEntry(m.payload.code);
  if (e.registryRetryable !== false && reg && m.payload.retryable !== reg.retryable) {
    return fail(
      `${context}: ${m.payload.code} carries retryable ${m.payload.retryable}; the registry says ${reg.retryable}`,
      `retryable ${reg.retryable}`,
      `retryable ${m.payload.retryable}`,
    );
  }
  if (e.fatal && m.payload.fatal !== true)
    return fail(`${context}: ${m.payload.code} is not marked fatal`, 'fatal: true', `fatal: ${m.payload.fatal ?? 'absent'}`);
  return null;
}

/** Waits for the direct reply and checks it is the expected error. */
export async function expectError(peer: Peer, sent: Wire, e: Omit<ErrorExpectation, 'replyTo'>, context: string): Promise<Outcome | null> {
  const r = await peer.reply(sent);
  if (!r.ok) return r.outcome;
  return checkError(r.value.msg, { ...e, replyTo: sent.message_id, taskId: e.taskId ?? sent.task_id }, context);
}

/** Checks the session still works after a fault: a ping gets its pong. */
export async function expectAlive(peer: Peer, after: string): Promise<Outcome | null> {
  if (peer.closed) return fail(`the session did not survive ${after}: the connection closed`, 'the session goes on', 'connection closed');
  const p = await peer.ping();
  if (!p.ok) return fail(`the session did not survive ${after}: ${p.outcome.detail}`, 'a pong', p.outcome.observed ?? 'nothing');
  return null;
}

/**
 * After a round trip, checks that nothing matching `pred` arrived since `mark` (the agent gave
 * the message no effect).
 */
export async function expectNothing(peer: Peer, mark: number, pred: (r: Received) => boolean, what: string): Promise<Outcome | null> {
  await peer.barrier();
  const seen = peer.since(mark).find(pred);
  return seen ? fail(`${what}, but the agent sent ${describeMessage(seen.msg)}`, 'nothing', describeMessage(seen.msg)) : null;
}

/** Asks for a snapshot of a task. */
export async function status(peer: Peer, taskId: string): Promise<Got<Received>> {
  const sent = await peer.post('task.status', {}, { task_id: taskId });
  return peer.reply(sent);
}

/** Checks that a task does not exist for this session: task.status answers UNKNOWN_TASK. */
export async function expectNoTask(peer: Peer, taskId: string, why: string): Promise<Outcome | null> {
  const sent = await peer.post('task.status', {}, { task_id: taskId });
  const r = await peer.reply(sent);
  if (!r.ok) return r.outcome;
  if (r.value.msg.type === 'error' && r.value.msg.payload?.code === 'UNKNOWN_TASK') return null;
  return fail(
    `${why}, yet task.status for ${taskId} answers ${describeMessage(r.value.msg)}`,
    'error UNKNOWN_TASK (no task was created)',
    describeMessage(r.value.msg),
  );
}

/** Runs a task to its result: accepted, then everything up to task.result. */
export async function runTask(
  peer: Peer,
  capability: string,
  input: unknown,
  o: RequestOptions & { resultTimeoutMs?: number } = {},
): Promise<Got<{ taskId: string; sent: Wire; accepted: Received; stream: Received[]; result: Received }>> {
  const t = await startTask(peer, capability, input, o);
  if (!t.ok) return t;
  const r = await collectUntilResult(peer, t.value.taskId, o.resultTimeoutMs ?? peer.stepTimeoutMs);
  if (!r.ok) return r;
  return got({ ...t.value, ...r.value });
}

/** The states a task's stream announces, in order (accepted first, the terminal status last). */
export function statesOf(stream: readonly Received[]): string[] {
  const out: string[] = [];
  for (const r of stream) {
    const m = r.msg;
    if (m.type === 'task.accepted') out.push('accepted');
    else if (m.type === 'task.event' && m.payload?.kind === 'state') out.push(String(m.payload.state));
    else if (m.type === 'plan.submit' && out[out.length - 1] !== 'awaiting_approval') out.push('awaiting_approval');
    else if (m.type === 'task.result') out.push(String(m.payload?.status));
  }
  return out;
}

/** The output events of a stream. */
export function outputsOf(stream: readonly Received[]): Wire[] {
  return stream.filter((r) => r.msg.type === 'task.event' && r.msg.payload?.kind === 'output').map((r) => r.msg);
}

/** A FAIL for a reply of the wrong type. */
export function wrongReply(context: string, expected: string, m: Wire): Outcome {
  return fail(`${context}: expected ${expected}, got ${describeMessage(m)}`, expected, describeMessage(m));
}

/** Checks a list of announced states is a legal walk from accepted to a terminal state. */
export function checkWalk(states: string[], context: string): Outcome | null {
  if (states[0] !== 'accepted')
    return fail(`${context}: the stream does not start with task.accepted`, 'accepted first', states.join(' → '));
  for (let i = 1; i < states.length; i++) {
    if (!canTransition(states[i - 1]!, states[i]!)) {
      return fail(
        `${context}: ${states[i - 1]} → ${states[i]} is not in the state table (or a state event is missing)`,
        'only transitions listed in task-states.json, each announced',
        states.join(' → '),
      );
    }
  }
  const last = states[states.length - 1]!;
  if (!isTerminal(last))
    return fail(`${context}: the stream does not end in a terminal state`, 'a terminal state last', states.join(' → '));
  return null;
}

/** The plan the harness asks tap.test.plan to submit (a draft: no plan_id). */
export const PLAN = {
  intent: 'Write and publish two files for the conformance check.',
  steps: [
    { action: 'write', target: 'out/a.txt', expected_output: 'a file', reversible: true },
    { action: 'publish', target: 'wiki://conformance/a', expected_output: 'a page revision', reversible: false },
  ],
  rollback: 'Delete the file and restore the previous page revision.',
  estimated_cost: { tokens: 10, seconds: 1 },
  risk_level: 'low',
};

export { attempt, need, require, Stop } from '../case.ts';

/** FAIL unless the task's result is completed; `why` says what it means that it is not. */
export function completed(result: Received, why: string): Outcome | null {
  return check(result.msg.payload.status === 'completed', why, 'completed', describeMessage(result.msg));
}

/** One task of a task.page (TAP 1.1, spec: tasks#listing). */
export interface Listed {
  task_id: string;
  capability: string;
  state: string;
  created_at: string;
  updated_at: string;
  last_sequence: number;
}

/** Sends task.list with `payload` and waits for its direct reply. */
export async function listPage(peer: Peer, payload: Record<string, unknown>): Promise<{ sent: Wire; reply: Received }> {
  const sent = await peer.post('task.list', payload);
  const reply = need(await peer.reply(sent));
  return { sent, reply };
}

/**
 * Lists every page of a filter, following next_cursor from the first page (at most `maxPages`):
 * the tasks in the order listed and the size of each page; ends the case with a FAIL when a reply
 * is not a task.page or a page holds more than `limit` tasks (spec: tasks#listing).
 */
export async function walkTasks(
  peer: Peer,
  filter: Record<string, unknown>,
  limit: number,
  maxPages = 500,
): Promise<{ tasks: Listed[]; sizes: number[] }> {
  const tasks: Listed[] = [];
  const sizes: number[] = [];
  let cursor: unknown;
  do {
    const { reply } = await listPage(peer, { ...filter, limit, ...(cursor !== undefined ? { cursor } : {}) });
    if (reply.msg.type !== 'task.page') require(wrongReply(`task.list ${show({ ...filter, limit })}`, 'task.page', reply.msg));
    const page = (reply.msg.payload?.tasks ?? []) as Listed[];
    require(
      check(
        page.length <= limit,
        `a task.page answering a task.list of limit ${limit} holds ${page.length} tasks`,
        `at most ${limit} tasks`,
        `${page.length}`,
      ),
    );
    tasks.push(...page);
    sizes.push(page.length);
    cursor = reply.msg.payload?.next_cursor;
  } while (cursor !== undefined && sizes.length < maxPages);
  return { tasks, sizes };
}

/**
 * The SKIPPED of a case whose task ended timed_out before what the case waits for: the agent's own
 * max_task_seconds ran out first (an agent started with ${MAX_TASK_VAR}=2 for the deadline case), so
 * the task cannot show it. Never a FAIL: the agent kept its own limit (spec: tasks#deadlines).
 */
export function cutShort(peer: Peer, what: string): Outcome {
  const limit = peer.state.card?.limits?.max_task_seconds;
  return skipped(
    `the task ended timed_out, its max_task_seconds (${limit} s) run out, before ${what}: a task that short cannot show it. ` +
      `${MAX_TASK_VAR}=2 is for tasks.deadline.max-task-seconds; an agent started without it gets this case`,
  );
}

/**
 * Whether the agent's own max_task_seconds has run out for a task started at `since` (Date.now()
 * when the harness sent its request): a task that then ends timed_out kept the agent's limit.
 */
export function limitRanOut(peer: Peer, since: number): boolean {
  const limit = peer.state.card?.limits?.max_task_seconds;
  return typeof limit === 'number' && Date.now() - since >= limit * 1000;
}
