/**
 * The harness's side of a session over mailboxes (spec: bindings-workspace#mailboxes): a
 * Transport that writes `mailboxes/<agent>/<self>/` and reads `mailboxes/<self>/<agent>/`, one
 * file per frame: the reference mailbox transport. Each connection of a run
 * writes under a sender id of its own, so that sessions running at once never share a mailbox.
 *
 * A mailbox has no close of its own: a session ends with the agent's `session.farewell` or a
 * fatal `error`, so the harness counts either as the agent closing the connection (whatever the
 * mailbox holds after it belongs to a new session), and the exit of the agent process as every
 * connection closing.
 */
import { MailboxTransport, type MailboxDelivery } from '../../reference/workspace/index.ts';
import type { CloseInfo, InboundFrame } from '../../reference/transports/transport.ts';

/** What the harness saw of the agent's writing into one mailbox. */
export interface InboundLog {
  /** Sequence numbers of the files delivered, in delivery order. */
  seqs: number[];
  /** Whether any file came out of `.inflight/` (left by an earlier reader). */
  redelivered: number;
}

/** The harness side of one mailbox session: the reference mailbox transport, which also ends at the agent's end of the session. */
export class HarnessMailbox extends MailboxTransport {
  readonly log: InboundLog = { seqs: [], redelivered: 0 };

  constructor(
    readonly root: string,
    readonly self: string,
    readonly agent: string,
    private readonly onClosed?: (t: HarnessMailbox) => void,
  ) {
    super({ root, self, peer: agent, pollMs: 50 });
  }

  protected override deliver(frame: InboundFrame, info: MailboxDelivery): void {
    if (this.closed) return;
    this.log.seqs.push(info.seq);
    if (info.redelivered) this.log.redelivered += 1;
    this.onmessage?.(frame);
    const end = endsSession(frame);
    if (end) {
      // The session is over: later files of this mailbox belong to a new session of the agent.
      this.closed = true;
      setImmediate(() => void this.finish({ code: 1000, reason: `the agent ended the session with ${end}` }));
    }
  }

  protected override async finish(info: CloseInfo): Promise<void> {
    this.onClosed?.(this);
    await super.finish(info);
  }
}

/** "session.farewell" or "a fatal error" when the frame ends the session, else null. */
export function endsSession(frame: InboundFrame): string | null {
  if (frame.oversized) return null;
  try {
    const m = JSON.parse(Buffer.from(frame.bytes).toString('utf8')) as { type?: unknown; payload?: { fatal?: unknown; code?: unknown } };
    if (m.type === 'session.farewell') return 'session.farewell';
    if (m.type === 'error' && m.payload?.fatal === true) return `a fatal error ${String(m.payload.code)}`;
  } catch {
    // not JSON: the peer reports it
  }
  return null;
}

/** Hands out mailbox connections to one agent, each under a fresh sender id, and closes them all when the agent exits. */
export class MailboxConnections {
  private n = 0;
  private readonly open = new Set<HarnessMailbox>();
  /** Every sender id used so far. */
  readonly senders = new Set<string>();

  constructor(
    readonly root: string,
    readonly agentId: string,
    readonly base: string,
  ) {}

  /** A new sender id: `<base>.c<n>`. */
  nextSender(): string {
    const id = `${this.base}.c${++this.n}`;
    this.senders.add(id);
    return id;
  }

  /** Opens (does not start) a connection under a fresh sender id. */
  connect(): HarnessMailbox {
    const t = new HarnessMailbox(this.root, this.nextSender(), this.agentId, (c) => this.open.delete(c));
    this.open.add(t);
    return t;
  }

  /** Reads the inbound mailboxes of every open connection for `ms` more. */
  async drain(ms: number): Promise<void> {
    for (const t of this.open) t.kick();
    await new Promise((r) => setTimeout(r, ms));
  }

  /** Closes every open connection, saying why (the agent process ended). */
  async closeAll(reason: string): Promise<void> {
    await Promise.all([...this.open].map((t) => t.close({ code: 1006, reason })));
  }
}
