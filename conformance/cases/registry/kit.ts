/** Steps that several case files of the registry profile share. */
import { spawn } from 'node:child_process';
import type { KV, KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { CaseContext } from '../../context.ts';
import { show, Stop } from '../kit.ts';
import { fail, harnessError } from '../../verdict.ts';
import { targetTls } from '../../target.ts';
import { forget, killMarked, MARKER_VAR, newMarker, track } from '../../leftovers.ts';
import { connect, Kvm } from '../../../reference/transports/nats/client.ts';
import { natsClientOptions, parseNatsUrl } from '../../../reference/transports/nats/url.ts';
import { kvSubject } from '../../../reference/transports/nats/subjects.ts';
import { REGISTRY_BUCKET } from '../../../reference/mesh/registry.ts';
import { entryProblem, type RegistryEntry } from '../../../reference/mesh/entry.ts';

export const REG = { registry: true };

/** One write of the key as the harness saw it. */
export interface Write {
  op: 'PUT' | 'DEL' | 'PURGE';
  revision: number;
  /** The server's time of the write (spec: registry#nats, TAP-REG-040). */
  at: number;
  /** When the harness received it. */
  seenAt: number;
  value?: unknown;
  /** The length of the value, in bytes. */
  bytes: number;
}

export const writeOf = (e: KvEntry): Write => {
  let value: unknown;
  if (e.operation === 'PUT') {
    try {
      value = e.json();
    } catch {
      value = e.string();
    }
  }
  return { op: e.operation, revision: e.revision, at: e.created.getTime(), seenAt: Date.now(), value, bytes: e.length };
};

/** The registry bucket on the --registry server, for the length of `use`. */
export async function withBucket<T>(ctx: CaseContext, use: (kv: KV, agentId: string, nc: NatsConnection) => Promise<T>): Promise<T> {
  const url = ctx.env.registry!.url;
  const agentId = ctx.env.probe.agentId;
  if (!agentId) throw new Stop(harnessError('the probe handshake named no agent id, so there is no registry key to read'));
  const address = parseNatsUrl(url);
  let nc: NatsConnection;
  try {
    nc = await connect(natsClientOptions(address, targetTls(ctx.env.target)));
  } catch (err) {
    throw new Stop(harnessError(`cannot reach the registry's NATS server at ${url}: ${(err as Error).message}`));
  }
  try {
    let kv: KV;
    try {
      kv = await new Kvm(nc).open(REGISTRY_BUCKET);
      await kv.status();
    } catch (err) {
      throw new Stop(
        fail(
          `there is no key-value bucket ${REGISTRY_BUCKET} on ${url}: the agent did not register (${(err as Error).message})`,
          `the bucket ${REGISTRY_BUCKET}`,
          'none',
        ),
      );
    }
    return await use(kv, agentId, nc);
  } finally {
    await nc.close().catch(() => {});
  }
}

/** The agent's current entry, parsed and valid, or a FAIL that says what is wrong with it. */
export async function currentEntry(kv: KV, agentId: string): Promise<{ entry: RegistryEntry; write: Write }> {
  const e = await kv.get(agentId);
  if (e?.operation !== 'PUT')
    throw new Stop(fail(`${REGISTRY_BUCKET} holds no entry under the key ${agentId}, the agent id of the handshake`, 'an entry', 'none'));
  const write = writeOf(e);
  if (typeof write.value === 'string')
    throw new Stop(fail(`the value under ${agentId} is not JSON text`, 'the entry as UTF-8 JSON', show(write.value, 120)));
  const problem = entryProblem(write.value);
  if (problem)
    throw new Stop(
      fail(`the entry under ${agentId} is not a valid entry: ${problem}`, 'every member of registry#entry', show(write.value, 200)),
    );
  return { entry: write.value as RegistryEntry, write };
}

/**
 * The agent's current entry and its heartbeat_ms, which a case that waits out several heartbeats
 * needs within 15 s: a longer one stops it with a harness error that says why (`waits`).
 */
export async function entryWithHeartbeat(kv: KV, agentId: string, waits: string): Promise<{ entry: RegistryEntry; hb: number }> {
  const { entry } = await currentEntry(kv, agentId);
  const hb = entry.heartbeat_ms;
  if (hb > 15_000) throw new Stop(harnessError(`heartbeat_ms ${hb} is too long for this case's budget (${waits})`));
  return { entry, hb };
}

/** Collects the key's writes (the current one first) until `done` holds (checked as writes come and every 20 ms) or `ms` pass. */
export async function watchKey(kv: KV, agentId: string, ms: number, done: (writes: Write[]) => boolean = () => false): Promise<Write[]> {
  const writes: Write[] = [];
  const iterator = await kv.watch({ key: agentId });
  const end = Date.now() + ms;
  const ticker = setInterval(() => {
    if (Date.now() >= end || done(writes)) iterator.stop();
  }, 20);
  try {
    for await (const e of iterator) {
      writes.push(writeOf(e));
      if (done(writes)) break;
    }
  } finally {
    clearInterval(ticker);
    iterator.stop();
  }
  return writes;
}

/** The allowance on a heartbeat interval: a quarter of it, at least 250 ms, stretched by the time scale. */
export const allowance = (ctx: CaseContext, heartbeatMs: number): number => ctx.scaled(Math.max(250, heartbeatMs / 4));

/** A publish to the agent's key as it travels: its operation and the revision it is conditional on. */
export interface Publish {
  op: string;
  /** Its Nats-Expected-Last-Subject-Sequence header: the revision the write requires the key to be at; undefined for a blind write. */
  expected: number | undefined;
  /** The entry's instance, for a PUT whose value names one. */
  instance?: string;
}

/**
 * Watches the publishes to the agent's key itself (`$KV.<bucket>.<agent_id>`), headers and all, as
 * a core NATS subscriber: a create or an update carries the revision it requires
 * (Nats-Expected-Last-Subject-Sequence, 0 for a create), a blind put or delete carries none.
 */
export async function watchPublishes(nc: NatsConnection, agentId: string): Promise<{ seen: Publish[]; stop(): void }> {
  const seen: Publish[] = [];
  const sub = nc.subscribe(kvSubject(REGISTRY_BUCKET, agentId), {
    callback: (err, m) => {
      if (err) return;
      const expected = m.headers?.get('Nats-Expected-Last-Subject-Sequence');
      const op = m.headers?.get('KV-Operation') || 'PUT';
      let instance: string | undefined;
      try {
        const v = m.json<{ instance?: unknown }>();
        if (typeof v?.instance === 'string') instance = v.instance;
      } catch {
        // Not JSON: no entry, no instance.
      }
      seen.push({ op, expected: expected ? Number(expected) : undefined, ...(instance !== undefined ? { instance } : {}) });
    },
  });
  await nc.flush();
  return { seen, stop: () => sub.unsubscribe() };
}

/**
 * The most random bits a string can carry, judged by its length and the smallest of the usual
 * alphabets its characters fit: hex digits (4 bits), base64url (6 bits), printable ASCII (6.5 bits).
 */
export function instanceBits(instance: string): number {
  const n = [...instance].length;
  if (/^[0-9a-f]*$/i.test(instance)) return n * 4;
  if (/^[A-Za-z0-9_-]*$/.test(instance)) return n * 6;
  return Math.floor(n * Math.log2(95));
}

/** A second process of the agent that the suite started with --agent-command: its output, and how it ended. */
export interface SecondProcess {
  /** Its standard output and error as they came, the first 64 KiB. */
  output(): string;
  /** Resolves with its exit code (or the signal's name) once it exits. */
  exited: Promise<number | string>;
  /** Its exit code or signal, or undefined while it runs. */
  status(): number | string | undefined;
  /** Stops it and everything it started: SIGTERM to its process group, SIGKILL after `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/** Runs `command` through /bin/sh in a process group of its own, marked so that its children are killed with it (spec: conformance#processes). */
export function startSecondProcess(command: string): SecondProcess {
  const marker = newMarker();
  const child = spawn('/bin/sh', ['-c', command], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, [MARKER_VAR]: marker },
  });
  track(marker);
  let text = '';
  const keep = (chunk: Buffer): void => {
    if (text.length < 65_536) text += chunk.toString('utf8').slice(0, 65_536 - text.length);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let status: number | string | undefined;
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (err) => {
      text += `\n${err.message}`;
      resolve((status = 'not started'));
    });
    child.once('exit', (code, signal) => resolve((status = code ?? signal ?? 'unknown')));
  });
  const group = (signal: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // gone
    }
  };
  return {
    output: () => text,
    exited,
    status: () => status,
    async stop(graceMs) {
      if (status === undefined) {
        group('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
        group('SIGKILL');
      }
      killMarked(marker);
      forget(marker);
    },
  };
}
