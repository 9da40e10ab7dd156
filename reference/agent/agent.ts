/**
 * createAgent: a TAP agent from a card and capability handlers. The runtime enforces the
 * protocol (handshake, order of checks, task states, sequences, idempotency, plans, integrity,
 * liveness, shutdown, durability), so a handler only does its work (spec: index#abstract).
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import { createStdioAgentTransport, type StdioAgentOptions } from '../transports/stdio.ts';
import type { CloseInfo, Transport } from '../transports/transport.ts';
import type { NatsListenerOptions } from '../transports/nats/listener.ts';
import type { TapWebSocketServer, WebSocketServerOptions } from '../transports/websocket.ts';
import { CONFORMANCE_CAPABILITIES, CONFORMANCE_EXTENSION } from './conformance-capabilities.ts';
import { conformanceFromEnv, keysFromEnv, mergeKeys, processEnvironment } from './environment.ts';
import { cardExtensions } from './handshake.ts';
import { Journal } from './journal.ts';
import { monitoringSource, type MetricsCollector } from './monitoring.ts';
import { auditFromEnv, type AuditTrail } from '../ops/audit.ts';
import { answerMonitoring, serveMonitoring, type HealthReport } from '../ops/http.ts';
import type { AgentOptions } from './options.ts';
import { compactedRecords, replayJournal, resumeAfterRestart } from './recovery.ts';
import { Runtime } from './runtime.ts';
import { Connection, PRE_HANDSHAKE_MAX_BYTES, type AttachOptions } from './session.ts';
import { shutdownAll } from './shutdown.ts';
import { stopOnSignals } from './signals.ts';
import { TaskRunner } from './task-runner.ts';

/** How long a new connection has to begin its session before a full table may close it for another (a handshake takes milliseconds). */
const UNBEGUN_GRACE_MS = 250;

/** One attached transport. */
export interface AgentConnection {
  /** Resolves when the connection is over (for stdio: after the farewell on end of input). */
  readonly done: Promise<CloseInfo>;
  /** Closes the transport; its session stays resumable unless it had ended. */
  close(): Promise<void>;
}

/** Where and how the agent listens over WebSocket. */
export interface AgentListenOptions {
  /** The interface (default 127.0.0.1). */
  host?: string;
  /** The port (default 0: any free one; read it from the listener's url). */
  port?: number;
  /** The only path that accepts sessions (default: any). */
  path?: string;
  /**
   * Serve wss:// with this certificate and key; with `ca`, require of every client a certificate
   * that `ca` verifies, whose identity is the session's principal (spec: security#client-certificates).
   */
  tls?: WebSocketServerOptions['tls'];
  /** Answer GET /healthz, /livez and /metrics on the same port (default false; `serveMonitoring` gives them a port of their own). */
  monitoring?: boolean;
}

/** A listening WebSocket endpoint of the agent. */
export interface AgentListener {
  /** Where requesters connect, e.g. ws://127.0.0.1:8787/tap. */
  readonly url: string;
  close(): Promise<void>;
}

/** Where the agent accepts sessions over one binding: what a registry entry names (spec: registry#entry). */
export interface AgentEndpoint {
  binding: 'websocket' | 'nats';
  url: string;
  /** The NATS subject prefix when it is not "tap". */
  prefix?: string;
}

/** Where and how the agent listens over NATS: a nats:// URL or an open connection, and optional credentials. */
export type AgentNatsOptions = Pick<
  NatsListenerOptions,
  'url' | 'nc' | 'connectOptions' | 'tls' | 'prefix' | 'keepaliveMs' | 'trustRequestInfo'
> & {
  /** Sees each session's transport before the agent does and returns the one the agent serves (a trace recorder). */
  wrap?: (transport: Transport) => Transport;
};

