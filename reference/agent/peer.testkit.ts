/**
 * Test support for the runtime's tests: a scripted requester on an in-memory transport pair
 * that builds (and signs) messages by hand, records every frame the agent sends and checks the
 * recorded stream with checkHistory; and the core's manual clock.
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import { sign } from '../core/index.ts';
import { checkHistory, type Violation } from '../core/history.ts';
import { hmacSha256 } from '../crypto.ts';
import { createMemoryPair, type Transport } from '../transports/index.ts';
import type { Agent } from './agent.ts';
import { createAgent } from './agent.ts';
import type { AgentOptions } from './options.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';

export type Msg = Record<string, any>;

export const REQUESTER_ID = 'test.requester';
export const AGENT_ID = 'test.agent';
/** A 32-byte key, base64url. */
export const TEST_KEY = 'MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY';
export const TEST_KEY_BYTES = new TextEncoder().encode('0123456789abcdef0123456789abcdef');

export const requesterCard: AgentCard = {
  agent_id: REQUESTER_ID,
  name: 'Test requester',
  description: 'Drives the agent under test.',
  capabilities: [],
  limits: { max_concurrent_tasks: 1, max_task_seconds: 1, max_message_bytes: 1048576 },
};

/** A card for the agent under test; `limits` override the defaults. */
export function agentCard(limits: Partial<AgentCard['limits']> = {}): AgentCard {
  return {
    agent_id: AGENT_ID,
    name: 'Agent under test',
    description: 'Runs the conformance capabilities. Good at nothing else.',
    capabilities: [],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 65536, ...limits },
  };
}

/** An agent with the conformance capabilities and quiet logs. */
export function testAgent(options: Partial<AgentOptions> = {}): Agent {
  return createAgent({
    card: agentCard(),
    capabilities: withConformanceCapabilities(),
    logger: () => {},
    ...options,
  });
}

const decoder = new TextDecoder();
let peerCount = 0;

/** A hand-driven requester connected to an agent through a memory pair. */
export class TestPeer {
  readonly received: Msg[] = [];
  readonly raw: string[] = [];
  sessionId?: string;
  /** The version the session negotiated; the envelope's protocol (1.0 before the ack). */
  version = '1.0';
  /** The tasks this peer requested quiet in a session of 1.1, whose streams hold only their outcome (spec: tasks#quiet-tasks). */
  readonly quietTasks = new Set<string>();
  resumeToken?: string;
  key?: { keyId: string; key: Uint8Array };
  source = REQUESTER_ID;
  /** The agent id messages go to. */
  target = AGENT_ID;
  closed = false;
  /** How long waits last by default. */
  timeoutMs = 5000;
  /** Answer the agent's pings (default true). */
  autoPong = true;
  readonly end: Transport;
  private n = 0;
  /** Distinct per peer, so that peers resuming one session never reuse a message id. */
  private readonly idPrefix = `c${(peerCount++).toString(36)}`;
  private waiters: Array<() => void> = [];

  /** Connects to `agent` through a memory pair, or speaks over an already connected transport. */
  constructor(target: Agent | Transport, options: { stdio?: boolean; now?: () => number } = {}) {
    let peerEnd: Transport;
    if ('attach' in target) {
      const [agentEnd, end] = createMemoryPair();
      target.attach(agentEnd, { stdio: options.stdio });
      peerEnd = end;
    } else {
      peerEnd = target;
    }
    this.end = peerEnd;
    this.now = options.now ?? Date.now;
    livePeers.push(this);
    peerEnd.onmessage = (frame) => {
      const text = decoder.decode(frame.bytes);
      this.raw.push(text);
      const msg = JSON.parse(text);
      this.received.push(msg);
      // Every peer answers pings (spec: limits#heartbeats).
      if (msg.type === 'ping' && this.autoPong) this.send({ type: 'pong', reply_to: msg.message_id });
      this.wake();
    };
    peerEnd.onclose = () => {
      this.closed = true;
      this.wake();
    };
    this.started = peerEnd.start();
  }

  private readonly now: () => number;
  /** Resolves once the transport started. */
  readonly started: Promise<void>;

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** A fresh message id. */
  id(): string {
    return `${this.idPrefix}-${++this.n}`;
  }

  /** Builds a message: envelope defaults, then `fields`, signed when a key is set. */
  build(fields: Msg): Msg {
    let msg: Msg = {
      protocol: `tap/${this.version}`,
      message_id: this.id(),
      source: this.source,
      target: this.target,
      timestamp: new Date(this.now()).toISOString(),
      ...(this.sessionId !== undefined ? { session_id: this.sessionId } : {}),
      payload: {},
      ...fields,
    };
    for (const k of Object.keys(msg)) if (msg[k] === undefined) delete msg[k];
    if (this.key && !('signature' in fields)) msg = sign(msg, this.key.key, this.key.keyId, hmacSha256);
    return msg;
  }

