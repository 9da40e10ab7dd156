/**
 * A scripted agent for the client's tests: it runs the agent side of the handshake through the
 * core machine, records and validates every message it receives, and lets a test answer each
 * one by hand (accept, stream, snapshot, error, or any raw frame). It is a test double, not an
 * agent runtime.
 */
import type { AgentCard, MessageOf, MessageType, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import {
  agentHandshake,
  composeMessage,
  decodeFrame,
  anyErrorPayload,
  initialAgentHandshake,
  seal,
  validateMessage,
  type AgentHandshakeState,
  type EstablishedSession,
  type KeyEntry,
} from '../core/index.ts';
import { hmacSha256, randomBytes } from '../crypto.ts';
import type { Transport } from '../transports/index.ts';

/** Answers one message of the established session; the default answers nothing. */
export type Script = (msg: TapMessage, agent: ScriptedAgent) => void;

/** Options of a scripted agent. */
export interface ScriptedAgentOptions {
  card?: Partial<AgentCard>;
  keys?: ReadonlyMap<string, KeyEntry>;
  heartbeatMs?: number;
  /** Grants every resume whose session id it issued (default true). */
  allowResume?: boolean;
  script?: Script;
  /** Do not answer the requester's farewell with one's own. */
  silentOnFarewell?: boolean;
}

/** The card a scripted agent presents. */
export function scriptedCard(overrides: Partial<AgentCard> = {}): AgentCard {
  return {
    agent_id: 'scripted-agent',
    name: 'Scripted agent',
    description: 'Answers as its test script says.',
    capabilities: ['demo.echo', 'demo.slow', 'demo.plan'].map((name) => ({
      name,
      version: '1.0.0',
      description: name,
      input_formats: ['json'],
      output_formats: ['json'],
      streaming: true,
      side_effects: name === 'demo.plan',
    })),
    limits: { max_concurrent_tasks: 4, max_task_seconds: 60, max_message_bytes: 1048576 },
    ...overrides,
  };
}

/** One side of a session played by a test. */
export class ScriptedAgent {
  /** Every message received after decoding, in order. */
  readonly received: TapMessage[] = [];
  /** Schema problems in what the client sent: must stay empty. */
  readonly violations: string[] = [];
  /** Every frame sent, as text. */
  readonly sent: string[] = [];
  readonly card: AgentCard;
  session?: EstablishedSession;
  script: Script;
  private machine: AgentHandshakeState;
  private readonly sequences = new Map<string, number>();
  private readonly issued = new Set<string>();

  constructor(
    public transport: Transport,
    private readonly options: ScriptedAgentOptions = {},
  ) {
    this.card = scriptedCard(options.card);
    this.script = options.script ?? (() => {});
    this.machine = this.freshMachine();
    this.bind(transport);
  }

  /** Takes over a new transport (a reconnect), starting a new handshake on it. */
  bind(transport: Transport): void {
    this.transport = transport;
    this.machine = this.freshMachine();
    transport.onmessage = (frame) => {
      const decoded = decodeFrame(frame, { maxMessageBytes: 1 << 20 });
      if (!decoded.ok) {
        this.violations.push(`undecodable frame: ${decoded.error.message}`);
        return;
      }
      const msg = decoded.message as unknown as TapMessage;
      const issues = validateMessage(msg);
      if (issues) this.violations.push(`${msg.type}: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`);
      this.received.push(msg);
      this.take(msg);
    };
    void transport.start();
  }

  /** The messages of one type received so far. */
  of<T extends MessageType>(type: T): MessageOf<T>[] {
    return this.received.filter((m) => m.type === type) as MessageOf<T>[];
  }

  /** Sends a message of the established session; task stream messages get the next sequence. */
  send<T extends MessageType>(
    type: T,
    payload: PayloadOf<T>,
    fields: { task_id?: string; reply_to?: string; sequence?: number } = {},
  ): MessageOf<T> {
    const s = this.session!;
    const f: Record<string, unknown> = { ...fields };
    if (['task.accepted', 'task.event', 'task.result', 'plan.submit', 'task.handoff'].includes(type) && f.sequence === undefined) {
      const next = (this.sequences.get(fields.task_id!) ?? 0) + 1;
      this.sequences.set(fields.task_id!, next);
      f.sequence = next;
    }
    const msg = composeMessage({ random: randomBytes, protocol: s.protocol }, {
      type,
      source: this.card.agent_id,
      target: s.peer.agent_id,
      session_id: s.sessionId,
      payload,
      ...f,
    } as never) as TapMessage;
    const sealed = seal({ hmac: hmacSha256 }, s.integrity, msg);
    this.raw(JSON.stringify(sealed));
    return sealed as MessageOf<T>;
  }

  /** Sends any text as one frame. */
  raw(text: string): void {
    this.sent.push(text);
    void this.transport.send(text);
  }

  /** Answers a task.request with task.accepted. */
  accept(req: TapMessage, extra: Partial<PayloadOf<'task.accepted'>> = {}): MessageOf<'task.accepted'> {
    const p = req.payload as PayloadOf<'task.request'>;
    const deadline = new Date(Date.now() + 60_000).toISOString();
    return this.send(
      'task.accepted',
      { capability: p.capability, deadline, ...extra },
      { task_id: req.task_id!, reply_to: req.message_id },
    );
  }

  /** Sends a task.event. */
  event(taskId: string, payload: PayloadOf<'task.event'>): MessageOf<'task.event'> {
    return this.send('task.event', payload, { task_id: taskId });
  }

  /** Sends the task.result. */
  result(taskId: string, payload: PayloadOf<'task.result'>): MessageOf<'task.result'> {
    return this.send('task.result', payload, { task_id: taskId });
  }

  /** Answers a message with an error. */
  error(req: TapMessage, code: string, message = code, options: { retryable?: boolean } = {}): void {
    const fields: { reply_to: string; task_id?: string } = { reply_to: req.message_id };
    if (req.task_id !== undefined) fields.task_id = req.task_id;
    this.send('error', anyErrorPayload(code, message, undefined, options), fields);
  }

  /** Answers a message with a snapshot. */
  snapshot(req: TapMessage, payload: PayloadOf<'task.snapshot'>, taskId = req.task_id!): void {
    this.send('task.snapshot', payload, { task_id: taskId, reply_to: req.message_id });
  }

  /** The last sequence sent for a task. */
  lastSequence(taskId: string): number {
    return this.sequences.get(taskId) ?? 0;
  }

  private freshMachine(): AgentHandshakeState {
    return initialAgentHandshake({
      card: this.card,
      random: randomBytes,
      hmac: hmacSha256,
      params: { heartbeat_ms: this.options.heartbeatMs ?? 15000 },
      ...(this.options.keys ? { keys: this.options.keys } : {}),
      resume: (r) => (this.options.allowResume ?? true) && this.issued.has(r.session_id),
    });
  }

  private take(msg: TapMessage): void {
    if (this.machine.phase !== 'established') {
      const step = agentHandshake(this.machine, { kind: 'message', message: msg });
      this.machine = step.state;
      for (const m of step.send) this.raw(JSON.stringify(m));
      if (step.session) {
        this.session = step.session;
        this.issued.add(step.session.sessionId);
      }
      if (step.handled) return;
    }
    if (msg.type === 'ping') {
      this.send('pong', {}, { reply_to: msg.message_id });
      return;
    }
    if (msg.type === 'pong') return;
    this.script(msg, this);
    if (msg.type === 'session.farewell' && !this.options.silentOnFarewell) {
      this.send('session.farewell', { reason: 'the requester left' });
      void this.transport.close({ code: 1000, reason: 'farewell' });
    }
  }
}
