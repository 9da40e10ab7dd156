/**
 * tapctl nats submit: queues a durable task for a capability and, with --wait, waits for its
 * finished record in TAP_RESULTS (spec: bindings-nats#task-queue, bindings-nats#idempotency).
 */
import { Kvm } from '../../transports/nats/client.ts';
import type { TaskRecord } from '../../workspace/record.ts';
import { ensureStreams, resultSubject, taskSubject } from '../../jetstream/streams.ts';
import { idempotencyKey, submitDurable } from '../../jetstream/submit.ts';
import { CliError, type CommandContext } from '../registry.ts';
import { excerpt, printJson } from '../workspace/format.ts';
import { openNats, readStream, requireStream, type NatsSession } from './connection.ts';

/** Options of `tapctl nats submit` after parsing. */
export interface SubmitOptions {
  server: string;
  json: boolean;
  capability: string;
  input: unknown;
  idempotencyKey?: string;
  principal: string;
  wait: boolean;
  timeoutMs: number;
  createStreams: boolean;
  replicas: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The task that holds an idempotency key: the one a runner claimed it for, or the one queued with it. */
async function ownerOf(s: NatsSession, o: SubmitOptions): Promise<string | undefined> {
  const kv = await new Kvm(s.nc).open(s.names.idempotency);
  const owner = await kv.get(idempotencyKey(o.principal, o.capability, o.idempotencyKey!)).catch(() => null);
  if (owner?.string()) return owner.string();
  const queued = await readStream<TaskRecord>(s, s.names.tasks, taskSubject(s.names, o.capability), Number.MAX_SAFE_INTEGER);
  return queued.find((r) => {
    const idem = (r.value?.metadata as { 'x-idempotency'?: { principal: string; key: string } } | undefined)?.['x-idempotency'];
    return idem?.principal === o.principal && idem.key === o.idempotencyKey;
  })?.value?.task_id;
}

/** Waits for the finished record of `taskId`, or throws after `timeoutMs`. */
async function resultOf(s: NatsSession, taskId: string, timeoutMs: number, signal: AbortSignal): Promise<TaskRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await s.jsm.streams.getMessage(s.names.results, { last_by_subj: resultSubject(s.names, taskId) });
    if (m) return m.json<TaskRecord>();
    if (signal.aborted) throw new CliError(`stopped waiting for ${taskId}; it stays queued`, { code: 'INTERRUPTED' });
    if (Date.now() > deadline)
      throw new CliError(`no result for ${taskId} within ${timeoutMs} ms; the task stays queued`, {
        where: s.url,
        hint: 'Is a runner serving this capability? tapctl nats status shows the consumers, tapctl nats tasks the queue.',
        code: 'TIMEOUT',
      });
    await sleep(100);
  }
}

/** Runs `tapctl nats submit`. */
export async function runSubmit(o: SubmitOptions, ctx: CommandContext): Promise<number> {
  const s = await openNats(o.server);
  try {
    if (o.createStreams) await ensureStreams(s.nc, { names: s.names, replicas: o.replicas });
    else await requireStream(s, s.names.tasks);
    const idempotency = o.idempotencyKey !== undefined ? { principal: o.principal, key: o.idempotencyKey } : undefined;
    let submitted: Awaited<ReturnType<typeof submitDurable>>;
    try {
      submitted = await submitDurable(s.nc, { next_phase: o.capability, input: o.input }, { names: s.names, idempotency });
    } catch (err) {
      if (err instanceof TypeError) throw new CliError(err.message, { usage: true });
      throw err;
    }
    // A duplicate was not queued: the task that holds the key is the one to wait for.
    const taskId = submitted.duplicate ? await ownerOf(s, o) : submitted.record.task_id;
    const said = submitted.duplicate
      ? `The server already had a submit with idempotency key "${o.idempotencyKey}" for ${o.capability} (within its de-duplication window): nothing new was queued${taskId ? `; the task is ${taskId}` : ''}.`
      : `Queued ${taskId} for ${o.capability} (${s.names.tasks} sequence ${submitted.seq}).`;
    if (!o.wait || taskId === undefined) {
      if (o.json) printJson(ctx.io, { task_id: taskId ?? null, seq: submitted.seq, duplicate: submitted.duplicate });
      else ctx.io.out(`${said}\n`);
      return 0;
    }
    if (!o.json) ctx.io.err(`${said} Waiting for its result…\n`);
    const done = await resultOf(s, taskId, o.timeoutMs, ctx.signal);
    const last = done.context.history.at(-1);
    if (o.json) {
      printJson(ctx.io, {
        task_id: taskId,
        duplicate: submitted.duplicate,
        status: done.state.status,
        attempts: done.state.attempts,
        processed_by: done.state.processed_by,
        output: last?.output ?? null,
        error: done.state.last_error,
      });
    } else {
      ctx.io.out(
        `${taskId} ${done.state.status} by ${done.state.processed_by ?? '?'} at attempt ${done.state.attempts + 1}: ` +
          (done.state.last_error
            ? `${done.state.last_error.code}: ${done.state.last_error.message}`
            : excerpt(last?.output ?? null, 2000)) +
          '\n',
      );
    }
    return done.state.status === 'completed' ? 0 : 1;
  } finally {
    await s.close();
  }
}
