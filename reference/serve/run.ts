/**
 * runAgent: an agent process from a card and handlers. It reads the command line (stdio by
 * default; `--listen`, `--nats`, `--mesh`, `--durable`), the conformance key and TAP_CONFORMANCE from
 * the environment, serves, shuts down on SIGTERM, SIGINT and the end of input, and exits with
 * status 0 (spec: shutdown#signals, shutdown#end-of-input). A usage error exits 2.
 */
import { basename } from 'node:path';
import { createAgent, type Agent, type AgentListener, type AgentOptions, stderrLogger } from '../agent/index.ts';
import { conformanceFromEnv, maxTaskSecondsFromEnv, processEnvironment } from '../agent/environment.ts';
import { stopOnSignals } from '../agent/signals.ts';
import { readTlsFiles, type TlsOptions } from '../transports/tls.ts';
import type { RecordingFile } from '../mesh/recording.ts';
import { readSigningKey, type SigningKey, type TrustFile } from '../trust.ts';
import { parseCommandLine, SERVE_USAGE, UsageError, type ServeOptions } from './command-line.ts';

/** Options of `runAgent`: the agent's, and how its process is run. */
export interface RunAgentOptions extends AgentOptions {
  /** The command line (default: process.argv after the script). */
  argv?: readonly string[];
  /** The program's name in its usage and errors (default: the script's file name). */
  program?: string;
  /** What the agent does, a paragraph under the usage line of --help (default: the card's description). */
  about?: string;
  /** Exit the process when the agent stops (default true); false resolves with the exit status instead. */
  exit?: boolean;
}

/** How a served agent is stopped and what else it stops: durable runners, the trace file. */
interface Served {
  agent: Agent;
  closers: (() => Promise<void>)[];
  /** The TLS material of the command line, read. */
  tls?: TlsOptions;
}

const programName = (): string => basename(process.argv[1] ?? 'agent');

/** Prints one line for people and the pointer to --help. */
function usageError(program: string, message: string): number {
  process.stderr.write(`${program}: ${message}\nRun ${program} --help for usage.\n`);
  return 2;
}

/** The usage text of an agent process. */
export function agentUsage(program: string, about: string, extra = ''): string {
  return `Usage: ${program} [options]\n\n${about}\n\nOptions:\n${extra}${SERVE_USAGE}\n`;
}

/** With --trace, a recorder for each NATS session that appends its trace records to `file` (spec: mesh#trace-records). */
async function traceTo(file: string, agentId: string, program: string): Promise<RecordingFile> {
  const { recordSessionsToFile } = await import('../mesh/recording.ts');
  return recordSessionsToFile(agentId, file, (err) =>
    process.stderr.write(`${program}: the trace file ${file} failed: ${err.message}\n`),
  ).catch((err: Error) => {
    throw new UsageError(`cannot write the trace to ${file}: ${err.message}`);
  });
}

