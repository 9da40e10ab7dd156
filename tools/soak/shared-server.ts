/**
 * The attacks of "a mesh safe on a shared server", run against a nats-server configured with the
 * permission model `tapctl nats permissions` writes, the reference agent serving sessions, durable
 * queues with a trust file and a signed registry entry on it: forged and wildcard records,
 * planted results, claimed idempotency keys, registry takeover and flood, a session lockout, an
 * absurd keepalive, and a WebSocket peer that never reads. Each adds to the figures, which must
 * all be 0 or within their bounds (spec: bindings-nats#security, registry#signatures, limits#sources).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { NatsConnection } from '@nats-io/transport-node';
import WebSocket from 'ws';
import { submitDurable } from '../../reference/jetstream/submit.ts';
import { DEFAULT_NAMES as N, eventSubject, resultSubject, taskSubject } from '../../reference/jetstream/names.ts';
import { signRecord } from '../../reference/jetstream/signatures.ts';
import { openRegistry } from '../../reference/mesh/registry.ts';
import { connect, headers, jetstream, jetstreamManager } from '../../reference/transports/nats/client.ts';
import { startNatsServer, type NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { Header, kvSubject, newConnectionId, openSubject } from '../../reference/transports/nats/subjects.ts';
import { natsClientOptions, parseNatsUrl } from '../../reference/transports/nats/url.ts';
import { readSigningKey, readTrustFile } from '../../reference/trust.ts';
import { recordFromDraft, type TaskRecord } from '../../reference/workspace/record.ts';
import { AGENT, ENV, figures, notes, ROOT, rssKb, settings, sleep } from './common.ts';

const AGENT_ID = 'tap.reference-agent';
const TAPCTL = join(ROOT, 'bin/tapctl.mjs');

/** The figures of this step: each a count of attacks that got through, or a bound. */
export const sharedFigures = {
  forged_records_run: 0,
  forbidden_writes_accepted: 0,
  forged_entries_routed_to: 0,
  session_lockouts: 0,
  absurd_keepalives_accepted: 0,
  unread_warning_lines: 0,
  unread_peak_rss_kb: 0,
};

function run(cmd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Starts the reference agent with `args`; resolves once it printed its first line (its URL), with that line and what it writes on stderr. */
async function startAgent(args: string[]): Promise<{ child: ChildProcess; line: string; stderr: () => string }> {
  const child = spawn(process.execPath, [AGENT, ...args], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const ready = once(createInterface({ input: child.stdout! }), 'line');
  const exited = once(child, 'exit').then(() => {
    throw new Error(`the agent exited: ${err.trim().split('\n').slice(-3).join(' | ')}`);
  });
  const [line] = (await Promise.race([ready, exited])) as [string];
  return { child, line: line.trim(), stderr: () => err };
}

async function stopAgent(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(15_000).then(() => child.kill('SIGKILL'))]);
}

/** True when the server took a publish of `nc` to `subject` (a request, so that its refusal comes back). */
async function accepted(nc: NatsConnection, subject: string, data = 'forged'): Promise<boolean> {
  return nc.request(subject, data, { timeout: 3000 }).then(
    () => true,
    (err: Error) => !/Permissions Violation/i.test(err.message) && !/timeout|no responders/i.test(err.message),
  );
}

