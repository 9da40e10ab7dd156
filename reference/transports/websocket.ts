import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isIPv4, isIPv6, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import type WebSocket from 'ws';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes } from './frame.ts';
import { clientIdentity, type Pem, type TlsOptions } from './tls.ts';
import { CloseCode, TAP_SUBPROTOCOL, WebSocketTransport } from './websocket-transport.ts';

export { CloseCode, TAP_SUBPROTOCOL, WebSocketTransport } from './websocket-transport.ts';

/** Options for `createWebSocketServer`. */
export interface WebSocketServerOptions {
  /** The interface to listen on (default 127.0.0.1). */
  host?: string;
  /** The port (default 0: any free port; read it from `url`). */
  port?: number;
  /** The only path that accepts sessions (default: any path). */
  path?: string;
  /** The hard ceiling on a frame: a bigger one closes the connection with 1009 (default 16 MiB). */
  maxPayload?: number;
  /** How long a client may take to send the HTTP upgrade request's headers, in ms (default 10 000). */
  headersTimeoutMs?: number;
  /** How long a close waits for the peer's close frame before dropping the connection, in ms (default 5 000). */
  closeTimeout?: number;
  /**
   * Serve wss:// with this certificate and key; with `ca` too, every client must present a
   * certificate that `ca` verifies, and its principal comes with the session (spec:
   * security#client-certificates).
   */
  tls?: { cert: Pem; key: Pem; ca?: Pem; principalOf?: (cert: PeerCertificate) => string | undefined };
  /**
   * Called once per accepted connection with its transport (not yet started), the HTTP request,
   * and the principal of the client's verified certificate when the server requires one.
   */
  onSession: (transport: WebSocketTransport, request: IncomingMessage, principal?: string) => void;
  /**
   * Sees each plain HTTP request (not an upgrade) first and returns true when it answered it
   * (the agent's /healthz and /metrics); the others get 426 Upgrade Required.
   */
  onHttpRequest?: (request: IncomingMessage, response: ServerResponse) => boolean;
}

/** A listening TAP WebSocket endpoint. */
export interface TapWebSocketServer {
  /** Where clients connect, e.g. ws://127.0.0.1:43121/. */
  readonly url: string;
  readonly port: number;
  /** The open sessions. */
  readonly sessions: ReadonlySet<WebSocketTransport>;
  /** Closes every session with 1001 and stops listening. */
  close(): Promise<void>;
}

/** Options for `connectWebSocket`. */
export interface ConnectWebSocketOptions {
  /** Subprotocols to offer (default ['tap.v1']); the server must choose tap.v1. */
  protocols?: string[];
  /** The hard ceiling on an inbound frame (default 16 MiB). */
  maxPayload?: number;
  /** Extra HTTP headers for the upgrade request (credentials, for instance). */
  headers?: Record<string, string>;
  /** How long the opening handshake may take, in ms (default 10 000). */
  handshakeTimeout?: number;
  /** How long a close waits for the peer's close frame before dropping the connection, in ms (default 5 000). */
  closeTimeout?: number;
  /** For wss://: the authorities to trust for the agent's certificate, and this client's own certificate and key (mutual TLS). */
  tls?: TlsOptions;
  /** The WebSocket class to use (default: ws). */
  WebSocketImpl?: typeof WebSocket;
}

const CLOSE_WAIT_MS = 2000;
const HEADERS_TIMEOUT_MS = 10_000;
const CLOSE_TIMEOUT_MS = 5000;

/**
 * The origin of a connection from `address` (spec: limits#sources): "websocket:" and the IPv4
 * address, or the /64 prefix of an IPv6 one, which one host usually holds whole.
 */
export function addressOrigin(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return `websocket:${mapped[1]}`;
  if (isIPv4(address)) return `websocket:${address}`;
  if (!isIPv6(address)) return undefined;
  const bare = address.split('%')[0]!;
  const [head, tail = ''] = bare.split('::') as [string, string?];
  const left = head === '' ? [] : head.split(':');
  const right = bare.includes('::') && tail !== '' ? tail.split(':') : [];
  const groups = bare.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  const prefix = groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16));
  return `websocket:${prefix.join(':')}::/64`;
}

