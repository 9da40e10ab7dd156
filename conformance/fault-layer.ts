/**
 * The chaos layer: a fault-injecting Transport between the harness and the agent. It duplicates,
 * delays, reorders and chops outbound frames, drops inbound stream messages (recovered with
 * task.resume) or the whole connection (recovered with a resume handshake); chaos.ts runs the
 * workload through it and judges the history (spec: conformance#chaos).
 */
import type { ChildStdioTransport } from '../reference/transports/stdio-child.ts';
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport } from '../reference/transports/transport.ts';
import type { Connection } from './target.ts';

/** Which faults a run injects, each with its probability per frame. */
export interface FaultPlan {
  duplicate?: number;
  delay?: number;
  chop?: number;
  dropInbound?: number;
  garbage?: number;
  forge?: number;
  flood?: boolean;
  dropConnection?: boolean;
}

const enc = new TextEncoder();

/** A RawTransport wrapper that injects faults; every fault it injects is noted in the transcript. */
export class FaultLayer implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;
  /** Counts of injected faults, by kind. */
  readonly injected: Record<string, number> = {};
  private chain: Promise<void> = Promise.resolve();
  /** Held across the pieces of a chopped frame, so no other frame lands in its middle. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: RawTransport,
    private readonly connection: Connection,
    private readonly plan: FaultPlan,
    private readonly random: () => number,
    private readonly note: (text: string) => void,
    private readonly binding: 'stdio' | 'websocket' | 'nats',
  ) {
    inner.onmessage = (f) => this.inbound(f);
    inner.onclose = (i) => this.onclose?.(i);
    inner.onerror = (e) => this.onerror?.(e);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(info?: CloseInfo): Promise<void> {
    return this.inner.close(info);
  }

  setMaxFrameBytes(n: number): void {
    this.inner.setMaxFrameBytes?.(n);
  }

  sendRaw(data: Uint8Array, options?: RawSendOptions): Promise<void> {
    return this.inner.sendRaw(data, options);
  }

  /** Sends a frame through the faults. Frames keep their order unless a delay reorders them. */
  send(text: string): Promise<void> {
    const roll = (p?: number) => p !== undefined && this.random() < p;
    if (roll(this.plan.delay)) {
      const ms = 5 + Math.floor(this.random() * 60);
      this.count('delay', `delayed ${ms} ms (may reorder): ${text.slice(0, 80)}`);
      setTimeout(() => void this.exclusive(() => this.inner.send(text)).catch(() => {}), ms);
      return Promise.resolve();
    }
    const job = async () => {
      if (roll(this.plan.chop) && this.binding === 'stdio') await this.exclusive(() => this.chopped(text));
      else await this.exclusive(() => this.inner.send(text));
      if (roll(this.plan.duplicate)) {
        this.count('duplicate', `sent twice: ${text.slice(0, 80)}`);
        await this.exclusive(() => this.inner.send(text));
      }
    };
    this.chain = this.chain.then(job, job);
    return this.chain;
  }

  /** Runs one physical write at a time. */
  private exclusive(write: () => Promise<void>): Promise<void> {
    const next = this.writing.then(write, write);
    this.writing = next.catch(() => {});
    return next;
  }

  private async chopped(text: string): Promise<void> {
    const stdin = (this.connection.transport as ChildStdioTransport).child?.stdin;
    if (!stdin) return this.inner.send(text);
    const cuts = [Math.floor(text.length / 3), Math.floor((2 * text.length) / 3)];
    this.count('chop', `written in 3 pieces: ${text.slice(0, 80)}`);
    const bytes = enc.encode(text + '\n');
    const at = cuts.map((c) => enc.encode(text.slice(0, c)).length);
    for (const [from, to] of [
      [0, at[0]],
      [at[0], at[1]],
      [at[1], bytes.length],
    ] as const) {
      stdin.write(bytes.subarray(from!, to!));
      await new Promise((r) => setTimeout(r, 3));
    }
  }

  private inbound(frame: InboundFrame): void {
    if (this.plan.dropInbound !== undefined && this.random() < this.plan.dropInbound) {
      // Only task events are dropped: the harness recovers them with task.resume.
      const text = new TextDecoder().decode(frame.bytes);
      if (text.includes('"type":"task.event"')) {
        this.count('drop', `dropped an inbound message: ${text.slice(0, 100)}`);
        return;
      }
    }
    this.onmessage?.(frame);
  }

  /** Stops injecting faults (before the final checks). */
  quiet(): void {
    for (const k of Object.keys(this.plan) as (keyof FaultPlan)[]) delete this.plan[k];
  }

  count(kind: string, note: string): void {
    this.injected[kind] = (this.injected[kind] ?? 0) + 1;
    this.note(`chaos: ${note}`);
  }
}