/** A running agent. */
export interface Agent {
  /** The card as sent in handshake.ack (capabilities and durability filled in). */
  readonly card: AgentCard;
  /** Serves one session per transport connection (spec: bindings). */
  attach(transport: Transport, options?: AttachOptions): AgentConnection;
  /** Serves one session on this process's stdin and stdout; resolves when it is over (spec: bindings-stdio). */
  serveStdio(options?: StdioAgentOptions): Promise<void>;
  /** Accepts sessions over WebSocket, subprotocol tap.v1 (spec: bindings-websocket). */
  listen(options?: AgentListenOptions): Promise<AgentListener>;
  /** Accepts sessions over NATS under the card's agent id (spec: bindings-nats#opening). */
  listenNats(options: AgentNatsOptions): Promise<AgentListener>;
  /** Where the agent accepts sessions now: one endpoint per open listener (listen, listenNats). */
  endpoints(): AgentEndpoint[];
  /** Its non-terminal tasks across all sessions now. */
  runningTasks(): number;
  /**
   * Runs `hook` first when the shutdown begins, before any session ends (a mesh membership
   * withdraws its entry there: spec: registry#withdrawal); returns the function that removes it.
   * Throws once the shutdown has begun.
   */
  onShutdown(hook: () => Promise<void> | void): () => void;
  /**
   * Ends every session (hand-offs, results, farewells), refuses new ones and closes the
   * listeners; idempotent: a second call returns the first one's promise (spec: shutdown#signals).
   */
  shutdown(reason?: string): Promise<void>;
  /** Resolves once a shutdown (signal, admin request or `shutdown()`) has completed. */
  readonly stopped: Promise<void>;
  /** Its audit trail, when it keeps one (options.audit, TAP_AUDIT_FILE): one chained record per finished task. */
  readonly audit: AuditTrail | undefined;
  /** Its health now: what GET /healthz answers (status ready, draining or stopped). */
  health(): HealthReport;
  /** Its metrics now in the Prometheus text format: what GET /metrics answers. */
  metrics(): Promise<string>;
  /** Adds families collected at every scrape (a durable runner's queue); returns the function that removes them. */
  addMetrics(collect: MetricsCollector): () => void;
  /**
   * Serves GET /healthz, /livez and /metrics on a port of their own (host default 127.0.0.1, port
   * default 0: any free one; read it from the listener's url), until the agent has stopped.
   */
  serveMonitoring(options?: { host?: string; port?: number }): Promise<AgentListener>;
  /** Counts for monitoring and tests. */
  stats(): { sessions: number; connections: number; activeTasks: number; tasks: number; duplicateBytes: number };
}

/**
 * The options as the environment completes them: the conformance key of TAP_HMAC_* added to the
 * keys (spec: conformance#key-provisioning), and the conformance capabilities and extension added
 * when the agent is started for certification (TAP_CONFORMANCE=1) or `conformance` says so.
 */
function withEnvironment(options: AgentOptions): AgentOptions {
  if (typeof options !== 'object' || options === null) return options;
  const env = options.env === false ? {} : (options.env ?? processEnvironment());
  const keys = mergeKeys(options.keys ?? [], keysFromEnv(env));
  const audit = options.audit ?? auditFromEnv(env);
  const completed = { ...options, keys, ...(audit ? { audit } : {}) };
  if (!(options.conformance ?? conformanceFromEnv(env)) || typeof options.capabilities !== 'object') return completed;
  // The ones the caller did not give already (withConformanceCapabilities, or a definition of its own),
  // and the conformance extension of 1.1 beside the caller's (spec: conformance#conformance-extension).
  const given = options.extensions ?? [];
  const extensions = given.some((e) => e.uri === CONFORMANCE_EXTENSION.uri) ? given : [...given, CONFORMANCE_EXTENSION];
  return { ...completed, extensions, capabilities: { ...CONFORMANCE_CAPABILITIES, ...options.capabilities } };
}

