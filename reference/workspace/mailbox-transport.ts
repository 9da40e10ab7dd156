/**
 * The Transport over mailboxes: a session between `self` and `peer` writes to
 * `mailboxes/<peer>/<self>/` and reads `mailboxes/<self>/<peer>/`, each file one frame, so the
 * whole message protocol runs over files (spec: bindings-workspace#mailboxes). A harness drives an
 * agent by opening a transport with its own id as `self` and the agent's id as `peer`.
 */
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport, Transport } from '../transports/transport.ts';
import { ensureDir, listNames } from './fsio.ts';
import { isIdentifier } from './layout.ts';
import { MailboxReader, type DedupStore, type MailboxDelivery } from './mailbox-reader.ts';
import { MailboxWriter, parseMailboxName } from './mailbox-writer.ts';

/** Options of a mailbox transport. */
export interface MailboxTransportOptions {
  /** The workspace root (the directory holding `mailboxes/`). */
  root: string;
  /** This peer's agent id: the `<from>` of what it writes. */
  self: string;
  /** The other peer's agent id. */
  peer: string;
  /** Rescan period of the inbound mailbox (default 200 ms). */
  pollMs?: number;
  /** The initial frame limit (default 16 MiB). */
  maxFrameBytes?: number;
  /** Deduplication of inbound deliveries (default: a file store in the inbound mailbox). */
  dedup?: DedupStore;
}

/** A Transport whose frames are mailbox files; `sendRaw` writes arbitrary bytes as one file, for fault injection. */
export class MailboxTransport implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;

  private readonly writer: MailboxWriter;
  private readonly reader: MailboxReader;
  /** Set once the transport closed, or a subclass ended it: nothing more is sent or delivered. */
  protected closed = false;

  constructor(readonly options: MailboxTransportOptions) {
    this.writer = new MailboxWriter(options.root, options.peer, options.self);
    this.reader = new MailboxReader({
      root: options.root,
      to: options.self,
      from: options.peer,
      pollMs: options.pollMs,
      maxFrameBytes: options.maxFrameBytes,
      dedup: options.dedup,
      deliver: (frame, info) => this.deliver(frame, info),
      onerror: (err) => this.onerror?.(err),
    });
  }

  /** Opens both mailboxes and begins delivering inbound files in sequence order. */
  async start(): Promise<void> {
    await this.writer.open();
    await this.reader.start();
  }

  /** Writes one message file; a no-op once closed. */
  async send(text: string): Promise<void> {
    if (this.closed) return;
    await this.writer.send(text);
  }

  /** Writes `data` unchanged as one message file (the binary flag has no meaning for files). */
  async sendRaw(data: Uint8Array, _options: RawSendOptions = {}): Promise<void> {
    if (this.closed) return;
    await this.writer.send(data);
  }

  /** Stops reading; `onclose` fires once. Files already written stay for the peer to read. */
  async close(info: CloseInfo = { code: 1000 }): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.finish(info);
  }

  setMaxFrameBytes(n: number): void {
    this.reader.setMaxFrameBytes(n);
  }

  /** Reads what the inbound mailbox holds now, without waiting for the next rescan. */
  kick(): void {
    this.reader.kick();
  }

  /** The sequence number of the last file this side wrote. */
  get lastSent(): number {
    return this.writer.lastSeq;
  }

  /** Hands one inbound file to `onmessage` (a subclass may watch the deliveries: which file, read again or not). */
  protected deliver(frame: InboundFrame, _info: MailboxDelivery): void {
    if (!this.closed) this.onmessage?.(frame);
  }

  /** Stops reading and fires `onclose`. */
  protected async finish(info: CloseInfo): Promise<void> {
    await this.reader.stop();
    this.onclose?.(info);
  }
}

/** Creates (does not start) a mailbox transport. */
export function createMailboxTransport(options: MailboxTransportOptions): MailboxTransport {
  return new MailboxTransport(options);
}

/** What serveMailboxes needs of an agent: the reference runtime's `attach`. */
export interface AttachingAgent {
  attach(transport: Transport): { done: Promise<unknown>; close(): Promise<void> };
}

/** A running mailbox server. */
export interface MailboxServer {
  /** Peers with an open session right now. */
  peers(): string[];
  /** Stops watching and closes every transport. */
  close(): Promise<void>;
}

/**
 * Serves sessions over mailboxes: for every sender directory under `mailboxes/<agentId>/` that
 * holds messages, attaches a mailbox transport to the agent; when that session's transport
 * closes, a later message from the same sender opens a new one (spec: bindings-workspace#mailboxes).
 */
export function serveMailboxes(
  agent: AttachingAgent,
  options: { root: string; agentId: string; pollMs?: number; maxFrameBytes?: number },
): MailboxServer {
  const inbox = join(options.root, 'mailboxes', options.agentId);
  const active = new Map<string, { close(): Promise<void> }>();
  let closed = false;
  let scanning = false;
  let watcher: FSWatcher | null = null;

  const hasMail = async (peer: string): Promise<boolean> => {
    const dir = join(inbox, peer);
    for (const d of [dir, join(dir, '.inflight')]) {
      if ((await listNames(d)).some((n) => parseMailboxName(n) !== null)) return true;
    }
    return false;
  };

  const scan = async () => {
    if (closed || scanning) return;
    scanning = true;
    try {
      for (const peer of await listNames(inbox)) {
        if (closed) break;
        if (active.has(peer) || !isIdentifier(peer) || !(await hasMail(peer))) continue;
        const transport = createMailboxTransport({
          root: options.root,
          self: options.agentId,
          peer,
          pollMs: options.pollMs,
          maxFrameBytes: options.maxFrameBytes,
        });
        const conn = agent.attach(transport);
        active.set(peer, conn);
        void conn.done.finally(() => {
          active.delete(peer);
          if (!closed) setTimeout(() => void scan(), 0);
        });
      }
    } finally {
      scanning = false;
    }
  };

  const timer = setInterval(() => void scan(), options.pollMs ?? 200);
  void ensureDir(inbox).then(() => {
    if (closed) return;
    try {
      watcher = watch(inbox, () => void scan());
      watcher.on('error', () => watcher?.close());
    } catch {
      watcher = null;
    }
    void scan();
  });

  return {
    peers: () => [...active.keys()],
    async close() {
      closed = true;
      clearInterval(timer);
      watcher?.close();
      await Promise.all([...active.values()].map((c) => c.close()));
    },
  };
}
