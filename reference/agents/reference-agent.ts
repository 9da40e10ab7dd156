/**
 * tap-reference-agent: the reference TAP agent, serving the conformance capabilities.
 *
 * On stdio (the default) stdout carries only TAP messages and logs go to stderr. With
 * --listen it serves WebSocket sessions instead and prints the URL once on stdout when it is
 * ready (stdout is not a TAP channel then). With --nats it serves sessions through a NATS server
 * under its agent id and prints nats://host:port/<agent_id> once ready. With --mesh it also keeps an
 * entry in the mesh's registry (serving through that NATS server unless --nats or --listen says
 * otherwise) and withdraws it when it shuts down (spec: registry). Keys for integrity come from TAP_HMAC_KEY_ID,
 * TAP_HMAC_KEY and TAP_HMAC_PEER (spec: conformance#key-provisioning).
 */
import { parseArgs } from 'node:util';
import { createAgent, stderrLogger, withConformanceCapabilities, type Agent, type AgentListener, type PeerKey } from '../agent/index.ts';
import { keysFromEnv } from './env-keys.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Transport } from '../transports/index.ts';

const USAGE = `Usage: tap-reference-agent [options]

Serves the TAP 1.0 reference agent with the conformance capabilities (tap.test.*).

Options:
  --listen URL        serve WebSocket sessions at URL, e.g. ws://127.0.0.1:8787/tap
                      (port 0 picks a free port); prints the URL on stdout once ready.
                      Without it the agent serves one session on stdin/stdout.
  --nats URL          serve sessions through the NATS server at URL, e.g. nats://127.0.0.1:4222
                      (user:password@ in the URL authenticates); prints nats://host:port/<agent-id>
                      on stdout once ready (spec: bindings-nats)
  --durable           with --nats, also serve tap.test.echo, stream, sleep, fail and counter on
                      their durable JetStream queues (spec: bindings-nats#certification)
  --lease-ms MS       with --durable, the lease (the consumers' ack_wait, default 30000); a consumer
                      left with another lease is set to this one, with a warning on stderr
  --max-deliver N     with --durable, deliveries before a dead letter (default 5)
  --mesh URL          join the mesh whose registry is on the NATS server at URL: keep an entry
                      with this agent's card, endpoint and load in the bucket TAP_REGISTRY, renewed
                      every heartbeat, withdrawn on shutdown (spec: registry). Without --nats or
                      --listen the agent serves sessions through the same server.
  --mesh-heartbeat-ms MS
                      how often the registry entry is renewed (default 5000, at least 100)
  --mesh-ttl-ms MS    how long the entry lives after its last renewal (default 3 × the heartbeat)
  --trace FILE        with --nats or --mesh, append a trace record (one JSON line: time, trace and
                      span ids, task id, type, duration) per traced message of every session to
                      FILE (spec: mesh#trace-records)
  --state-dir DIR     keep a journal in DIR: tasks survive a restart (durability "restart")
  --agent-id ID       the agent id (default tap.reference-agent)
  --grace-ms MS       grace period on SIGTERM/SIGINT (default 10000)
  --resume-window-ms MS
                      how long a session that lost its transport stays resumable (default 300000)
  --max-concurrent-tasks N, --max-tasks-per-session N, --max-tasks-per-principal N
                      the card's task limits (defaults 64, 32 and 32); more are refused with BUSY
  -h, --help          show this help

Limits (spec: limits#nesting, limits#pre-handshake, limits#table-limits, limits#back-pressure):
  nesting             at most 64 levels; deeper messages get MALFORMED_MESSAGE
  before the ack      frames of at most 65536 bytes; larger ones get MESSAGE_TOO_LARGE
  frames              max_message_bytes 1048576; a WebSocket frame over 2 MiB closes with 1009
  duplicate table     per session 10000 message ids and 4 MiB of replies (the newest 1024 always);
                      a snapshot is remembered as a way to rebuild it, not as a copy
  tasks kept          per principal 4096 and 256 MiB of retained messages, 16384 in all;
                      a finished task is kept at least the resume window, then forgotten only
                      to make room; when none can be made a new task gets BUSY
  sessions            4096 kept, orphaned ones included; a new one beyond gets BUSY
  connections         1024 WebSocket connections; more are closed with 1013
  unread output       a peer that leaves 16 MiB unread is disconnected (its session stays
                      resumable)
  HTTP headers        an upgrade request must arrive within 10 s

Environment:
  TAP_HMAC_KEY_ID, TAP_HMAC_KEY, TAP_HMAC_PEER
                      a pre-shared key (base64url, at least 32 bytes) bound to the requester
                      agent id TAP_HMAC_PEER; set all three or none.
  TAP_BREAK           (stdio only) break one rule on purpose: the name of a mutant of
                      the conformance suite's mutation score (tools/mutation.ts --list)
`;

