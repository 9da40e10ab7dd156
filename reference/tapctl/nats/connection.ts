/**
 * The NATS side of `tapctl nats …`: connecting for an operator, with one clear error for an
 * unreachable server, a server without JetStream and a missing TAP stream; and reading the
 * records a stream holds without consuming them (spec: bindings-nats#task-queue).
 * Loaded only when a nats command runs, since it imports the NATS client library.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamManager, StreamInfo } from '@nats-io/jetstream';
import { connect, jetstreamManager } from '../../transports/nats/client.ts';
import { natsClientOptions, parseNatsUrl } from '../../transports/nats/url.ts';
import { DEFAULT_NAMES, type DurableNames } from '../../jetstream/streams.ts';
import { MissingPeerError } from '../../peers.ts';
import { CliError } from '../registry.ts';

/** An open operator connection: the client, its JetStream manager and the names of the TAP streams. */
export interface NatsSession {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** The server URL as given, for messages. */
  url: string;
  names: DurableNames;
  close(): Promise<void>;
}

/** Runs a command's work on a session with the server at `url`, closed whatever the work does. */
export async function withNats<T>(url: string, work: (s: NatsSession) => Promise<T>): Promise<T> {
  const s = await openNats(url);
  try {
    return await work(s);
  } finally {
    await s.close();
  }
}

/** Connects to the server at `url` and checks that JetStream answers; throws a CliError for people otherwise. */
export async function openNats(url: string, o: { timeoutMs?: number } = {}): Promise<NatsSession> {
  let address: ReturnType<typeof parseNatsUrl>;
  try {
    address = parseNatsUrl(url);
  } catch (err) {
    throw new CliError((err as Error).message, { usage: true, code: 'USAGE' });
  }
  let nc: NatsConnection;
  try {
    nc = await connect({
      ...natsClientOptions(address),
      name: 'tapctl',
      timeout: o.timeoutMs ?? 3000,
      maxReconnectAttempts: 0,
    });
  } catch (err) {
    if (err instanceof MissingPeerError) throw err;
    throw new CliError(`cannot reach the NATS server: ${(err as Error).message}`, {
      where: url,
      hint: 'Is nats-server running there (nats-server -js)? Give another server with --server, $TAP_NATS_URL or $NATS_URL.',
      code: 'NATS_UNREACHABLE',
    });
  }
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc, { timeout: o.timeoutMs ?? 3000 });
  } catch (err) {
    await nc.close().catch(() => {});
    throw new CliError(`JetStream does not answer on this server: ${(err as Error).message}`, {
      where: url,
      hint: 'The durable tasks of TAP need JetStream: start nats-server with -js, or add "jetstream {}" to its configuration.',
      code: 'JETSTREAM_OFF',
    });
  }
  return { nc, jsm, url, names: DEFAULT_NAMES, close: () => nc.close().catch(() => {}) };
}

/** True when the error is JetStream's "stream not found". */
export function isStreamMissing(err: unknown): boolean {
  const e = err as { message?: string; api_error?: { err_code?: number }; code?: unknown };
  return e?.api_error?.err_code === 10059 || /stream not found/i.test(e?.message ?? '');
}

/** The stream's info, or undefined when it does not exist. */
export async function streamInfo(s: NatsSession, stream: string, subjectsFilter?: string): Promise<StreamInfo | undefined> {
  try {
    return await s.jsm.streams.info(stream, subjectsFilter ? { subjects_filter: subjectsFilter } : undefined);
  } catch (err) {
    if (isStreamMissing(err)) return undefined;
    throw err;
  }
}

/** The stream's info; a CliError saying who creates it when it does not exist. */
export async function requireStream(s: NatsSession, stream: string, subjectsFilter?: string): Promise<StreamInfo> {
  const info = await streamInfo(s, stream, subjectsFilter);
  if (info) return info;
  throw new CliError(`stream ${stream} does not exist on this server`, {
    where: s.url,
    hint: 'The first durable runner (or tapctl nats submit --create-streams) creates the TAP streams; check that --server names the right server.',
    code: 'STREAM_MISSING',
  });
}

/** One stored message of a stream: its sequence, subject, publication time and parsed body. */
export interface StoredRecord<T> {
  seq: number;
  subject: string;
  time: string;
  value: T | undefined;
  /** Why the body could not be read as JSON, if it could not. */
  unreadable?: string;
}

/**
 * The messages of `stream` whose subject matches `filter`, oldest first, at most `limit`, read by
 * sequence with direct gets: nothing is consumed or acknowledged, so the queue is left as it was.
 */
export async function readStream<T>(s: NatsSession, stream: string, filter: string, limit: number): Promise<StoredRecord<T>[]> {
  const info = await requireStream(s, stream);
  const out: StoredRecord<T>[] = [];
  let seq = info.state.first_seq;
  while (out.length < limit && seq <= info.state.last_seq && info.state.messages > 0) {
    // STREAM.MSG.GET takes next_by_subj since server 2.9; the client's type lists only seq and last_by_subj.
    const m = await s.jsm.streams.getMessage(stream, { seq, next_by_subj: filter } as unknown as { seq: number }).catch((err: Error) => {
      if (/no message found|not found/i.test(err.message)) return null;
      throw err;
    });
    if (!m) break;
    let value: T | undefined;
    let unreadable: string | undefined;
    try {
      value = m.json<T>();
    } catch (err) {
      unreadable = (err as Error).message;
    }
    out.push({ seq: m.seq, subject: m.subject, time: m.time.toISOString(), value, ...(unreadable ? { unreadable } : {}) });
    seq = m.seq + 1;
  }
  return out;
}
