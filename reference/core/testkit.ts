/**
 * Sample cards, messages, keys and deterministic sources for the core's tests and for anyone
 * who needs a valid message quickly; not part of the protocol (spec: envelope#example).
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import type { InboundFrame } from '../transports/transport.ts';
import type { RandomSource } from './ids.ts';

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
