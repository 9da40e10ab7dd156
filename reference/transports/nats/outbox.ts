/**
 * The messages one side of a NATS connection has numbered and not yet published: every message
 * it sends in one turn of the event loop goes to the client together, which writes them to its
 * socket at once. Published one by one, the client flushes each from its own microtask: a write
 * system call per message, a third of an agent's CPU per task. The outboxes of a process are
 * published from one callback at the end of the turn, so that the sessions sharing a NATS
 * connection (a mesh requester's, an agent's) share its writes too; once they hold more than
 * FLUSH_AT bytes they are published at once, so that the peer begins on them while this side
 * still works (see FLUSH_AT: with 64 quiet tasks in flight, a third more of each process's time busy).
 */
import type { MsgHdrs } from '@nats-io/transport-node';
import { FLUSH_AT } from '../writer.ts';

/** The outboxes with messages queued in this turn, published together at its end. */
const due: Outbox[] = [];
let scheduled = false;
/** The bytes of the messages the due outboxes hold. */
let dueBytes = 0;

/**
 * Publishes every outbox that is due: the callback at the end of a turn, or a post that brought
 * them to FLUSH_AT (`midTurn`). One whose flush throws does not keep the others back; the first
 * error is thrown after them.
 */
export function flushDue(midTurn = false): void {
  scheduled = false;
  dueBytes = 0;
  const boxes = due.splice(0);
  let thrown: { error: unknown } | undefined;
  for (const box of boxes) {
    try {
      box.publishDue(midTurn);
    } catch (error) {
      thrown ??= { error };
    }
  }
  if (thrown) throw thrown.error;
}

export class Outbox {
  private queued: Array<{ data: Uint8Array; headers: MsgHdrs }> = [];
  private due = false;
  /** A publish of this outbox failed in mid-turn and its loss is not reported yet: what is posted meanwhile is dropped. */
  private failing = false;

  /**
   * `publish` sends one message and throws when the connection cannot take it; `lost` hears why
   * a publish at the end of a turn failed.
   */
  constructor(
    private readonly publish: (data: Uint8Array, headers: MsgHdrs) => void,
    private readonly lost: (reason: string) => void,
  ) {}

  /** Queues a numbered message; the outbox is published at the end of this turn of the event loop, or at once when the due outboxes hold FLUSH_AT bytes. */
  post(data: Uint8Array, headers: MsgHdrs): void {
    if (this.failing) return;
    this.queued.push({ data, headers });
    dueBytes += data.length;
    if (!this.due) {
      this.due = true;
      due.push(this);
    }
    if (dueBytes >= FLUSH_AT) return flushDue(true);
    if (scheduled) return;
    scheduled = true;
    setImmediate(flushDue);
  }

  /**
   * Publishes what flushDue found queued. In mid-turn (a post of any outbox, perhaps another
   * session's, brought them to FLUSH_AT) a failure is reported at the end of the turn: its owner
   * never hears of it inside a send, and nothing this outbox is given until then goes out past
   * the message that was lost.
   */
  publishDue(midTurn: boolean): void {
    if (!midTurn) return this.flush();
    this.flush((reason) => {
      this.failing = true;
      setImmediate(() => {
        this.failing = false;
        this.lost(reason);
      });
    });
  }

  /** Publishes every queued message, in order; the first that fails drops the rest and calls `failed` (default: `lost`). */
  flush(failed = this.lost): void {
    this.due = false;
    const out = this.queued;
    if (out.length === 0) return;
    this.queued = [];
    try {
      for (const m of out) this.publish(m.data, m.headers);
    } catch (err) {
      failed(`could not publish: ${(err as Error).message}`);
    }
  }
}
