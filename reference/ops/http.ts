/**
 * The monitoring endpoints of a process: GET /healthz (readiness: 200 while it takes work, 503
 * while it drains or has stopped), GET /livez (200 while the process answers) and GET /metrics
 * (the Prometheus text format). Served beside a WebSocket listener on its port, or on a port of
 * their own; an unknown path is 404, a method other than GET or HEAD is 405, and a failing
 * collector is 500 with one line, never a crash.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXPOSITION_CONTENT_TYPE } from './prometheus.ts';

/** What /healthz reports: the process's status and the figures an operator looks at first. */
export interface HealthReport {
  /** ready: takes work; draining: a shutdown is under way; stopped: it has ended. */
  status: 'ready' | 'draining' | 'stopped';
  [figure: string]: unknown;
}

/** Where the endpoints read their answers. */
export interface MonitoringSource {
  health(): HealthReport;
  /** The metrics in the text format. */
  metrics(): Promise<string>;
}

/** The paths served. */
export const MONITORING_PATHS = ['/healthz', '/livez', '/metrics'] as const;

function send(res: ServerResponse, status: number, type: string, body: string, head: boolean, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...extra });
  res.end(head ? undefined : body);
}

/**
 * Answers a monitoring request and returns true, or returns false for a path it does not serve
 * (the caller answers it: 404 on a port of their own, the WebSocket server's 426 beside a listener).
 */
export function answerMonitoring(source: MonitoringSource, req: IncomingMessage, res: ServerResponse): boolean {
  let path: string;
  try {
    path = new URL(req.url ?? '/', 'http://localhost').pathname;
  } catch {
    return false;
  }
  if (!(MONITORING_PATHS as readonly string[]).includes(path)) return false;
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head) {
    send(res, 405, 'text/plain; charset=utf-8', `${path} answers GET and HEAD only\n`, false, { Allow: 'GET, HEAD' });
    return true;
  }
  if (path === '/metrics') {
    source.metrics().then(
      (text) => send(res, 200, EXPOSITION_CONTENT_TYPE, text, head),
      (err: Error) => send(res, 500, 'text/plain; charset=utf-8', `the metrics could not be collected: ${err.message}\n`, head),
    );
    return true;
  }
  let report: HealthReport;
  try {
    report = source.health();
  } catch (err) {
    send(res, 500, 'text/plain; charset=utf-8', `the health could not be read: ${(err as Error).message}\n`, head);
    return true;
  }
  const live = path === '/livez';
  const status = live ? (report.status === 'stopped' ? 503 : 200) : report.status === 'ready' ? 200 : 503;
  send(
    res,
    status,
    'application/json',
    `${JSON.stringify(live ? { status: report.status === 'stopped' ? 'stopped' : 'live' } : report)}\n`,
    head,
  );
  return true;
}

/** A monitoring server on a port of its own. */
export interface MonitoringServer {
  /** e.g. http://127.0.0.1:9464 */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Serves the monitoring endpoints on `host` (default 127.0.0.1) and `port` (default 0: any free one). */
export async function serveMonitoring(source: MonitoringSource, o: { host?: string; port?: number } = {}): Promise<MonitoringServer> {
  const host = o.host ?? '127.0.0.1';
  // Loaded here, not with the module: an agent without monitoring never pays for node:http.
  const { createServer } = await import('node:http');
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 10_000 }, (req, res) => {
    if (answerMonitoring(source, req, res)) return;
    send(res, 404, 'text/plain; charset=utf-8', `nothing here; try ${MONITORING_PATHS.join(', ')}\n`, req.method === 'HEAD');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => {});
  server.on('clientError', (_err, socket) => socket.destroy());
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}