/** The durable queue: wildcard and non-object records, a claim on another principal's key, a planted result. */
async function durableAttacks(mallory: NatsConnection, alice: NatsConnection, ops: NatsConnection, keys: string): Promise<void> {
  const js = jetstream(mallory);
  const subject = taskSubject(N, 'tap.test.echo');
  const bodies = [
    ...['>', '*', 'a.*'].map((id) =>
      JSON.stringify({ ...recordFromDraft({ task_id: 'x', next_phase: 'tap.test.echo', input: 'mallory' }), task_id: id }),
    ),
    'null',
    '"x"',
    '[]',
  ];
  for (const body of bodies) await js.publish(subject, body);
  // Alice's idempotency key, claimed by mallory in a record signed by mallory.
  const claim = recordFromDraft({ task_id: `claim-${Date.now()}`, next_phase: 'tap.test.echo', input: 'MALLORY' }) as TaskRecord;
  claim.metadata = { 'x-idempotency': { principal: 'alice', key: 'order-1' } };
  await js.publish(subject, JSON.stringify(signRecord(claim, readSigningKey(join(keys, 'mallory.key.json')))));
  // A task.result planted on the stream of the task alice is about to submit: the server refuses it.
  const taskId = `pay-${Date.now()}`;
  if (await accepted(mallory, eventSubject(N, taskId))) sharedFigures.forbidden_writes_accepted++;
  await sleep(3000);
  const submitted = await submitDurable(
    alice,
    { task_id: taskId, next_phase: 'tap.test.echo', input: { alice: 'real work' } },
    { idempotency: { key: 'order-1' }, signingKey: readSigningKey(join(keys, 'alice.key.json')) },
  );
  const jsm = await jetstreamManager(ops);
  // Alice's own task must run for her: neither the claim nor the planted result may decide it.
  let ran = false;
  for (let i = 0; i < 40 && !ran; i++) {
    await sleep(250);
    const stored = await jsm.streams.getMessage(N.results, { last_by_subj: resultSubject(N, taskId) }).catch(() => null);
    ran = stored !== null && JSON.stringify(stored.json()).includes('real work');
  }
  if (!ran) sharedFigures.forged_records_run++;
  // Every forged record has left the queue, into the dead letters: none is waiting, none ran.
  const tasks = await jsm.streams.info(N.tasks);
  sharedFigures.forged_records_run += tasks.state.messages;
  const dead = await jsm.streams.info(N.dead).catch(() => ({ state: { messages: 0 } }));
  notes.push(
    `shared server: ${bodies.length + 1} forged records published, ${dead.state.messages} dead-lettered, ${tasks.state.messages} left on the queue`,
  );
  if (submitted.duplicate) sharedFigures.forged_records_run++;
}

/** The registry: a takeover of the agent's key and a flood, by a requester and by another agent. */
async function registryAttacks(
  mallory: NatsConnection,
  other: NatsConnection,
  alice: NatsConnection,
  keys: string,
  flood: number,
): Promise<void> {
  const forged = JSON.stringify({
    agent_id: AGENT_ID,
    instance: 'mallory',
    endpoints: [{ binding: 'nats', url: 'nats://127.0.0.1:9/tap.reference-agent' }],
  });
  for (const nc of [mallory, other])
    if (await accepted(nc, kvSubject('TAP_REGISTRY', AGENT_ID), forged)) sharedFigures.forbidden_writes_accepted++;
  let taken = 0;
  for (let i = 0; i < flood; i++) if (await accepted(mallory, kvSubject('TAP_REGISTRY', `flood.agent-${i}`), forged)) taken++;
  sharedFigures.forbidden_writes_accepted += taken;
  const registry = await openRegistry(alice, { create: false, trust: readTrustFile(join(keys, 'trust.json')) });
  const listed = await registry.list({ capability: 'tap.test.echo' });
  sharedFigures.forged_entries_routed_to += listed.filter((e) => e.entry.endpoints.some((p) => p.url.includes('127.0.0.1:9/'))).length;
  if (!listed.some((e) => e.entry.agent_id === AGENT_ID)) notes.push('shared server: discovery did not find the live agent');
  notes.push(`shared server: registry takeover and a flood of ${flood} puts tried; ${taken} taken; discovery lists ${listed.length}`);
}

/** Sessions: a requester opens and abandons more than its share; another then opens one. An absurd keepalive. */
async function sessionAttacks(mallory: NatsConnection, alice: NatsConnection, abandoned: number): Promise<void> {
  const open = async (nc: NatsConnection, keepalive = '1000'): Promise<string> => {
    const h = headers();
    h.set(Header.CONNECTION, newConnectionId());
    h.set(Header.KEEPALIVE_MS, keepalive);
    const reply = await nc.request(openSubject('tap', AGENT_ID), new Uint8Array(0), { headers: h, timeout: 5000 }).catch(() => undefined);
    return reply?.headers?.get(Header.OPEN) ?? 'no answer';
  };
  let refused = 0;
  for (let i = 0; i < abandoned; i += 25) {
    const verdicts = await Promise.all(Array.from({ length: Math.min(25, abandoned - i) }, () => open(mallory)));
    refused += verdicts.filter((v) => v !== 'ok').length;
  }
  // The connections mallory left are orphans without tasks: they give way (spec: limits#sources).
  if ((await open(alice)) !== 'ok') sharedFigures.session_lockouts++;
  if ((await open(mallory, '10000000000000')) === 'ok') sharedFigures.absurd_keepalives_accepted++;
  notes.push(`shared server: ${abandoned} connections opened and abandoned (${refused} refused); a requester then opened one`);
}