/** Answers an upgrade request that cannot become a session with a plain HTTP error (`status`: "404 Not Found"), then hangs up. */
function refuseUpgrade(socket: Duplex, status: string, message: string): void {
  const body = `${message}\n`;
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: text/plain; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** The subprotocols an upgrade request offers. */
function offeredProtocols(request: IncomingMessage): string[] {
  const header = request.headers['sec-websocket-protocol'] ?? '';
  return header
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/**
 * Starts a TAP WebSocket endpoint (spec: bindings#websocket). An upgrade that does not offer
 * the subprotocol tap.v1 is refused with HTTP 400 before any session exists; one transport
 * is created per connection. Invalid UTF-8 in a text frame is not a WebSocket-level error
 * here: the bytes go up and the protocol answers MALFORMED_MESSAGE.
 */
export async function createWebSocketServer(options: WebSocketServerOptions): Promise<TapWebSocketServer> {
  const host = options.host ?? '127.0.0.1';
  const maxPayload = checkMaxFrameBytes(options.maxPayload ?? DEFAULT_MAX_FRAME_BYTES);
  const sessions = new Set<WebSocketTransport>();
  // ws and the HTTP servers are loaded here, not with the module: a stdio agent never pays for them.
  const { WebSocketServer } = await import('ws');
  const { createServer, STATUS_CODES } = await import('node:http');
  const refuse = (socket: Duplex, status: number, message: string) => refuseUpgrade(socket, `${status} ${STATUS_CODES[status]}`, message);
  const wss = new WebSocketServer({
    // closeTimeout exists in ws 8 but is missing from its type declarations.
    ...({ closeTimeout: options.closeTimeout ?? CLOSE_TIMEOUT_MS } as object),
    noServer: true,
    maxPayload,
    perMessageDeflate: false,
    skipUTF8Validation: true,
    clientTracking: false,
    handleProtocols: (protocols) => (protocols.has(TAP_SUBPROTOCOL) ? TAP_SUBPROTOCOL : false),
  });
  // A peer that trickles its HTTP headers is cut off after headersTimeoutMs (spec: bindings-websocket#opening).
  const headersTimeout = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const timeouts = { headersTimeout, requestTimeout: headersTimeout, connectionsCheckingInterval: Math.min(1000, headersTimeout) };
  const notAnUpgrade: RequestListener = (request, response) => {
    if (options.onHttpRequest?.(request, response)) return;
    response.writeHead(426, { 'Content-Type': 'text/plain; charset=utf-8', Upgrade: 'websocket' });
    response.end(`This is a TAP endpoint: connect with WebSocket, subprotocol ${TAP_SUBPROTOCOL}.\n`);
  };
  const tls = options.tls;
  const mutual = tls?.ca !== undefined;
  // With a ca, a client certificate is asked for and judged at the upgrade, so that a refusal says why (spec: security#client-certificates).
  const server = tls
    ? (await import('node:https')).createServer(
        {
          ...timeouts,
          cert: tls.cert,
          key: tls.key,
          ca: tls.ca,
          requestCert: mutual,
          rejectUnauthorized: false,
          handshakeTimeout: headersTimeout,
        },
        notAnUpgrade,
      )
    : createServer(timeouts, notAnUpgrade);
  // A client that fails the TLS handshake is dropped by the server; nothing to report.
  server.on('tlsClientError', () => {});
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    let principal: string | undefined;
    if (mutual) {
      const identity = clientIdentity(request.socket as TLSSocket, tls!.principalOf);
      if ('refused' in identity) {
        refuse(socket, identity.refused, `${identity.reason}.`);
        return;
      }
      principal = identity.principal;
    }
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (options.path !== undefined && path !== options.path) {
      refuse(socket, 404, `No TAP endpoint at ${path}; try ${options.path}.`);
      return;
    }
    if (!offeredProtocols(request).includes(TAP_SUBPROTOCOL)) {
      refuse(socket, 400, `TAP needs the WebSocket subprotocol ${TAP_SUBPROTOCOL} (Sec-WebSocket-Protocol: ${TAP_SUBPROTOCOL}).`);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const transport = new WebSocketTransport(ws, maxPayload, addressOrigin(request.socket.remoteAddress));
      sessions.add(transport);
      ws.once('close', () => sessions.delete(transport));
      try {
        options.onSession(transport, request, principal);
      } catch (err) {
        void transport.close({ code: CloseCode.INTERNAL_ERROR, reason: 'session setup failed' });
        transport.onerror?.(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => {});
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `${tls ? 'wss' : 'ws'}://${hostInUrl}:${port}${options.path ?? '/'}`,
    port,
    sessions,
    close() {
      closing ??= (async () => {
        const open = [...sessions];
        const all = Promise.all(open.map((t) => t.close({ code: CloseCode.GOING_AWAY, reason: 'server closing' })));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([all, new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
        clearTimeout(timer);
        for (const t of open) t.terminate();
        wss.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}

/** Turns a failed connection attempt into one line that says what to check. */
function connectFailure(url: string, err: Error): Error {
  const errno = err as NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] };
  const code = errno.code ?? errno.errors?.[0]?.code;
  let what = err.message;
  if (code === 'ECONNREFUSED') what = 'connection refused (is the agent listening there?)';
  else if (code === 'ENOTFOUND') what = 'host not found';
  else if (/no subprotocol|invalid subprotocol/i.test(err.message)) {
    what = `the server did not accept the subprotocol ${TAP_SUBPROTOCOL}`;
  } else if (/handshake has timed out/i.test(err.message)) what = 'the WebSocket handshake timed out';
  else if (/certificate required/i.test(err.message)) what = 'the agent requires a client certificate (give one with its key)';
  else if (/CERT|SSL|TLS|self[- ]signed/i.test(`${code ?? ''} ${err.message}`)) {
    what = `TLS failed: ${err.message} (check the certificate authority you trust and the certificate you present)`;
  }
  const error = new Error(`could not connect to ${url}: ${what}`, { cause: err });
  if (code !== undefined) (error as NodeJS.ErrnoException).code = code;
  return error;
}

/**
 * Opens a TAP session to a WebSocket endpoint and resolves with its transport (not yet
 * started); rejects with one clear line on a refused connection, an HTTP error, or a
 * server that does not speak tap.v1.
 */
export function connectWebSocket(url: string, options: ConnectWebSocketOptions = {}): Promise<WebSocketTransport> {
  const scheme = URL.canParse(url) ? new URL(url).protocol : undefined;
  if (scheme !== 'ws:' && scheme !== 'wss:') {
    return Promise.reject(
      new TypeError(
        `${JSON.stringify(url)} is not a WebSocket URL: give ws://host:port/path${scheme === 'http:' || scheme === 'https:' ? ' (ws:// for http://, wss:// for https://)' : ''} or wss://host:port/path`,
      ),
    );
  }
  const maxPayload = checkMaxFrameBytes(options.maxPayload ?? DEFAULT_MAX_FRAME_BYTES);
  // ws is loaded on the first connect, not with the module (see createWebSocketServer).
  const impl = options.WebSocketImpl ? Promise.resolve(options.WebSocketImpl) : import('ws').then((m) => m.default);
  return impl.then((Impl) => opened(Impl, url, options, maxPayload));
}

function opened(Impl: typeof WebSocket, url: string, options: ConnectWebSocketOptions, maxPayload: number): Promise<WebSocketTransport> {
  return new Promise<WebSocketTransport>((resolve, reject) => {
    let ws: WebSocket;
    try {
      ws = new Impl(url, options.protocols ?? [TAP_SUBPROTOCOL], {
        ...({ closeTimeout: options.closeTimeout ?? CLOSE_TIMEOUT_MS } as object),
        maxPayload,
        headers: options.headers,
        ...(options.tls ? { ca: options.tls.ca, cert: options.tls.cert, key: options.tls.key } : {}),
        handshakeTimeout: options.handshakeTimeout ?? 10_000,
        perMessageDeflate: false,
        skipUTF8Validation: true,
      });
    } catch (err) {
      reject(connectFailure(url, err instanceof Error ? err : new Error(String(err))));
      return;
    }
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    ws.on('error', (err) => fail(connectFailure(url, err)));
    ws.on('unexpected-response', (request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (body.length < 1024) body += chunk;
      });
      response.on('end', () => {
        const status = `HTTP ${response.statusCode} ${response.statusMessage ?? ''}`.trim();
        const detail = body.trim() === '' ? '' : `: ${body.trim().slice(0, 300)}`;
        fail(new Error(`could not connect to ${url}: ${status}${detail}`));
        request.destroy();
      });
      response.on('error', (err) => fail(connectFailure(url, err)));
    });
    ws.once('open', () => {
      if (ws.protocol !== TAP_SUBPROTOCOL) {
        ws.close(CloseCode.PROTOCOL_ERROR, `subprotocol ${TAP_SUBPROTOCOL} required`);
        fail(new Error(`could not connect to ${url}: the server did not accept the subprotocol ${TAP_SUBPROTOCOL}`));
        return;
      }
      settled = true;
      resolve(new WebSocketTransport(ws, maxPayload));
    });
  });
}
