/**
 * tapctl nats submit: queues a durable task for a capability and, with --wait, waits for its
 * finished record in TAP_RESULTS (spec: bindings-nats#task-queue, bindings-nats#idempotency).
 */
import { Kvm } from '../../transports/nats/client.ts';
import type { TaskRecord } from '../../workspace/record.ts';
import { ensureStreams, resultSubject, taskSubject } from '../../jetstream/streams.ts';
import { idempotencyKey, submitDurable } from '../../jetstream/submit.ts';
import { readSigningKey, type SigningKey } from '../../trust.ts';
import { CliError, type CommandContext } from '../registry.ts';
import { excerpt, printJson } from '../workspace/format.ts';
import { withNats, readStream, requireStream, type NatsSession } from './connection.ts';
import { attemptsText } from './records.ts';

/** Options of `tapctl nats submit` after parsing. */
export interface SubmitOptions {
  server: string;
  json: boolean;
  capability: string;
  input: unknown;
  idempotencyKey?: string;
  /** Whose idempotency key it is: default the signing key's principal, else "tapctl". */
  principal?: string;
  /** The file of the Ed25519 key that signs the record. */
  signingKey?: string;
  wait: boolean;
  timeoutMs: number;
  createStreams: boolean;
  /** Replicas of the streams it creates; undefined: by the cluster's size. */
  replicas: number | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The task that holds an idempotency key: the one a runner claimed it for, or the one queued with it. */
async function ownerOf(s: NatsSession, o: SubmitOptions, principal: string): Promise<string | undefined> {
  const owner = await keyHolder(s, o, principal);
  if (owner) return owner;
  // A requester whose NATS user may not read the queue (spec: bindings-nats#security) learns no more.
  const queued = await readStream<TaskRecord>(s, s.names.tasks, taskSubject(s.names, o.capability), Number.MAX_SAFE_INTEGER).catch(
    () => [],
  );
  return queued.find((r) => {
    const idem = (r.value?.metadata as { 'x-idempotency'?: { principal: string; key: string } } | undefined)?.['x-idempotency'];
    return idem?.principal === principal && idem.key === o.idempotencyKey;
  })?.value?.task_id;
}

/** The task that TAP_IDEMPOTENCY says holds the submit's key, if a runner has claimed it. */
async function keyHolder(s: NatsSession, o: SubmitOptions, principal: string): Promise<string | undefined> {
  const kv = await new Kvm(s.nc).open(s.names.idempotency).catch(() => null);
  const owner = await kv?.get(idempotencyKey(principal, o.capability, o.idempotencyKey!)).catch(() => null);
  return owner?.string() || undefined;
}

/** The signing key of --signing-key, read; a CliError naming the file when it cannot be used. */
function signingKeyOf(o: SubmitOptions): SigningKey | undefined {
  if (o.signingKey === undefined) return undefined;
  try {
    return readSigningKey(o.signingKey);
  } catch (err) {
    throw new CliError((err as Error).message, { hint: 'tapctl nats permissions --keys-dir <dir> writes a key for each principal.' });
  }
}

/**
 * Waits for the finished record of `taskId`, or throws after `timeoutMs`. With `holder`, a task
 * that the runner found to be a repeat (its key held by another task, spec: bindings-nats#idempotency)
 * has the holder's result: the wait moves to the holder. Resolves with the task whose record it is.
 */
async function resultOf(
  s: NatsSession,
  taskId: string,
  timeoutMs: number,
  signal: AbortSignal,
  holder?: () => Promise<string | undefined>,
): Promise<{ taskId: string; record: TaskRecord }> {
  const deadline = Date.now() + timeoutMs;
  let waitingFor = taskId;
  for (;;) {
    const m = await s.jsm.streams.getMessage(s.names.results, { last_by_subj: resultSubject(s.names, waitingFor) });
    if (m) return { taskId: waitingFor, record: m.json<TaskRecord>() };
    if (signal.aborted) throw new CliError(`stopped waiting for ${waitingFor}; it stays queued`, { code: 'INTERRUPTED' });
    if (Date.now() > deadline)
      throw new CliError(`no result for ${waitingFor} within ${timeoutMs} ms; the task stays queued`, {
        where: s.url,
        hint: 'Is a runner serving this capability? tapctl nats status shows the consumers, tapctl nats tasks the queue, tapctl nats dead-letters the records a runner refused.',
        code: 'TIMEOUT',
      });
    waitingFor = (await holder?.().catch(() => undefined)) ?? waitingFor;
    await sleep(100);
  }
}

/** Runs `tapctl nats submit`. */
export async function runSubmit(o: SubmitOptions, ctx: CommandContext): Promise<number> {
  return withNats(o.server, async (s) => {
    if (o.createStreams) await ensureStreams(s.nc, { names: s.names, replicas: o.replicas });
    else await requireStream(s, s.names.tasks);
    const signingKey = signingKeyOf(o);
    const principal = o.principal ?? signingKey?.principal ?? 'tapctl';
    const idempotency = o.idempotencyKey !== undefined ? { principal, key: o.idempotencyKey } : undefined;
    let submitted: Awaited<ReturnType<typeof submitDurable>>;
    try {
      submitted = await submitDurable(s.nc, { next_phase: o.capability, input: o.input }, { names: s.names, idempotency, signingKey });
    } catch (err) {
      if (err instanceof TypeError) throw new CliError(err.message, { usage: true });
      throw err;
    }
    // A duplicate was not queued: the task that holds the key is the one to wait for.
    const taskId = submitted.duplicate ? await ownerOf(s, o, principal) : submitted.record.task_id;
    const said = submitted.duplicate
      ? `The server already had a submit with idempotency key "${o.idempotencyKey}" for ${o.capability} (within its de-duplication window): nothing new was queued${taskId ? `; the task is ${taskId}` : ''}.`
      : `Queued ${taskId} for ${o.capability} (${s.names.tasks} sequence ${submitted.seq}).`;
    if (!o.wait || taskId === undefined) {
      if (o.json) printJson(ctx.io, { task_id: taskId ?? null, seq: submitted.seq, duplicate: submitted.duplicate });
      else ctx.io.out(`${said}\n`);
      return 0;
    }
    if (!o.json) ctx.io.err(`${said} Waiting for its result…\n`);
    const holder = idempotency ? () => keyHolder(s, o, principal) : undefined;
    const { taskId: doneId, record: done } = await resultOf(s, taskId, o.timeoutMs, ctx.signal, holder);
    const last = done.context.history.at(-1);
    if (o.json) {
      printJson(ctx.io, {
        task_id: doneId,
        duplicate: submitted.duplicate || doneId !== taskId,
        status: done.state.status,
        attempts: done.state.attempts,
        processed_by: done.state.processed_by,
        output: last?.output ?? null,
        error: done.state.last_error,
      });
    } else {
      ctx.io.out(
        `${doneId !== taskId ? `${taskId} is a repeat of ${doneId}: ` : ''}${doneId} ${done.state.status} by ${done.state.processed_by ?? '?'} with ${attemptsText(done.state.attempts)}: ` +
          (done.state.last_error
            ? `${done.state.last_error.code}: ${done.state.last_error.message}`
            : excerpt(last?.output ?? null, 2000)) +
          '\n',
      );
    }
    return done.state.status === 'completed' ? 0 : 1;
  });
}
