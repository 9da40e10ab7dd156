/**
 * Input required, TAP 1.1: a handler asks its requester for a value; the task waits in
 * input_required until a matching answer, a cancel, its deadline, a shutdown or the loss of its
 * session (spec: tasks#input-required, shutdown#input-shutdown).
 */
import type { PayloadOf } from '../../schemas/src/index.ts';
import { errorPayload, TapError } from '../core/errors.ts';
import { canonicalize } from '../core/jcs.ts';
import { issueList, validatePayload } from '../core/validate.ts';
import { TaskAborted } from './handler.ts';
import { answerValidator } from './input-schemas.ts';
import type { InputAsk, InputRecord } from './model.ts';
import type { Runtime } from './runtime.ts';
import type { TaskHost } from './task-host.ts';
import type { Task } from './tasks.ts';

/**
 * Asks the task's requester for input and resolves with the answer (spec: tasks#input-request).
 * In a session of 1.0 the task ends failed CAPABILITY_NOT_SUPPORTED instead, and the promise
 * rejects (TAP-INPUT-102).
 */
export function askInput(rt: Runtime, runner: TaskHost, task: Task, ask: InputAsk): Promise<unknown> {
  if (task.abort.aborted) return Promise.reject(task.abort.reason);
  if (rt.sessionOf(task)?.version === '1.0') {
    runner.finish(task, {
      status: 'failed',
      error: errorPayload(
        'CAPABILITY_NOT_SUPPORTED',
        `${task.capability} needs an answer from its requester, which a session of TAP 1.0 cannot carry; retry the task in a session of 1.1`,
        { reason: 'input_required' },
        { retryable: false },
      ),
    });
    return Promise.reject(new TaskAborted('ended', 'input cannot be asked in a session of 1.0'));
  }
  // A restarted task asking its pending question again waits for that request's answer (spec: tasks#durability).
  const restored = task.inputs?.pending;
  if (task.restored && task.state === 'input_required' && restored && restored.prompt === ask?.prompt) {
    if (canonicalize(restored.schema) === canonicalize(ask.schema))
      return new Promise<unknown>((resolve, reject) => (restored.waiter = { resolve, reject }));
  }
  if (task.state !== 'running') return Promise.reject(new Error(`input cannot be asked while the task is ${task.state}`));
  const inputs = (task.inputs ??= { asked: 0 });
  const request_id = `input-${inputs.asked + 1}`;
  // The request is checked before it goes: one its schema refuses would break the task's stream (spec: tasks#input-required).
  const issues = validatePayload('input.request', { request_id, prompt: ask?.prompt, schema: ask?.schema });
  if (issues) {
    return Promise.reject(new TypeError(`the input request is invalid (askInput takes { prompt, schema }): ${issueList(issues)}`));
  }
  let check: InputRecord['check'];
  try {
    check = answerValidator(ask.schema);
  } catch (err) {
    return Promise.reject(new Error(`the schema of the input request does not compile: ${(err as Error).message}`));
  }
  const record: InputRecord = { request_id, prompt: ask.prompt, schema: ask.schema, check };
  inputs.asked++;
  const answered = new Promise<unknown>((resolve, reject) => (record.waiter = { resolve, reject }));
  inputs.pending = record;
  // The state event, then the request as the next message of the stream (TAP-INPUT-101).
  runner.transition(task, 'input_required');
  runner.emit(task, 'input.request', { request_id: record.request_id, prompt: record.prompt, schema: record.schema });
  return answered;
}

/**
 * The request checks of an input.response, after the task checks: the task must wait for input
 * and the request must be its pending one (PROTOCOL_VIOLATION, TAP-INPUT-104).
 */
export function checkAnswerTarget(task: Task, payload: PayloadOf<'input.response'>): TapError | null {
  const pending = task.inputs?.pending;
  if (task.state !== 'input_required' || !pending) {
    return new TapError('PROTOCOL_VIOLATION', `task ${task.taskId} is ${task.state} and waits for no input`, {
      request_id: payload.request_id,
      state: task.state,
    });
  }
  if (pending.request_id !== payload.request_id) {
    return new TapError(
      'PROTOCOL_VIOLATION',
      `request ${payload.request_id} is not the pending input request of task ${task.taskId}; answer ${pending.request_id}`,
      { request_id: payload.request_id, pending_request_id: pending.request_id },
    );
  }
  return null;
}

/** The answer check: INVALID_ANSWER with details.issues when it does not match the schema; the task keeps waiting (TAP-INPUT-105). */
export function checkAnswer(task: Task, payload: PayloadOf<'input.response'>): TapError | null {
  const issues = task.inputs!.pending!.check(payload.answer);
  if (!issues) return null;
  const located = issues.map((i) => ({ ...i, path: `/payload/answer${i.path}` }));
  const first = located[0];
  return new TapError(
    'INVALID_ANSWER',
    `the answer does not match the schema of request ${payload.request_id}${first ? `: ${first.path} ${first.message}` : ''}; the task still waits, send a corrected answer`,
    { issues: located },
  );
}

/** Applies a checked answer, after its snapshot reply: running, and the handler goes on with it (TAP-INPUT-106). */
export function applyAnswer(runner: TaskHost, task: Task, payload: PayloadOf<'input.response'>): void {
  const pending = task.inputs!.pending!;
  task.inputs!.pending = undefined;
  runner.transition(task, 'running');
  pending.waiter?.resolve(payload.answer);
}

/** A pending request ends with its task or its entry into cancelling: the handler's ask rejects (spec: tasks#input-waiting). */
export function withdrawInput(task: Task): void {
  const pending = task.inputs?.pending;
  if (!pending) return;
  task.inputs!.pending = undefined;
  pending.waiter?.reject(task.abort.reason ?? new TaskAborted('ended', 'the input request was withdrawn'));
}

/**
 * Rebuilds the input requests of a task from its journaled stream at restart: each input.request
 * counts, and the last one is pending while the task is still input_required (spec: tasks#durability).
 */
export function restoreInput(task: Task, msg: { type: string; payload: Record<string, unknown> }): void {
  if (msg.type === 'input.request') {
    const p = msg.payload as PayloadOf<'input.request'>;
    const inputs = (task.inputs ??= { asked: 0 });
    inputs.asked++;
    let check: InputRecord['check'];
    try {
      check = answerValidator(p.schema);
    } catch {
      check = () => [{ path: '', keyword: 'schema', message: 'the schema of the request no longer compiles' }];
    }
    inputs.pending = { request_id: p.request_id, prompt: p.prompt, schema: p.schema, check };
  } else if (task.inputs?.pending && task.state !== 'input_required') {
    task.inputs.pending = undefined;
  }
}
