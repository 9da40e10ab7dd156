/**
 * A task's stream as the requester sees it: the sequenced messages of one task_id, delivered
 * once each and in order whatever the transport did (spec: tasks#sequence, resume#replay).
 */
import { appended } from '../core/appended.ts';
import { HANDLE_LOG_LIMIT } from './feed.ts';
import type { HandoffPayload, InputRequestPayload, KnownState, ResultPayload, StreamMessage } from './types.ts';

/** What `TaskStream.ingest` did with a message. */
export type IngestOutcome =
  /** Delivered, possibly with buffered successors (all in `delivered`). */
  | { kind: 'delivered'; delivered: StreamMessage[] }
  /** Already seen (same task_id and sequence): no effect (spec: tasks#deduplication). */
  | { kind: 'duplicate' }
  /** Ahead of the next expected sequence: held until the gap is filled. */
  | { kind: 'gap'; expected: number }
  /** After the result: a peer error, ignored. */
  | { kind: 'late' };

/** Holds at most this many out-of-order messages per task; beyond that they are dropped (a resume fetches them again). */
const MAX_BUFFERED = 1024;

/** The in-order, duplicate-free log of one task's stream. */
export class TaskStream {
  /** The last sequence delivered (0 before task.accepted; 1 for a quiet task, whose acceptance is not sent). */
  lastSequence = 0;
  /** A quiet task of a 1.1 session: its stream starts at sequence 2 (spec: tasks#quiet-sequences). */
  quiet = false;
  /**
   * The delivered messages in sequence order: all of them, or once more came, the newest
   * `HANDLE_LOG_LIMIT` to twice that (a handle that attaches late copies them; a long stream is
   * read as it comes, not kept whole).
   */
  log: StreamMessage[] = [];
  /** The state the stream last reported. */
  state: KnownState = 'requested';
  result?: ResultPayload;
  handoff?: HandoffPayload;
  /** The current plan, as the stream and the replies have shown it. */
  plan?: { plan_id: string; state: string };
  /** TAP 1.1: the input request the task waits on, while it is input_required (spec: tasks#input-required). */
  pendingInput?: InputRequestPayload;
  /** Messages ahead of a gap, by sequence: made at the first such message. */
  private ahead?: Map<number, StreamMessage>;
  /** Made at the first subscriber; most streams have one, a handle's. */
  private listeners?: Set<(msg: StreamMessage) => void>;

  constructor(readonly taskId: string) {}

  /** Follows a quiet task: its unsent acceptance counts as sequence 1 (spec: tasks#quiet-sequences). */
  markQuiet(): void {
    this.quiet = true;
    if (this.lastSequence === 0) this.lastSequence = 1;
  }

  /** True once task.result has been delivered. */
  get ended(): boolean {
    return this.result !== undefined;
  }

  /** Calls `fn` for each message delivered from now on; returns a function that stops it. */
  subscribe(fn: (msg: StreamMessage) => void): () => void {
    const listeners = (this.listeners ??= new Set());
    listeners.add(fn);
    return () => listeners.delete(fn);
  }

  /** Takes one sequenced message: delivers it (and any buffered successors) if it is next. */
  ingest(msg: StreamMessage): IngestOutcome {
    const seq = msg.sequence ?? 0;
    if (seq <= this.lastSequence) return { kind: 'duplicate' };
    if (this.ended) return { kind: 'late' };
    if (seq > this.lastSequence + 1) {
      const ahead = (this.ahead ??= new Map());
      if (ahead.has(seq)) return { kind: 'duplicate' };
      if (ahead.size < MAX_BUFFERED) ahead.set(seq, msg);
      return { kind: 'gap', expected: this.lastSequence + 1 };
    }
    const delivered: StreamMessage[] = [];
    let next: StreamMessage | undefined = msg;
    while (next && !this.ended) {
      this.ahead?.delete(next.sequence ?? 0);
      this.apply(next);
      delivered.push(next);
      next = this.ahead?.get(this.lastSequence + 1);
    }
    if (this.ended) this.ahead = undefined;
    for (const m of delivered) this.notify(m);
    return { kind: 'delivered', delivered };
  }

  /** Hands a delivered message to each listener (a copy of the set only when there are several, which may unsubscribe). */
  private notify(msg: StreamMessage): void {
    const listeners = this.listeners;
    if (!listeners) return;
    if (listeners.size === 1) for (const fn of listeners) fn(msg);
    else if (listeners.size > 1) for (const fn of [...listeners]) fn(msg);
  }

  /** True while messages wait behind a gap. */
  get hasGap(): boolean {
    return this.ahead !== undefined && this.ahead.size > 0;
  }

  private apply(msg: StreamMessage): void {
    this.lastSequence = msg.sequence ?? this.lastSequence + 1;
    this.log = appended(this.log, msg);
    if (this.log.length > 2 * HANDLE_LOG_LIMIT) this.log.splice(0, this.log.length - HANDLE_LOG_LIMIT);
    switch (msg.type) {
      case 'task.accepted':
        this.state = 'accepted';
        break;
      case 'task.event':
        if (msg.payload.kind === 'state' && typeof msg.payload.state === 'string') {
          this.state = msg.payload.state as KnownState;
          if (this.state !== 'input_required') this.pendingInput = undefined;
        }
        break;
      case 'input.request':
        // The state event input_required came just before it (spec: tasks#input-request).
        this.pendingInput = msg.payload;
        break;
      case 'plan.submit':
        // plan.submit is itself the entry into awaiting_approval (spec: plans#submit).
        this.state = 'awaiting_approval';
        this.plan = { plan_id: msg.payload.plan.plan_id, state: 'pending' };
        break;
      case 'task.handoff':
        this.handoff = msg.payload;
        break;
      case 'task.result':
        this.state = msg.payload.status as KnownState;
        this.result = msg.payload;
        this.pendingInput = undefined;
        if (this.plan && (this.plan.state === 'pending' || this.plan.state === 'holding')) this.plan.state = 'withdrawn';
        break;
    }
  }
}
