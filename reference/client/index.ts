/** The TAP requester client (spec: tasks, sessions#resume, shutdown). */
export { connect, connectWith, TapClient } from './client.ts';
export { defaultCard } from './options.ts';
export type { ClientEvents, ClientProblem, ConnectOptions, ReconnectPolicy, ShutdownOutcome } from './options.ts';
export { connectWs } from './reconnect.ts';
export type { ConnectWsOptions } from './reconnect.ts';
export { connectNats } from './nats.ts';
export type { ConnectNatsClientOptions } from './nats.ts';
export { TaskHandle } from './handle.ts';
export { ENDED_TASKS_KEPT } from './tasks.ts';
export type { Accepted, SubmitOptions } from './handle.ts';
export { ClientCode, TapClientError } from './errors.ts';
export { backoffDelay, DEFAULT_RETRY } from './backoff.ts';
export type { RetryPolicy } from './backoff.ts';
export type { HandshakeResult } from './session.ts';
export { systemClock } from './types.ts';
export type {
  Clock,
  HandoffPayload,
  KnownState,
  Logger,
  PlanDecision,
  PlanSubmitPayload,
  InputRequestPayload,
  ResultPayload,
  SnapshotPayload,
  StreamMessage,
  TaskListOptions,
  TaskPage,
  TaskSummary,
  WireEntry,
} from './types.ts';
