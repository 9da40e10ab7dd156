/**
 * Drives the handshake machines for tests the way a runtime would: every message is encoded,
 * decoded and schema-checked on its way, and the clock and random source are fixed. Tests
 * inject the HMAC function, so this module stays as pure as the core (spec: handshake#overview).
 */
import type { MessageOf, TapMessage } from '../../schemas/src/index.ts';
import { decodeText, encodeMessage } from './decode.ts';
import { agentHandshake, initialAgentHandshake, type AgentHandshakeConfig, type AgentHandshakeState } from './handshake-agent.ts';
import {
  initialRequesterHandshake,
  requesterHandshake,
  type RequesterHandshakeConfig,
  type RequesterHandshakeState,
} from './handshake-requester.ts';
import type { HandshakeStep } from './handshake.ts';
import { counterRandom, FIXED_NOW, SAMPLE_KEY, sampleCard } from './samples.testkit.ts';
import { validateMessage } from './validate.ts';

export const AGENT = 'acme.summarizer';
export const REQUESTER = 'acme.coordinator';
export const KEY_ID = 'acme.coordinator.k1';

/** An agent config: the summarizer offering text.summarize, with a fixed clock and random source. */
export function agentConfig(extra: Partial<AgentHandshakeConfig> = {}): AgentHandshakeConfig {
  return {
    card: sampleCard(AGENT, ['text.summarize'], { max_concurrent_tasks: 4 }),
    params: { heartbeat_ms: 15000, request_timeout_ms: 30000 },
    random: counterRandom(100),
    now: () => FIXED_NOW,
    ...extra,
  };
}

/** A requester config: the coordinator, with a fixed clock and random source. */
export function requesterConfig(extra: Partial<RequesterHandshakeConfig> = {}): RequesterHandshakeConfig {
  return {
    card: sampleCard(REQUESTER),
    requires: ['text.summarize'],
    params: { max_concurrent_tasks: 8, heartbeat_ms: 5000 },
    random: counterRandom(200),
    now: () => FIXED_NOW,
    ...extra,
  };
}

/** The key table of an agent that shares SAMPLE_KEY with the coordinator. */
export const keyed = (peer = REQUESTER) => new Map([[KEY_ID, { key: SAMPLE_KEY, peer }]]);

/** A message as the receiver sees it: through the wire and the schemas; throws if either refuses it. */
export function wire<M extends TapMessage>(msg: M): M {
  const decoded = decodeText(encodeMessage(msg), true);
  if (!decoded.ok) throw new Error(`decode refused ${msg.type}: ${decoded.error.message}`);
  const issues = validateMessage(decoded.message);
  if (issues) throw new Error(`${msg.type} fails its schema: ${JSON.stringify(issues)}`);
  return decoded.message as unknown as M;
}

/** Feeds one message to the agent machine. */
export function toAgent(state: AgentHandshakeState, msg: TapMessage): HandshakeStep<AgentHandshakeState> {
  return agentHandshake(state, { kind: 'message', message: wire(msg) });
}

/** Feeds one message to the requester machine. */
export function toRequester(state: RequesterHandshakeState, msg: TapMessage): HandshakeStep<RequesterHandshakeState> {
  return requesterHandshake(state, { kind: 'message', message: wire(msg) });
}

/** Runs a full handshake between both machines; returns every step's outputs in order. */
export function runHandshake(agent: AgentHandshakeConfig, requester: RequesterHandshakeConfig) {
  let a = initialAgentHandshake(agent);
  let r = initialRequesterHandshake(requester);
  const s0 = requesterHandshake(r, { kind: 'start' });
  r = s0.state;
  const init = s0.send[0]!;
  const s1 = toAgent(a, init);
  a = s1.state;
  if (s1.state.phase !== 'awaiting-ready') return { a, r, init, refusal: s1 };
  const ack = s1.send[0] as MessageOf<'handshake.ack'>;
  const s2 = toRequester(r, ack);
  r = s2.state;
  if (s2.state.phase !== 'awaiting-go') return { a, r, init, ack, refusal: s2 };
  const ready = s2.send[0] as MessageOf<'handshake.ready'>;
  const s3 = toAgent(a, ready);
  a = s3.state;
  const go = s3.send[0] as MessageOf<'handshake.go'> | undefined;
  const s4 = s3.session && go ? toRequester(r, go) : undefined;
  if (s4) r = s4.state;
  return { a, r, init, ack, ready, go, agentStep: s3, requesterStep: s4 };
}
