/**
 * Sample cards, messages, keys and deterministic sources for the core's tests and for anyone
 * who needs a valid message quickly; not part of the protocol (spec: envelope#example).
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import type { InboundFrame } from './frame.ts';
import type { RandomSource } from './ids.ts';
import type { Clock, TimerHandle } from './platform.ts';

/** A fixed clock: 2025-03-14T09:26:50Z, the spec's example time. */
export const FIXED_NOW = Date.parse('2025-03-14T09:26:50Z');

/** The spec's worked-example key: the 32 bytes 0x00 … 0x1f (spec: integrity#worked-example). */
export const SAMPLE_KEY = Uint8Array.from({ length: 32 }, (_, i) => i);

/** A deterministic random source: a counter, so ids differ between calls and runs repeat. */
export function counterRandom(seed = 1): RandomSource {
  let n = seed;
  return (len) => {
    const out = new Uint8Array(len);
    for (let i = 0; i < len; i++) out[i] = (n * 31 + i * 7) & 0xff;
    n++;
    return out;
  };
}

/** A card for `agentId` offering the named capabilities. */
export function sampleCard(agentId: string, capabilities: string[] = [], limits: Partial<AgentCard['limits']> = {}): AgentCard {
  return {
    agent_id: agentId,
    name: agentId,
    description: `The ${agentId} test peer.`,
    capabilities: capabilities.map((name) => ({
      name,
      version: '1.0.0',
      description: `The ${name} capability.`,
      input_formats: ['json'],
      output_formats: ['json'],
      streaming: false,
      side_effects: false,
    })),
    limits: { max_concurrent_tasks: 8, max_task_seconds: 600, max_message_bytes: 1048576, ...limits },
  };
}

/** A valid ping in an established session, with `extra` members merged over it. */
export function samplePing(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    protocol: 'tap/1.0',
    message_id: 's-19',
    type: 'ping',
    source: 'acme.summarizer',
    target: 'acme.coordinator',
    timestamp: '2025-03-14T09:31:02Z',
    session_id: 'Jq3c8VhQeR2m7XkT1pNw4A',
    payload: {},
    ...extra,
  };
}

/** A frame holding `content` (text is UTF-8 encoded), as a transport delivers it. */
export function frameOf(content: string | Uint8Array, extra: Partial<InboundFrame> = {}): InboundFrame {
  const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
  return { bytes, oversized: false, byteLength: bytes.length, ...extra };
}

/** A clock whose time moves only when told; timers fire in time order as it moves (the one manual clock of every test). */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.parse('2030-01-01T00:00:00Z')) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward by `ms`, letting pending work run before each due timer fires, and after the last. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending microtasks and immediate callbacks run, `rounds` turns of the event loop. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