/** Builds an agent; with `stateDir` it first restores its journal and resumes unfinished tasks. */
export function createAgent(options: AgentOptions): Agent {
  const rt = new Runtime(withEnvironment(options));
  const runner = new TaskRunner(rt);
  const connections = new Set<Connection>();
  const servers = new Set<Pick<TapWebSocketServer, 'close'>>();
  // Where the agent accepts sessions now, for a registry entry (spec: registry#entry).
  const endpoints = new Map<object, AgentEndpoint>();
  const shutdownHooks = new Set<() => Promise<void> | void>();
  if (options.stateDir) {
    const { journal, records } = Journal.open(options.stateDir, { log: (m) => rt.log('warn', m), ...options.journal });
    rt.journal = journal;
    replayJournal(rt, records);
    journal.snapshot = () => compactedRecords(rt);
    resumeAfterRestart(rt, runner);
  }
  let stopping: Promise<void> | undefined;
  let hasStopped = false;
  let markStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (markStopped = resolve));
  const collectors = new Set<MetricsCollector>();
  const monitored = monitoringSource({
    rt,
    connections: () => connections.size,
    phase: () => (hasStopped ? 'stopped' : stopping ? 'draining' : undefined),
    collectors,
  });
  // The monitoring servers answer through the drain (503 from /healthz) and close once the agent has stopped.
  const monitors = new Set<{ close(): Promise<void> }>();
  // spec: shutdown#signals: while the agent serves a binding, a signal shuts it down and the process exits 0.
  let releaseSignals: (() => void) | undefined;
  const holdSignals = (): void => {
    if (options.signals === false || releaseSignals || stopping) return;
    releaseSignals = stopOnSignals((signal) => shutdown(`the agent received ${signal}`), rt.settings.shutdownGraceMs);
  };
  const shutdown = (reason = 'the agent is shutting down'): Promise<void> => {
    stopping ??= (async () => {
      // spec: registry#withdrawal: the hooks go first (a mesh entry), so that no requester picks this agent meanwhile.
      await Promise.all(
        [...shutdownHooks].map(async (hook) => {
          try {
            await hook();
          } catch (err) {
            rt.log('warn', `a shutdown hook failed: ${(err as Error).message}`);
          }
        }),
      );
      await shutdownAll(rt, runner, [...connections], reason);
      await Promise.all([...servers].map((s) => s.close()));
      rt.journal?.close();
      rt.monitor.audit?.close();
      hasStopped = true;
      await Promise.all([...monitors].map((m) => m.close()));
      releaseSignals?.();
      markStopped();
    })();
    return stopping;
  };
  rt.shutdownProcess = (reason) => void shutdown(reason);

  // spec: limits#table-limits, limits#sources: connections are capped in all and per origin the binding can name.
  const connectionRefusal = (origin: string | undefined): string | undefined => {
    if (connections.size >= rt.settings.maxConnections && !makeRoom()) return 'too many connections; try again later';
    if (origin === undefined) return undefined;
    let mine = 0;
    for (const c of connections) if (c.transport.origin === origin) mine++;
    if (mine < rt.settings.maxConnectionsPerSource) return undefined;
    return `${origin} holds ${mine} connections, its share of this agent's ${rt.settings.maxConnections}; close one or try again later`;
  };

  // A full table makes room by closing its oldest connection that carries no session a moment
  // after it opened: it serves nobody, as an orphan without tasks does (spec: limits#sources).
  const openedAt = new WeakMap<Connection, number>();
  const makeRoom = (): boolean => {
    const now = rt.clock.now();
    for (const c of connections) {
      if (c.session !== undefined || now - (openedAt.get(c) ?? now) < UNBEGUN_GRACE_MS) continue;
      connections.delete(c);
      rt.log('info', 'the connection table is full: closing the oldest connection that began no session, to admit a new one');
      void c.close(1013, 'the agent needed the room for a new connection, and this one began no session');
      return true;
    }
    return false;
  };

  const attach = (transport: Transport, attachOptions: AttachOptions = {}): AgentConnection => {
    const conn = new Connection(rt, runner, transport, attachOptions);
    connections.add(conn);
    openedAt.set(conn, rt.clock.now());
    void conn.done.then(() => connections.delete(conn));
    conn.start().catch((err: Error) => {
      rt.log('error', `could not start a connection: ${err.message}`);
      void conn.close(1011, 'start failed');
    });
    return { done: conn.done, close: () => conn.close(1000, 'closed by the agent') };
  };

  // The card as a 1.1 ack sends it, with the extensions the agent supports: the one a registry entry holds.
  const extensions = cardExtensions(rt);
  return {
    card: extensions.length ? { ...rt.card, extensions: [...extensions] } : rt.card,
    attach,
    async serveStdio(stdioOptions = {}) {
      holdSignals();
      const transport = createStdioAgentTransport({ maxFrameBytes: rt.card.limits.max_message_bytes, ...stdioOptions });
      const conn = attach(transport, { stdio: true });
      await conn.done;
      // What the session wrote in its last turn (a handshake.ack to an init followed at once by the
      // end of input) is held until the turn ends: flushed and the output ended before this returns.
      await transport.close({ code: 1000, reason: 'the session is over' });
    },
    async listen(listenOptions = {}) {
      holdSignals();
      // Loaded on first use: an agent that serves stdio only never loads the WebSocket library.
      const { createWebSocketServer } = await import('../transports/websocket.ts');
      const server = await createWebSocketServer({
        host: listenOptions.host,
        port: listenOptions.port,
        path: listenOptions.path,
        ...(listenOptions.tls ? { tls: listenOptions.tls } : {}),
        // Frames larger than this close the connection (1009) instead of being buffered (spec: limits#pre-handshake).
        maxPayload: Math.max(1024 * 1024, rt.card.limits.max_message_bytes * 2),
        ...(listenOptions.monitoring ? { onHttpRequest: (req, res) => answerMonitoring(monitored, req, res) } : {}),
        onSession: (transport, _request, principal) => {
          // The connection over a cap is told to come back later.
          const refusal = connectionRefusal(transport.origin);
          if (refusal !== undefined) {
            rt.log('info', `refused a WebSocket connection: ${refusal}`);
            void transport.close({ code: 1013, reason: refusal });
            return;
          }
          attach(transport, principal !== undefined ? { principal } : {});
        },
      });
      servers.add(server);
      endpoints.set(server, { binding: 'websocket', url: server.url });
      return {
        url: server.url,
        close: async () => {
          servers.delete(server);
          endpoints.delete(server);
          await server.close();
        },
      };
    },
    async listenNats({ wrap, ...natsOptions }) {
      holdSignals();
      const ceiling = Math.max(1024 * 1024, rt.card.limits.max_message_bytes * 2);
      // Loaded on first use, as the WebSocket library is: an agent that serves stdio never loads a NATS client.
      const { createNatsListener } = await import('../transports/nats/listener.ts');
      const listener = await createNatsListener({
        ...natsOptions,
        agentId: rt.card.agent_id,
        // Until the handshake fixes max_message_bytes a connection keeps at most the pre-handshake limit of a frame (spec: limits#pre-handshake).
        maxFrameBytes: Math.min(PRE_HANDSHAKE_MAX_BYTES, rt.card.limits.max_message_bytes),
        ceilingBytes: ceiling,
        // The connection over a cap is refused with 1013.
        admit: connectionRefusal,
        onSession: (transport) => attach(wrap ? wrap(transport) : transport),
      });
      servers.add(listener);
      endpoints.set(listener, {
        binding: 'nats',
        url: listener.url,
        ...(natsOptions.prefix !== undefined && natsOptions.prefix !== 'tap' ? { prefix: natsOptions.prefix } : {}),
      });
      return {
        url: listener.url,
        close: async () => {
          servers.delete(listener);
          endpoints.delete(listener);
          await listener.close();
        },
      };
    },
    audit: rt.monitor.audit,
    health: () => monitored.health(),
    metrics: () => monitored.metrics(),
    addMetrics(collect) {
      collectors.add(collect);
      return () => void collectors.delete(collect);
    },
    async serveMonitoring(monitoringOptions = {}) {
      if (hasStopped) throw new Error('the agent has stopped');
      const server = await serveMonitoring(monitored, monitoringOptions);
      monitors.add(server);
      return {
        url: server.url,
        close: async () => {
          monitors.delete(server);
          await server.close();
        },
      };
    },
    endpoints: () => [...endpoints.values()],
    runningTasks: () => rt.tasks.activeCount(),
    onShutdown(hook) {
      if (stopping) throw new Error('the agent is shutting down');
      shutdownHooks.add(hook);
      return () => void shutdownHooks.delete(hook);
    },
    shutdown,
    stopped,
    stats() {
      return {
        sessions: rt.sessions.size,
        connections: connections.size,
        activeTasks: rt.tasks.activeCount(),
        tasks: rt.tasks.size,
        duplicateBytes: [...rt.sessions.values()].reduce((n, s) => n + s.seen.bytes, 0),
      };
    },
  };
}