/** A one-line error for people, then exit 2. */
function die(message: string): never {
  process.stderr.write(`tap-reference-agent: ${message}\nRun tap-reference-agent --help for usage.\n`);
  process.exit(2);
}

interface Options {
  listen?: URL;
  nats?: string;
  durable?: { leaseMs: number; maxDeliver: number };
  mesh?: string;
  meshHeartbeatMs?: number;
  meshTtlMs?: number;
  trace?: string;
  stateDir?: string;
  agentId: string;
  graceMs: number;
  resumeWindowMs: number;
  maxConcurrentTasks: number;
  maxTasksPerSession: number;
  maxTasksPerPrincipal: number;
}

/** A whole number option within [min, max], or its default when absent. */
function whole(values: Record<string, unknown>, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
  if (!Number.isSafeInteger(n) || n < min || n > max) die(`--${name} ${String(raw)} is not a whole number ${range}`);
  return n;
}

/** Serves the conformance capabilities on their durable queues (spec: bindings-nats#certification); resolves with the stop function. */
async function serveDurable(url: string, agentId: string, o: { leaseMs: number; maxDeliver: number }): Promise<() => Promise<void>> {
  const [{ connect }, { parseNatsUrl }, { serveDurableConformance }] = await Promise.all([
    import('@nats-io/transport-node'),
    import('../transports/nats/url.ts'),
    import('../jetstream/capabilities.ts'),
  ]);
  try {
    const address = parseNatsUrl(url);
    const nc = await connect({
      servers: address.servers,
      ...(address.user !== undefined ? { user: address.user, pass: address.pass } : {}),
    });
    const runners = await serveDurableConformance({
      nc,
      agentId,
      leaseMs: o.leaseMs,
      maxAttempts: o.maxDeliver,
      // A consumer left with another lease, dead letters that could not move: said on stderr.
      logger: (level, message) => {
        if (level !== 'info') stderrLogger(level, message);
      },
    });
    return async () => {
      for (const r of runners) await r.stop().catch(() => {});
      await nc.close().catch(() => {});
    };
  } catch (err) {
    die(`cannot serve durable queues through NATS at ${url}: ${(err as Error).message}`);
  }
}

