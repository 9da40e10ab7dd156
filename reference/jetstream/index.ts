/** The NATS binding's durable tasks on JetStream: streams, submit, and the runner (spec: bindings-nats#task-queue). */
export { checkNames, DEFAULT_NAMES, deadSubject, ensureStreams, eventSubject, resultSubject, taskSubject } from './streams.ts';
export type { DurableNames, EnsureOptions } from './streams.ts';
export { idempotencyKey, submitDurable, submitMsgId } from './submit.ts';
export type { DurableSubmitOptions, DurableSubmitted, IdempotencyOf } from './submit.ts';
export { consumerName, startDurableRunner } from './runner.ts';
export type { DurableRunner, DurableRunnerOptions, DurableWork } from './runner.ts';
export { takeIn } from './intake.ts';
export type { Intake, IntakeOptions } from './intake.ts';
export {
  RECORD_SIGNATURE,
  STREAM_SIGNATURE_HEADER,
  signRecord,
  signStreamMessage,
  verifyRecord,
  verifyStreamMessage,
} from './signatures.ts';
export type { SignatureProblem } from './signatures.ts';
export { durableConformanceHandlers, serveDurableConformance } from './capabilities.ts';
export type { DurableConformanceOptions, DurableHandler } from './capabilities.ts';
export { ATTEMPT_HEADER, eventMsgId, lastStoredSequence, replayDurableTask, TaskStreamWriter } from './events.ts';
export type { DurableStreamMessage, ReplayOptions, StoredStreamMessage } from './events.ts';
