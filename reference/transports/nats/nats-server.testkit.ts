/**
 * Real nats-server processes for the tests of the NATS binding: one server with JetStream on a
 * free loopback port and a temporary store, or a three-node cluster with routes on loopback.
 * Nothing is mocked; every server started here is stopped by `stop()` and its store removed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../free-port.testkit.ts';

/** The server binary: TAP_NATS_SERVER, or nats-server on PATH (Debian installs it in /usr/sbin). */
export const NATS_SERVER_BIN = process.env.TAP_NATS_SERVER ?? 'nats-server';

const SEARCH_PATH = `${process.env.PATH ?? ''}:/usr/sbin:/usr/local/sbin:/sbin`;

/** True when nats-server can be started; the tests of the binding skip with a message otherwise. */
export const natsServerInstalled: boolean =
  spawnSync(NATS_SERVER_BIN, ['--version'], { env: { ...process.env, PATH: SEARCH_PATH }, stdio: 'ignore' }).status === 0;

/** The line a test file prints when it skips for want of a server. */
export const NO_NATS_SERVER =
  'nats-server is not installed: the NATS binding tests are skipped (apt-get install -y nats-server, or set TAP_NATS_SERVER)';

/** One running server. */
export interface NatsServer {
  /** Where clients connect, e.g. nats://127.0.0.1:41222. */
  readonly url: string;
  readonly port: number;
  /** The HTTP monitoring port (varz, healthz). */
  readonly monitorPort: number;
  /** The server name inside a cluster. */
  readonly name: string;
  /** The server's process id (what a benchmark reads its CPU time by). */
  readonly pid: number | undefined;
  /** Sends a signal (default SIGTERM) and resolves when the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the server and removes its store. */
  stop(): Promise<void>;
}

/** Options of `startNatsServer`. */
export interface NatsServerOptions {
  /** The largest message the server accepts, in bytes (default: the server's, 1 MiB). */
  maxPayload?: number;
  /** How long to wait for the server to be ready, in ms (default 10 000). */
  readyTimeoutMs?: number;
  /** False starts the server without JetStream (default true). */
  jetstream?: boolean;
  /** More lines of the server's configuration file (a `tls { … }` block, `authorization { … }`). */
  config?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A server that could not bind one of its ports: another process took it after `freePort` found it free. */
class PortTaken extends Error {}

/** Runs `start` again with fresh ports (it picks them itself) while a port it picked is taken first, up to three times. */
async function withFreshPorts<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt === 3) throw err;
    }
  }
}

/** Waits until the server's health endpoint reports it (and JetStream, if on) ready, or the process exits. */
async function ready(child: ChildProcess, monitorPort: number, timeoutMs: number, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const output = log();
      const message = `nats-server exited before it was ready:\n${output}`;
      throw /address already in use/i.test(output) ? new PortTaken(message) : new Error(message);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${monitorPort}/healthz`);
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(50);
  }
  throw new Error(`nats-server was not ready within ${timeoutMs} ms:\n${log()}`);
}

interface Launch {
  name: string;
  args: string[];
  port: number;
  monitorPort: number;
  store: string;
  readyTimeoutMs: number;
}

/** Starts one nats-server process and resolves once it can serve. */
async function launch(l: Launch, waitReady = true): Promise<{ server: NatsServer; ready: Promise<void> }> {
  const child = spawn(NATS_SERVER_BIN, l.args, { env: { ...process.env, PATH: SEARCH_PATH }, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    output = (output + chunk).slice(-8000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const server: NatsServer = {
    url: `nats://127.0.0.1:${l.port}`,
    port: l.port,
    monitorPort: l.monitorPort,
    name: l.name,
    pid: child.pid,
    kill,
    async stop() {
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await kill('SIGTERM');
      clearTimeout(timer);
      rmSync(l.store, { recursive: true, force: true });
    },
  };
  const isReady = ready(child, l.monitorPort, l.readyTimeoutMs, () => output);
  if (waitReady) {
    try {
      await isReady;
    } catch (err) {
      await server.stop();
      throw err;
    }
  }
  return { server, ready: isReady };
}

/** Starts nats-server with JetStream on a free 127.0.0.1 port and a temporary store. */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  return withFreshPorts(() => startOne(options));
}

async function startOne(options: NatsServerOptions): Promise<NatsServer> {
  const port = await freePort();
  const monitorPort = await freePort();
  const store = mkdtempSync(join(tmpdir(), 'tap-nats-'));
  const js = options.jetstream === false ? [] : ['-js', '-sd', store];
  const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), ...js, '-n', 'tap-test'];
  if (options.maxPayload !== undefined || options.config !== undefined) {
    const conf = join(store, 'server.conf');
    const lines = [
      ...(options.maxPayload !== undefined ? [`max_payload: ${options.maxPayload}`] : []),
      ...(options.config ? [options.config] : []),
    ];
    writeFileSync(conf, `${lines.join('\n')}\n`);
    args.push('-c', conf);
  }
  const { server } = await launch({ name: 'tap-test', args, port, monitorPort, store, readyTimeoutMs: options.readyTimeoutMs ?? 10_000 });
  return server;
}

/** A cluster of servers joined by routes on loopback, each with JetStream. */
export interface NatsCluster {
  readonly servers: readonly NatsServer[];
  /** Every client URL, comma-separated, as a client's server list. */
  readonly urls: string;
  /** Stops every server that still runs and removes the stores. */
  stop(): Promise<void>;
}

/** Starts `size` (default 3) JetStream servers in one cluster with routes on 127.0.0.1. */
export async function startNatsCluster(size = 3, options: NatsServerOptions = {}): Promise<NatsCluster> {
  return withFreshPorts(() => startCluster(size, options));
}

async function startCluster(size: number, options: NatsServerOptions): Promise<NatsCluster> {
  const nodes: Array<{ port: number; monitorPort: number; routePort: number; store: string; name: string }> = [];
  for (let i = 0; i < size; i++) {
    nodes.push({
      port: await freePort(),
      monitorPort: await freePort(),
      routePort: await freePort(),
      store: mkdtempSync(join(tmpdir(), `tap-nats-${i}-`)),
      name: `tap-node-${i}`,
    });
  }
  const routes = nodes.map((n) => `nats://127.0.0.1:${n.routePort}`).join(',');
  // Every node starts before any is asked to be ready: JetStream in a cluster needs its peers.
  const launched = await Promise.all(
    nodes.map((n) =>
      launch(
        {
          name: n.name,
          port: n.port,
          monitorPort: n.monitorPort,
          store: n.store,
          readyTimeoutMs: options.readyTimeoutMs ?? 20_000,
          args: [
            ...['-a', '127.0.0.1', '-p', String(n.port), '-m', String(n.monitorPort), '-js', '-sd', n.store, '-n', n.name],
            ...['--cluster_name', 'tap-test', '--cluster', `nats://127.0.0.1:${n.routePort}`, '--routes', routes],
          ],
        },
        false,
      ),
    ),
  );
  const servers = launched.map((l) => l.server);
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    await Promise.all(launched.map((l) => l.ready));
  } catch (err) {
    await stop();
    throw err;
  }
  return { servers, urls: servers.map((s) => s.url).join(','), stop };
}

/** Retries an operation while a cluster elects new leaders after the loss of a node; throws its last error after `ms`. */
export async function whileElecting<T>(what: () => Promise<T>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await what();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