function parse(): Options {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        listen: { type: 'string' },
        nats: { type: 'string' },
        durable: { type: 'boolean' },
        'lease-ms': { type: 'string' },
        'max-deliver': { type: 'string' },
        mesh: { type: 'string' },
        'mesh-heartbeat-ms': { type: 'string' },
        'mesh-ttl-ms': { type: 'string' },
        trace: { type: 'string' },
        'state-dir': { type: 'string' },
        'agent-id': { type: 'string' },
        'grace-ms': { type: 'string' },
        'resume-window-ms': { type: 'string' },
        'max-concurrent-tasks': { type: 'string' },
        'max-tasks-per-session': { type: 'string' },
        'max-tasks-per-principal': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: false,
    }));
  } catch (err) {
    die((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  let listen: URL | undefined;
  if (values.listen !== undefined) {
    try {
      listen = new URL(values.listen);
    } catch {
      die(`--listen ${values.listen} is not a URL; give one like ws://127.0.0.1:8787/tap`);
    }
    if (listen.protocol !== 'ws:') die(`--listen needs a ws:// URL, not ${listen.protocol}//`);
  }
  if (values.nats !== undefined) {
    if (listen) die('--listen and --nats each serve sessions; give one of them');
    if (!/^(nats|tls):\/\//i.test(values.nats)) die(`--nats needs a nats:// URL, e.g. nats://127.0.0.1:4222, not ${values.nats}`);
  }
  if (values.durable && values.nats === undefined) die('--durable serves durable queues on a NATS server: give --nats URL too');
  if (values.mesh !== undefined && !/^(nats|tls):\/\//i.test(values.mesh))
    die(`--mesh needs the nats:// URL of the registry's server, e.g. nats://127.0.0.1:4222, not ${values.mesh}`);
  if (values.mesh === undefined && (values['mesh-heartbeat-ms'] !== undefined || values['mesh-ttl-ms'] !== undefined))
    die('--mesh-heartbeat-ms and --mesh-ttl-ms belong to --mesh; give --mesh URL too');
  if (values.trace !== undefined && values.nats === undefined && values.mesh === undefined)
    die('--trace records the sessions served through NATS: give --nats URL or --mesh URL too');
  const agentId = values['agent-id'] ?? 'tap.reference-agent';
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(agentId) || agentId.length > 128) {
    die(`--agent-id ${agentId} is not an identifier: lowercase letters, digits, "_" and "-", in dot-separated segments`);
  }
  return {
    listen,
    durable: values.durable
      ? { leaseMs: whole(values, 'lease-ms', 30_000, 100), maxDeliver: whole(values, 'max-deliver', 5, 1) }
      : undefined,
    // spec: registry#entry: a mesh agent must be reachable; without another binding it serves through the registry's server.
    nats: values.nats ?? (values.mesh !== undefined && listen === undefined ? values.mesh : undefined),
    mesh: values.mesh,
    meshHeartbeatMs: values['mesh-heartbeat-ms'] === undefined ? undefined : whole(values, 'mesh-heartbeat-ms', 5000, 100),
    meshTtlMs: values['mesh-ttl-ms'] === undefined ? undefined : whole(values, 'mesh-ttl-ms', 15000, 200),
    trace: values.trace,
    stateDir: values['state-dir'],
    agentId,
    graceMs: whole(values, 'grace-ms', 10_000, 0),
    resumeWindowMs: whole(values, 'resume-window-ms', 300_000, 1000),
    maxConcurrentTasks: whole(values, 'max-concurrent-tasks', 64, 1),
    maxTasksPerSession: whole(values, 'max-tasks-per-session', 32, 1),
    maxTasksPerPrincipal: whole(values, 'max-tasks-per-principal', 32, 1),
  };
}

function envKeys(): PeerKey[] {
  try {
    return keysFromEnv();
  } catch (err) {
    die((err as Error).message);
  }
}

function card(o: Options): AgentCard {
  return {
    agent_id: o.agentId,
    name: 'TAP reference agent',
    description:
      'The reference implementation of a TAP 1.0 agent. It offers the conformance capabilities tap.test.* ' +
      'and is good at proving what the protocol requires; it does no useful work of its own. ' +
      'Limits: nesting 64 levels; 65536-byte frames before the ack; per session 10000 remembered message ids ' +
      'and 4 MiB of remembered replies; per principal 4096 tasks kept and 256 MiB of retained messages, ' +
      '16384 tasks in all, each kept at least the resume window; 4096 sessions; 1024 connections; ' +
      '16 MiB of unread output per connection.',
    capabilities: [],
    limits: {
      max_concurrent_tasks: o.maxConcurrentTasks,
      max_task_seconds: 3600,
      max_message_bytes: 1048576,
      max_tasks_per_session: o.maxTasksPerSession,
      max_tasks_per_principal: o.maxTasksPerPrincipal,
    },
  };
}

/** With --trace, a recorder for each NATS session that appends its trace records to `file` (spec: mesh#trace-records). */
async function traceTo(file: string, agentId: string): Promise<(t: Transport) => Transport> {
  const { recordSessionsToFile } = await import('../mesh/recording.ts');
  return recordSessionsToFile(agentId, file, (err) =>
    process.stderr.write(`tap-reference-agent: the trace file ${file} failed: ${err.message}\n`),
  ).catch((err: Error) => die(`cannot write the trace to ${file}: ${err.message}`));
}

/** With --mesh, joins the mesh once the agent listens, so that its entry names a live endpoint (spec: registry#entry). */
async function joinMesh(agent: Agent, o: Options): Promise<void> {
  if (!o.mesh) return;
  try {
    await agent.joinMesh({ url: o.mesh, heartbeatMs: o.meshHeartbeatMs, ttlMs: o.meshTtlMs });
  } catch (err) {
    await agent.shutdown('could not join the mesh');
    die(`cannot join the mesh at ${o.mesh}: ${(err as Error).message}`);
  }
}

async function main(): Promise<void> {
  const options = parse();
  let agent: Agent;
  try {
    agent = createAgent({
      card: card(options),
      capabilities: withConformanceCapabilities(),
      stateDir: options.stateDir,
      keys: envKeys(),
      shutdownGraceMs: options.graceMs,
      resumeWindowMs: options.resumeWindowMs,
      // The floor of the range (spec: limits#heartbeats): the final heartbeat_ms is the larger of the
      // proposal and this, so a requester gets what it proposes (1000 ms when it proposes none), and
      // the suite's liveness and late-plan cases wait about a second per heartbeat instead of ten.
      heartbeatMs: 1_000,
      logger: stderrLogger,
    });
  } catch (err) {
    die((err as Error).message);
  }
  process.on('unhandledRejection', (err) => stderrLogger('error', `unhandled: ${(err as Error)?.stack ?? String(err)}`));
  // A reader that went away (EPIPE) is a lost transport, never a crash (spec: shutdown#epipe).
  process.stderr.on('error', () => {});
  if (options.listen || options.nats) process.stdout.on('error', () => {});
  // Signals: one shutdown of every session, exit 0 within the grace period (spec: shutdown#signals).
  const onSignal = (signal: string): void => {
    setTimeout(() => process.exit(0), options.graceMs).unref();
    void agent.shutdown(`the agent received ${signal}`).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  if (options.listen) {
    const path = options.listen.pathname === '/' ? undefined : options.listen.pathname;
    let listener;
    try {
      listener = await agent.listen({
        host: options.listen.hostname.replace(/^\[|\]$/g, ''),
        port: Number(options.listen.port || 80),
        path,
      });
    } catch (err) {
      die(`cannot listen on ${options.listen.href}: ${(err as Error).message}`);
    }
    await joinMesh(agent, options);
    process.stdout.write(`${listener.url}\n`);
    await agent.stopped;
    process.exit(0);
  }
  if (options.nats) {
    let listener: AgentListener;
    try {
      listener = await agent.listenNats({
        url: options.nats,
        wrap: options.trace ? await traceTo(options.trace, options.agentId) : undefined,
      });
    } catch (err) {
      die(`cannot serve through NATS at ${options.nats}: ${(err as Error).message}`);
    }
    const stopDurable = options.durable ? await serveDurable(options.nats, options.agentId, options.durable) : undefined;
    await joinMesh(agent, options);
    process.stdout.write(`${listener.url}\n`);
    await agent.stopped;
    await stopDurable?.();
    process.exit(0);
  }
  // TAP_BREAK=<mutant> breaks one rule on purpose, for the mutation score of tap-conform (tools/mutation.ts).
  const broken = process.env.TAP_BREAK;
  if (broken) {
    const { serveBrokenStdio } = await import('../../conformance/mutation/switch.ts');
    await serveBrokenStdio(agent, broken, agent.card.limits.max_message_bytes).catch((err: Error) => die(err.message));
  } else await agent.serveStdio();
  await agent.shutdown('the session is over');
  process.exit(0);
}

await main();
