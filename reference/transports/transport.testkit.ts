/** Shared setup for the transport tests: a WebSocket echo server, clients, and waiting utilities. */
import type { InboundFrame } from './transport.ts';
import {
  connectWebSocket,
  createWebSocketServer,
  type TapWebSocketServer,
  type WebSocketServerOptions,
  type WebSocketTransport,
} from './websocket.ts';

const decoder = new TextDecoder();

/** The frame's bytes as text. */
export const text = (frame: InboundFrame): string => decoder.decode(frame.bytes);

/** Resolves after pending I/O callbacks have run. */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Turns a callback slot into a promise of its first call. */
export function waitFor<T>(register: (done: (value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve) => register(resolve));
}

/** Things to close after each test, last opened first. */
export class Cleanup {
  private readonly tasks: Array<() => Promise<void> | void> = [];

  /** Registers a closing step. */
  add(task: () => Promise<void> | void): void {
    this.tasks.push(task);
  }

  /** Runs every registered step. */
  async run(): Promise<void> {
    for (const task of this.tasks.splice(0).reverse()) await task();
  }

  /** A server whose sessions echo every frame back as text, unless `onSession` says otherwise. */
  async server(options: Partial<WebSocketServerOptions> = {}): Promise<TapWebSocketServer> {
    const server = await createWebSocketServer({
      onSession: (t) => {
        t.onmessage = (f) => void t.send(text(f));
        void t.start();
      },
      ...options,
    });
    this.add(() => server.close());
    return server;
  }

  /** A client transport (not started) that is closed after the test. */
  async client(url: string): Promise<WebSocketTransport> {
    const transport = await connectWebSocket(url);
    this.add(() => transport.close());
    return transport;
  }
}