  /** Sends a message built from `fields`; returns it. */
  send(fields: Msg): Msg {
    const msg = this.build(fields);
    void this.end.send(JSON.stringify(msg));
    return msg;
  }

  sendText(text: string): void {
    void this.end.send(text);
  }

  /** The first received message (at or after index `from`) matching `pred`. */
  async waitFor(pred: (m: Msg) => boolean, timeoutMs = this.timeoutMs, from = 0): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.slice(from).find(pred);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching message within ${timeoutMs} ms; got:\n${this.raw.join('\n')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 20);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves once `cond` holds. */
  async until(cond: () => boolean, timeoutMs = this.timeoutMs): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; got:\n${this.raw.join('\n')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The direct reply to a message id. */
  reply(messageId: string, timeoutMs?: number): Promise<Msg> {
    return this.waitFor((m) => m.reply_to === messageId, timeoutMs);
  }

  /** The result of a task. */
  result(taskId: string, timeoutMs?: number): Promise<Msg> {
    return this.waitFor((m) => m.type === 'task.result' && m.task_id === taskId, timeoutMs);
  }

  /** Resolves after the given time with every message received meanwhile that matches. */
  async quiet(ms: number, pred: (m: Msg) => boolean = () => true): Promise<Msg[]> {
    const start = this.received.length;
    await new Promise((r) => setTimeout(r, ms));
    return this.received.slice(start).filter(pred);
  }

  /** handshake.init: defaults and `payload` overrides. */
  init(payload: Msg = {}, fields: Msg = {}): Msg {
    return this.send({
      type: 'handshake.init',
      target: '*',
      payload: { versions: ['1.0'], agent: requesterCard, requires: [], params: {}, ...payload },
      ...fields,
    });
  }

  /** Performs the whole handshake; returns the ack. */
  async handshake(payload: Msg = {}): Promise<Msg> {
    const init = this.init(payload);
    const ack = await this.reply(init.message_id);
    if (ack.type !== 'handshake.ack') throw new Error(`handshake refused: ${JSON.stringify(ack.payload)}`);
    this.sessionId = ack.payload.session_id;
    this.version = ack.payload.version;
    this.resumeToken = ack.payload.resume_token;
    const ready = this.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
    const go = await this.reply(ready.message_id);
    if (go.type !== 'handshake.go') throw new Error(`ready refused: ${JSON.stringify(go.payload)}`);
    return ack;
  }

  /** Sends task.request. */
  request(taskId: string, capability: string, input: unknown, payload: Msg = {}, fields: Msg = {}): Msg {
    // A quiet request of a 1.1 session has a quiet stream (spec: tasks#quiet-tasks).
    if (payload.quiet === true && this.version !== '1.0') this.quietTasks.add(taskId);
    return this.send({ type: 'task.request', task_id: taskId, payload: { capability, input, ...payload }, ...fields });
  }

  /** Every message of one task's stream received so far. */
  stream(taskId: string): Msg[] {
    return this.received.filter((m) => m.task_id === taskId && typeof m.sequence === 'number');
  }

  /** checkHistory over everything received. */
  violations(complete = false): Violation[] {
    return checkHistory(this.received, undefined, { complete, quiet: this.quietTasks });
  }

  close(): Promise<void> {
    return this.end.close({ code: 1006, reason: 'dropped' });
  }
}

/** Every peer created since the last check, for expectCleanHistories. */
const livePeers: TestPeer[] = [];

/**
 * Runs checkHistory over everything the agent sent in each session of the test, across the
 * connections that resumed it; use as `afterEach(expectCleanHistories)`.
 */
export function expectCleanHistories(): void {
  const bySession = new Map<string, Msg[]>();
  const quiet = new Set<string>();
  for (const peer of livePeers.splice(0)) {
    const key = peer.sessionId ?? `peer:${bySession.size}`;
    bySession.set(key, [...(bySession.get(key) ?? []), ...peer.received]);
    for (const id of peer.quietTasks) quiet.add(id);
  }
  for (const [session, messages] of bySession) {
    const violations = checkHistory(messages, undefined, { quiet });
    if (violations.length > 0) throw new Error(`session ${session} broke the history rules: ${JSON.stringify(violations, null, 1)}`);
  }
}

export { ManualClock, settle as flush } from '../core/samples.testkit.ts';

/** A plan of two file writes, one not reversible, that the plan tests submit through tap.test.plan. */
export const TWO_FILE_PLAN = {
  intent: 'Write two files.',
  steps: [
    { action: 'write a', target: 'file://a', expected_output: 'a written', reversible: true },
    { action: 'write b', target: 'file://b', expected_output: 'b written', reversible: false },
  ],
  rollback: 'Delete both files.',
  estimated_cost: { tokens: 10, seconds: 1 },
  risk_level: 'low',
};