/** Starts the durable runners of --durable on their own NATS connection. */
async function startDurable(served: Served, options: AgentOptions, serve: ServeOptions): Promise<void> {
  if (!serve.durable || !serve.nats) return;
  const [{ connect }, { LEAN_CLIENT, natsClientOptions, parseNatsUrl }, { serveDurably }] = await Promise.all([
    import('../transports/nats/client.ts'),
    import('../transports/nats/url.ts'),
    import('./durable.ts'),
  ]);
  const { readSigningKey, readTrustFile } = await import('../trust.ts');
  let keys: { signingKey?: SigningKey; trust?: TrustFile } = {};
  try {
    keys = {
      ...(serve.signingKey !== undefined ? { signingKey: readSigningKey(serve.signingKey) } : {}),
      ...(serve.trust !== undefined ? { trust: readTrustFile(serve.trust) } : {}),
    };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (keys.signingKey && keys.signingKey.principal !== served.agent.card.agent_id)
    throw new UsageError(
      `--signing-key ${serve.signingKey} is the key of ${keys.signingKey.principal}, not of this agent (${served.agent.card.agent_id})`,
    );
  const address = parseNatsUrl(serve.nats);
  const nc = await connect({ ...natsClientOptions(address, served.tls), ...LEAN_CLIENT });
  const card = served.agent.card;
  const log = options.logger ?? stderrLogger;
  try {
    const durable = await serveDurably({
      nc,
      agentId: card.agent_id,
      offered: card.capabilities.map((c) => c.name),
      capabilities: options.capabilities,
      leaseMs: serve.durable.leaseMs,
      maxDeliver: serve.durable.maxDeliver,
      ...keys,
      maxTaskSeconds: card.limits.max_task_seconds,
      ...(served.agent.audit ? { audit: served.agent.audit } : {}),
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
      // A consumer left with another lease, dead letters that could not move: said; the rest is routine.
      log: (level, message) => {
        if (level !== 'info') log(level, message);
      },
    });
    const removeMetrics = served.agent.addMetrics(() => durable.metrics());
    served.closers.push(async () => {
      removeMetrics();
      await durable.stop();
      await nc.close().catch(() => undefined);
    });
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw err;
  }
}

/** With --jwt-*: an authenticator that verifies bearer tokens as JWTs, and a token required of every session (spec: security#bearer-tokens). */
async function bearerTokens(jwt: NonNullable<ServeOptions['jwt']>): Promise<Pick<AgentOptions, 'authenticate' | 'requireCredentials'>> {
  const { jwtAuthenticator, readJwtKeys } = await import('../agent/jwt.ts');
  const authenticate = await jwtAuthenticator({ issuer: jwt.issuer, audience: jwt.audience, keys: readJwtKeys(jwt.keys) });
  return { authenticate, requireCredentials: true };
}

/** How long an agent started beside its NATS server waits for the server to accept connections. */
const SERVER_START_WAIT_MS = 10_000;

/**
 * Retries `open` while the server refuses connections, up to SERVER_START_WAIT_MS, saying once on
 * stderr that it waits: an agent started in the same breath as its server does not fail for a race.
 */
async function whileRefused<T>(open: () => Promise<T>, url: string, program: string): Promise<T> {
  const until = Date.now() + SERVER_START_WAIT_MS;
  for (let said = false; ; said = true) {
    try {
      return await open();
    } catch (err) {
      if (!/connection refused/i.test((err as Error).message) || Date.now() > until) throw err;
      if (!said) process.stderr.write(`${program}: waiting up to ${SERVER_START_WAIT_MS / 1000} s for the NATS server at ${url}\n`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** --metrics-port and --metrics-host, else TAP_METRICS_PORT and TAP_METRICS_HOST of the agent's environment. */
function metricsAddress(options: AgentOptions, serve: ServeOptions): ServeOptions['metrics'] {
  if (serve.metrics) return serve.metrics;
  const env = options.env === false ? {} : (options.env ?? process.env);
  const port = env.TAP_METRICS_PORT;
  if (port === undefined || port === '') return undefined;
  if (!/^\d+$/.test(port) || Number(port) > 65_535)
    throw new UsageError(`TAP_METRICS_PORT=${port} is not a port (0 to 65535; 0 picks a free one)`);
  const host = env.TAP_METRICS_HOST;
  return { port: Number(port), ...(host ? { host } : {}) };
}

/** Whether the --listen URL's own port serves the monitoring endpoints: the same port given, and no other interface. */
function besideSessions(serve: ServeOptions, metrics: ServeOptions['metrics']): boolean {
  if (!serve.listen || !metrics || metrics.port === 0) return false;
  const host = serve.listen.hostname.replace(/^\[|\]$/g, '');
  return Number(serve.listen.port || (serve.listen.protocol === 'wss:' ? 443 : 80)) === metrics.port && (metrics.host ?? host) === host;
}

/** Serves GET /healthz, /livez and /metrics on a port of their own, and says where on stderr. */
async function serveMonitoringEndpoints(agent: Agent, metrics: NonNullable<ServeOptions['metrics']>, program: string): Promise<void> {
  const where = `${metrics.host ?? '127.0.0.1'}:${metrics.port}`;
  const listener = await agent.serveMonitoring(metrics).catch((err: Error) => {
    throw new UsageError(`cannot serve health and metrics on ${where}: ${err.message}`);
  });
  process.stderr.write(`${program}: health at ${listener.url}/healthz, metrics at ${listener.url}/metrics\n`);
}

/** Serves the binding the command line chose; resolves with the URL printed on stdout, or null for stdio. */
async function listen(served: Served, options: AgentOptions, serve: ServeOptions, program: string): Promise<string | null> {
  const { agent } = served;
  const metrics = metricsAddress(options, serve);
  const beside = besideSessions(serve, metrics);
  let listener: AgentListener | undefined;
  if (serve.listen) {
    const at = serve.listen;
    listener = await agent
      .listen({
        host: at.hostname.replace(/^\[|\]$/g, ''),
        port: Number(at.port || (at.protocol === 'wss:' ? 443 : 80)),
        path: at.pathname === '/' ? undefined : at.pathname,
        ...(beside ? { monitoring: true } : {}),
        // The command line gave a certificate and key for a wss:// URL (parseCommandLine).
        ...(at.protocol === 'wss:' && served.tls?.cert !== undefined && served.tls.key !== undefined
          ? { tls: { cert: served.tls.cert, key: served.tls.key, ...(served.tls.ca !== undefined ? { ca: served.tls.ca } : {}) } }
          : {}),
      })
      .catch((err: Error) => {
        throw new UsageError(`cannot listen on ${at.href}: ${err.message}`);
      });
  } else if (serve.nats) {
    const url = serve.nats;
    const recording = serve.trace ? await traceTo(serve.trace, agent.card.agent_id, program) : undefined;
    // Closed after the agent stopped (stopAll), so that its last records reach the file.
    if (recording) served.closers.push(() => recording.close());
    const wrap = recording?.wrap;
    const tls = served.tls;
    listener = await whileRefused(() => agent.listenNats({ url, ...(wrap ? { wrap } : {}), ...(tls ? { tls } : {}) }), url, program).catch(
      (err: Error) => {
        throw new UsageError(`cannot serve through NATS at ${url}: ${err.message}`);
      },
    );
    await startDurable(served, options, serve).catch((err: Error) => {
      throw new UsageError(`cannot serve durable queues through NATS at ${url}: ${err.message}`);
    });
  }
  if (metrics && !beside) await serveMonitoringEndpoints(agent, metrics, program);
  if (!listener) return null;
  if (serve.mesh) {
    const { url, heartbeatMs, ttlMs, keyFile } = serve.mesh;
    let signingKey: SigningKey | undefined;
    try {
      signingKey = keyFile === undefined ? undefined : readSigningKey(keyFile);
    } catch (err) {
      throw new UsageError(`--mesh-key: ${(err as Error).message}`);
    }
    // Loaded on first use: an agent outside a mesh never loads the registry.
    const { joinMesh } = await import('../mesh/join.ts');
    await joinMesh(agent, {
      url,
      heartbeatMs,
      ttlMs,
      log: options.logger ?? stderrLogger,
      ...(served.tls ? { tls: served.tls } : {}),
      ...(signingKey ? { signingKey } : {}),
    }).catch((err: Error) => {
      throw new UsageError(`cannot join the mesh at ${url}: ${err.message}`);
    });
  }
  return listener.url;
}

/** Stops the agent, then what it serves beside its sessions. */
async function stopAll(served: Served, reason: string): Promise<void> {
  await served.agent.shutdown(reason);
  await Promise.all(served.closers.map((close) => close().catch(() => undefined)));
}

/**
 * Serves an agent as its command line says, until it stops; resolves with the process's exit
 * status (0 when it stopped, 2 for a command line it cannot serve). Signals exit at once with 0.
 * `alsoStop` runs after the agent has stopped, on every way it stops (a bridge closes its server).
 */
export async function serveAgent(
  options: AgentOptions,
  serve: ServeOptions,
  program = programName(),
  alsoStop?: () => Promise<void>,
): Promise<number> {
  let tls: TlsOptions | undefined;
  let tokens: Partial<AgentOptions>;
  try {
    tls = serve.tls ? readTlsFiles(serve.tls) : undefined;
    tokens = serve.jwt ? await bearerTokens(serve.jwt) : {};
  } catch (err) {
    return usageError(program, (err as Error).message);
  }
  let served: Served;
  try {
    served = {
      ...(tls ? { tls } : {}),
      agent: createAgent({
        ...options,
        ...tokens,
        ...(serve.stateDir !== undefined ? { stateDir: serve.stateDir } : {}),
        ...(serve.audit ? { audit: serve.audit } : {}),
        ...(serve.graceMs !== undefined ? { shutdownGraceMs: serve.graceMs } : {}),
        ...(serve.heartbeatMs !== undefined ? { heartbeatMs: serve.heartbeatMs } : {}),
        ...(serve.resumeWindowMs !== undefined ? { resumeWindowMs: serve.resumeWindowMs } : {}),
        signals: false,
      }),
      closers: alsoStop ? [alsoStop] : [],
    };
  } catch (err) {
    // The agent's own options (its card, its handlers) are at fault, not the command line.
    process.stderr.write(`${program}: the agent could not start: ${(err as Error).message}\n`);
    return 2;
  }
  // A reader that went away (EPIPE) is a lost transport, never a crash (spec: shutdown#epipe).
  process.stderr.on('error', () => {});
  if (serve.listen || serve.nats) process.stdout.on('error', () => {});
  const log = options.logger ?? stderrLogger;
  const onUnhandled = (err: unknown): void => log('error', `unhandled: ${(err as Error)?.stack ?? String(err)}`);
  process.on('unhandledRejection', onUnhandled);
  // spec: shutdown#signals: one shutdown of every session and of what runs beside them, then exit 0.
  const release =
    options.signals === false
      ? () => {}
      : stopOnSignals((signal) => stopAll(served, `the agent received ${signal}`), options.shutdownGraceMs ?? serve.graceMs ?? 10_000);
  try {
    const url = await listen(served, options, serve, program);
    if (url === null) {
      // spec: shutdown#end-of-input: the session is over when the input ends.
      await served.agent.serveStdio();
      await stopAll(served, 'the session is over');
      return 0;
    }
    process.stdout.write(`${url}\n`);
    await served.agent.stopped;
    await stopAll(served, 'the agent stopped');
    return 0;
  } catch (err) {
    await stopAll(served, 'the agent could not start');
    if (err instanceof UsageError) return usageError(program, err.message);
    throw err;
  } finally {
    release();
    process.off('unhandledRejection', onUnhandled);
  }
}

/**
 * The options with the card's max_task_seconds that TAP_MAX_TASK_SECONDS asks for, when the agent
 * is started for certification: tap-conform starts the stdio agent of the case that waits a task
 * out past max_task_seconds with a short one (spec: conformance#case-limits). Outside conformance
 * mode the card is as given.
 */
export function withCaseLimits(options: AgentOptions): AgentOptions {
  const env = options.env === false ? {} : (options.env ?? processEnvironment());
  if (!(options.conformance ?? conformanceFromEnv(env))) return options;
  const seconds = maxTaskSecondsFromEnv(env);
  if (seconds === undefined || typeof options.card !== 'object' || options.card === null) return options;
  return { ...options, card: { ...options.card, limits: { ...options.card.limits, max_task_seconds: seconds } } };
}

/**
 * Runs an agent process from a card and handlers, serving the binding its command line names;
 * exits the process when the agent stops (unless `exit` is false: then resolves with the status).
 */
export async function runAgent(options: RunAgentOptions): Promise<number> {
  const { argv = process.argv.slice(2), program = programName(), about, exit = true, ...agentOptions } = options;
  const finish = (code: number): number => (exit ? process.exit(code) : code);
  let serve: ServeOptions;
  try {
    ({ serve } = parseCommandLine(argv));
  } catch (err) {
    return finish(usageError(program, (err as Error).message));
  }
  if (serve.help) {
    const description = about ?? (agentOptions.card as { description?: string } | undefined)?.description ?? 'A TAP agent.';
    process.stdout.write(agentUsage(program, description));
    return finish(0);
  }
  let limited: AgentOptions;
  try {
    limited = withCaseLimits(agentOptions);
  } catch (err) {
    return finish(usageError(program, (err as Error).message));
  }
  return finish(await serveAgent(limited, serve, program));
}