/** A WebSocket peer that never reads: one warning line, then dropped; the agent's memory bounded (spec: limits#back-pressure). */
async function unreadPeer(pings: number): Promise<void> {
  const { child, line: url, stderr } = await startAgent(['--listen', 'ws://127.0.0.1:0/tap']);
  try {
    const ws = new WebSocket(url, ['tap.v1']);
    await once(ws, 'open');
    const message = (type: string, payload: unknown, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        protocol: 'tap/1.0',
        message_id: `soak-${Math.random().toString(36).slice(2)}`,
        type,
        source: 'soak.unread',
        target: '*',
        timestamp: new Date().toISOString(),
        payload,
        ...extra,
      });
    const card = {
      agent_id: 'soak.unread',
      name: 'r',
      description: 'r',
      capabilities: [],
      limits: { max_concurrent_tasks: 1, max_task_seconds: 1, max_message_bytes: 1048576 },
    };
    ws.send(message('handshake.init', { versions: ['1.0'], agent: card, requires: [], params: {} }));
    const [data] = (await once(ws, 'message')) as [Buffer];
    const ack = JSON.parse(data.toString()) as { source: string; payload: { session_id: string; params: unknown } };
    const session = { session_id: ack.payload.session_id, target: ack.source };
    ws.send(message('handshake.ready', { params: ack.payload.params }, session));
    await sleep(300);
    // Never read again: every ping's answer piles up on the agent's side until it drops the peer.
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    for (let i = 0; i < pings && ws.readyState === WebSocket.OPEN; i++) {
      ws.send(message('ping', {}, session));
      if (i % 5000 === 0) {
        await sleep(20);
        sharedFigures.unread_peak_rss_kb = Math.max(sharedFigures.unread_peak_rss_kb, rssKb(child.pid));
      }
    }
    for (let k = 0; k < 5; k++) {
      await sleep(500);
      sharedFigures.unread_peak_rss_kb = Math.max(sharedFigures.unread_peak_rss_kb, rssKb(child.pid));
    }
    sharedFigures.unread_warning_lines = (stderr().match(/bytes unread/g) ?? []).length;
    ws.terminate();
  } finally {
    await stopAgent(child);
  }
}

/** A line on stderr as each part of the step starts, so a long run shows where it is. */
const progress = (what: string) => console.error(`soak: shared server: ${what}…`);

/** The step: the server, the agent, the attacks, the figures. */
export async function sharedServer(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-soak-shared-'));
  const keys = join(dir, 'keys');
  const conf = join(dir, 'server.conf');
  let server: NatsServer | undefined;
  let agent: ChildProcess | undefined;
  const conns: NatsConnection[] = [];
  try {
    progress('the permission model and the server');
    const made = await run(process.execPath, [
      TAPCTL,
      ...['nats', 'permissions', '--agent', AGENT_ID, '--runner', AGENT_ID, '--agent', 'tap.other-agent'],
      ...['--requester', 'alice', '--requester', 'mallory', '--operator', 'ops', '--out', conf],
    ]);
    if (made.code !== 0) throw new Error(`tapctl nats permissions failed: ${made.out.trim()}`);
    server = await startNatsServer({ config: readFileSync(conf, 'utf8') });
    const passwords = JSON.parse(readFileSync(join(keys, 'credentials.json'), 'utf8')).principals as Record<string, { password: string }>;
    const url = (id: string) => `nats://${id}:${passwords[id]!.password}@127.0.0.1:${server!.port}`;
    const as = async (id: string): Promise<NatsConnection> => {
      const nc = await connect(natsClientOptions(parseNatsUrl(url(id))));
      conns.push(nc);
      return nc;
    };
    const key = join(keys, `${AGENT_ID}.key.json`);
    progress('the agent');
    ({ child: agent } = await startAgent([
      ...['--nats', url(AGENT_ID), '--mesh', url(AGENT_ID), '--mesh-key', key, '--mesh-heartbeat-ms', '500'],
      ...['--durable', '--lease-ms', '2000', '--max-deliver', '2', '--signing-key', key, '--trust', join(keys, 'trust.json')],
    ]));
    const [mallory, alice, ops, other] = await Promise.all(['mallory', 'alice', 'ops', 'tap.other-agent'].map(as));
    progress('forged durable records');
    await durableAttacks(mallory!, alice!, ops!, keys);
    progress('registry takeover and flood');
    await registryAttacks(mallory!, other!, alice!, keys, settings.short ? 200 : 2000);
    progress('abandoned sessions and an absurd keepalive');
    await sessionAttacks(mallory!, alice!, settings.short ? 300 : 1100);
    figures.peak_rss_kb = Math.max(figures.peak_rss_kb, rssKb(agent.pid));
  } finally {
    for (const nc of conns) await nc.close().catch(() => {});
    if (agent) await stopAgent(agent);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  progress('a WebSocket peer that never reads');
  await unreadPeer(settings.short ? 50_000 : 300_000);
}
