/** The options, events and outcomes of the requester client (spec: handshake, tasks, shutdown). */
import type { TelemetryOptions } from '../telemetry.ts';
import type { Extension, RandomSource } from '../core/index.ts';
import { checkLogger } from '../core/platform.ts';
import { issueList, validateAgainst } from '../core/validate.ts';
import type { RetryPolicy } from './backoff.ts';
import type { TaskHandle } from './handle.ts';
import type { Credentials } from './session.ts';
import type {
  AgentCard,
  Clock,
  ErrorPayload,
  HandoffPayload,
  InputRequestPayload,
  Logger,
  PlanSubmitPayload,
  ProposedParams,
  WireEntry,
} from './types.ts';

/** Options of `connect`. */
export interface ConnectOptions {
  /** This requester's agent id: the `source` of everything it sends. */
  agentId: string;
  /** This requester's card (default: a card with no capabilities). */
  card?: AgentCard;
  /** Every version the requester speaks (default ["1.1", "1.0"]; spec: versioning#tap-1-1). */
  versions?: string[];
  /** Capabilities the requester needs from the agent. */
  requires?: string[];
  /**
   * The extensions the requester offers, in its card; one marked `required` the session must use,
   * or connect fails with EXTENSION_REQUIRED. The ack's choice is `client.extensions`
   * (spec: handshake#negotiated-extensions).
   */
  extensions?: Extension[];
  /** Proposed session params; request_timeout_ms defaults to 30 000. */
  params?: ProposedParams;
  credentials?: Credentials;
  /** A pre-shared HMAC key (base64url text or bytes, at least 32 bytes): every message is then signed. */
  keys?: { keyId: string; key: string | Uint8Array };
  /** The agent's id when known; handshake.init then targets it instead of "*". */
  target?: string;
  clock?: Clock;
  logger?: Logger;
  /** How refused requests and retryable endings are retried (default 4 attempts, 100 ms base). */
  retry?: Partial<RetryPolicy>;
  /** How long each handshake step may take (default 10 000 ms). */
  handshakeTimeoutMs?: number;
  /** How long `close` waits for the agent's farewell (default 5 000 ms). */
  closeWaitMs?: number;
  /** Open the session even if the agent lacks a required capability (default false). */
  allowMissing?: boolean;
  /** Sees every frame sent and received, for transcripts. */
  trace?: (entry: WireEntry) => void;
  /** Random bytes for message ids (default: the platform CSPRNG). */
  random?: RandomSource;
  /**
   * Traces every submitted task with OpenTelemetry, one client span per task whose id the
   * request's traceparent carries: `{}` uses the global tracer provider, `{ tracer }` a tracer of
   * your own. Needs the optional peer @opentelemetry/api, loaded when the client opens (default: off).
   */
  telemetry?: TelemetryOptions;
}

/** How a client with a transport factory reconnects after losing its transport. */
export interface ReconnectPolicy {
  /** Connection attempts after a loss before giving up (default 8). */
  attempts: number;
  baseMs: number;
  maxMs: number;
  random: () => number;
}

/** A problem the client observed: a bad frame from the agent, or an error that answers nothing. */
export interface ClientProblem {
  error: ErrorPayload;
  /** The offending frame's text, when there was one. */
  text?: string;
}

/** The events a client emits. */
export interface ClientEvents extends Record<string, unknown> {
  /** A bad frame from the agent (answered with an error when the spec says so), or an unsolicited error. */
  error: ClientProblem;
  /** A plan waits for a decision and the task has no onPlan callback: call `handle.decide`. */
  plan: { handle: TaskHandle; taskId: string; plan: PlanSubmitPayload };
  /** TAP 1.1: a task asks for input and has no onInput callback: call `handle.answer` (spec: tasks#input-required). */
  input: { handle: TaskHandle; taskId: string; request: InputRequestPayload };
  /** The agent handed a task off at shutdown. */
  handoff: { taskId: string; handoff: HandoffPayload };
  /** The agent said farewell. */
  farewell: { reason: string };
  /** The transport was lost; a reconnecting client is trying again. */
  lost: { reason: string };
  /** A reconnect completed; `resumed` false means the old session's tasks were failed. */
  reconnected: { resumed: boolean; sessionId: string };
  /** The client is closed for good. */
  closed: { reason: string };
}

/** The outcome of `shutdownAgent`. */
export interface ShutdownOutcome {
  approved: boolean;
  /** The agent's reason, when it declined. */
  reason?: string;
  /** The hand-offs received, one per unfinished task. */
  handoffs: Array<{ taskId: string; handoff: HandoffPayload }>;
  /** The reason in the agent's farewell, if one came within the grace period. */
  farewell?: string;
}

/** The card of a requester that offers nothing. */
export function defaultCard(agentId: string, maxMessageBytes = 1048576): AgentCard {
  return {
    agent_id: agentId,
    name: agentId,
    description: 'A TAP requester: it submits tasks and offers no capabilities.',
    capabilities: [],
    limits: { max_concurrent_tasks: 1, max_task_seconds: 3600, max_message_bytes: maxMessageBytes },
  };
}

/** Throws a TypeError naming `caller` when its options give no agentId: the source of all a requester sends. */
export function requireAgentId<T extends { agentId?: unknown }>(
  options: T | undefined,
  caller: string,
  example: string,
): asserts options is T & { agentId: string } {
  if (typeof options?.agentId !== 'string' || options.agentId === '') {
    throw new TypeError(`${caller} needs options.agentId, this requester's id (such as "${example}"): the source of all it sends`);
  }
}

/**
 * The card a client shows in its handshake: its own, or the default for `agentId`, offering the
 * extensions it speaks (spec: handshake#negotiated-extensions). A TypeError, before anything is
 * sent, when `agentId` is missing, `logger` is no function or the card is not one the schema accepts.
 */
export function requesterCard(options: ConnectOptions | undefined): AgentCard {
  requireAgentId(options, 'connect', 'my.requester');
  checkLogger(options.logger, 'connect');
  const base = options.card ?? defaultCard(options.agentId, options.params?.max_message_bytes);
  const card = options.extensions?.length ? { ...base, extensions: options.extensions.map((e) => ({ ...e })) } : base;
  if (card.agent_id !== options.agentId) throw new TypeError(`the card names ${card.agent_id}, not agentId ${options.agentId}`);
  const issues = validateAgainst('agent-card.schema.json', card);
  if (issues) throw new TypeError(`the requester's card is invalid: ${issueList(issues)}`);
  return card;
}
