/**
 * What the durable runner (runner.ts) takes and gives: its options, the work a phase handler
 * gets, the running runner, and the check of its options (spec: bindings-nats#task-queue).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { TelemetryOptions } from '../telemetry.ts';
import type { SigningKey, TrustFile } from '../trust.ts';
import { checkIdentifier } from '../transports/nats/subjects.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { checkNames } from './names.ts';
import type { AuditSink } from './metrics.ts';
import type { Family } from '../ops/prometheus.ts';
import { DEFAULT_NAMES, type DurableNames } from './streams.ts';

/** What a phase handler gets: the record (attempts set from the delivery count) and a stop signal. */
export interface DurableWork {
  record: TaskRecord;
  /** The attempt: the delivery count less one (spec: bindings-nats#task-queue). */
  attempts: number;
  /** The principal whose signature the record carries, when the runner verifies signatures (spec: bindings-nats#signed-records). */
  principal?: string;
  /** Aborted when the lease is lost (the server refused an acknowledgement) or the runner stops. */
  signal: AbortSignal;
  /** Publishes an output event `{ kind: "output", data }` to the task's stream in TAP_EVENTS (spec: bindings-nats#event-streams). */
  emit(data: unknown): Promise<void>;
  /**
   * Makes the task's effect `name` once: a later delivery of the task gets the value the first
   * one recorded, without running `fn` (TAP-NATS-025; the record lives as long as the runner).
   */
  effect<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
}

/** Options of `startDurableRunner`. */
export interface DurableRunnerOptions {
  nc: NatsConnection;
  /** This agent's id, written to `state.processed_by`. */
  agentId: string;
  /** The capability (the records' `next_phase`) this runner serves. */
  capability: string;
  /**
   * Does the phase's work; its resolved value becomes the output of the history entry. A
   * TapError that is retryable hands the delivery back to the server (spec: bindings-nats#retries).
   */
  handler: (work: DurableWork) => Promise<unknown>;
  /** The lease: the consumer's ack_wait, in ms (default 30 000). */
  leaseMs?: number;
  /** Deliveries before a record becomes a dead letter: the consumer's max_deliver (default 5). */
  maxAttempts?: number;
  /** Tasks run at once (default 4); the runner pulls no more deliveries than it has places free. */
  concurrency?: number;
  /**
   * How long one pull request waits before the next is issued, in ms (default 5000, at least
   * 1000): after a server of a cluster is lost, a runner finds the new consumer leader within it.
   */
  pullExpiresMs?: number;
  names?: DurableNames;
  /** Replicas of the streams and the bucket it creates (default: by the cluster's size, spec: bindings-nats#replicas). */
  replicas?: number;
  /**
   * The trust file (spec: bindings-nats#signed-records): only records signed by a principal in it
   * run, the signer is the record's principal, and a stored task.result counts only when one of
   * `runners` signed it. Without it the runner trusts every publisher on the server: whoever can
   * publish to the queue names any principal, and whoever can publish to TAP_EVENTS decides outcomes.
   */
  trust?: TrustFile;
  /** Traces each delivery with OpenTelemetry under the record's traceparent: `{}` the global tracer provider, `{ tracer }` your own (default: off). */
  telemetry?: TelemetryOptions;
  /** This agent's key (principal `agentId`): every message it stores in TAP_EVENTS carries its signature. Needed with `trust`. */
  signingKey?: SigningKey;
  /** The agents whose signed task.results this runner takes as a task's outcome (default: this agent only). */
  runners?: readonly string[];
  logger?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Appends an audit record per task this runner finishes (an AuditTrail of tap-agent-protocol, or an agent's `audit`). */
  audit?: AuditSink;
}

/** A running durable runner. */
export interface DurableRunner {
  /** Counts for monitoring and tests. */
  readonly stats: {
    completed: number;
    failed: number;
    retried: number;
    repeats: number;
    deadLetters: number;
    /** Queue messages dead-lettered at once: not a record this runner may run (TAP-NATS-037, TAP-NATS-038). */
    refused: number;
    renewals: number;
    /** Deliveries stopped because another delivery of the same record was writing its task's stream. */
    fenced: number;
    /** Deliveries handed back (-NAK) because their record names another target agent (TAP-NATS-055). */
    handedBack: number;
    /** Deliveries taken that the server had delivered before. */
    redelivered: number;
  };
  /** Its Prometheus families now, the queue's depth read from the server (labelled with the capability). */
  metrics(): Promise<Family[]>;
  /** Stops taking deliveries and waits for the running ones to settle. */
  stop(): Promise<void>;
}

/** Throws for options a runner cannot start with: a capability or agent id that cannot be in a subject, a trust file without a key. */
export function checkOptions(o: DurableRunnerOptions): void {
  checkIdentifier(o.capability, 'capability');
  checkIdentifier(o.agentId, 'agent id');
  checkNames(o.names ?? DEFAULT_NAMES);
  if (o.signingKey && o.signingKey.principal !== o.agentId)
    throw new TypeError(`the runner's signing key is ${o.signingKey.principal}'s, not agent ${o.agentId}'s`);
  if (o.trust && !o.signingKey)
    throw new TypeError(
      'a runner that verifies signatures (trust) signs its own stream messages too: give signingKey, the key of its agent id',
    );
}
