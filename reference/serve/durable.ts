/**
 * An agent's capabilities on their durable JetStream queues (spec: bindings-nats#task-queue): the
 * conformance capabilities through their durable handlers, every other capability through its own
 * handler, which sees a task context of the durable queue instead of a session's.
 */
import type { CapabilityDefinition, Handler, TaskContext } from '../agent/index.ts';
import { inputValidator } from '../agent/input-schemas.ts';
import { errorPayload, TapError } from '../core/errors.ts';
import { durableConformanceHandlers, type DurableHandler } from '../jetstream/capabilities.ts';
import { startDurableRunner, type DurableRunner, type DurableWork } from '../jetstream/runner.ts';
import type { TelemetryOptions } from '../telemetry.ts';
import type { SigningKey, TrustFile } from '../trust.ts';
import type { AuditSink } from '../ops/audit.ts';
import { asConnection } from '../transports/nats/client.ts';
import type { NatsConnectionLike } from '../transports/nats/shape.ts';
import type { Family } from '../ops/prometheus.ts';

/** What `serveDurably` needs of the agent it serves for. */
export interface DurableServeOptions {
  /** A NatsConnection of @nats-io/transport-node. */
  nc: NatsConnectionLike;
  agentId: string;
  /** The capability names the agent's card offers. */
  offered: readonly string[];
  /** The handlers the agent was built with, by capability name. */
  capabilities: Readonly<Record<string, Handler | CapabilityDefinition>>;
  leaseMs: number;
  maxDeliver: number;
  /** This agent's key: its runners sign what they store in TAP_EVENTS (spec: bindings-nats#signed-records). */
  signingKey?: SigningKey;
  /** The trust file: only records signed by a principal in it run. */
  trust?: TrustFile;
  /** The card's max_task_seconds: a durable task's deadline, counted from its delivery. */
  maxTaskSeconds: number;
  log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Where the runners write an audit record per finished task (the agent's trail). */
  audit?: AuditSink;
  /** The agent's OpenTelemetry: each delivery a span under its record's traceparent. */
  telemetry?: TelemetryOptions;
}

/** The durable runners serving: their metrics, and the function that stops them all. */
export interface DurableServing {
  metrics(): Promise<Family[]>;
  stop(): Promise<void>;
}

/** Capabilities that cannot run on a queue: a plan needs a requester to decide it, a grant a session to carry it. */
const SESSION_ONLY = new Set(['tap.test.plan', 'tap.test.guarded', 'tap.test.ask']);

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

/** The task context of a durable delivery: output goes to the task's stream in TAP_EVENTS; plans need a session. */
function durableContext(work: DurableWork, capability: string, o: DurableServeOptions, store: Map<string, unknown>): TaskContext {
  const started = Date.now();
  // The n-th side effect of a delivery is the n-th of the task: a redelivery gets the values of those its first made (TAP-NATS-025).
  let effects = 0;
  const noPlans = (): never => {
    throw new TapError(errorPayload('INVALID_MESSAGE', `${capability} asked for a plan decision, which a durable queue cannot give`));
  };
  const noInput = (): never => {
    throw new TapError(
      errorPayload('CAPABILITY_NOT_SUPPORTED', `${capability} asked its requester for input, which a durable queue cannot carry`),
    );
  };
  return {
    taskId: work.record.task_id,
    capability,
    // The signer when the runner verifies signatures; otherwise what the record says, unverified.
    principal:
      work.principal ?? String((work.record.metadata['x-idempotency'] as { principal?: unknown } | undefined)?.principal ?? 'durable'),
    sessionId: '',
    deadline: new Date(started + o.maxTaskSeconds * 1000),
    attempt: work.attempts + 1,
    // A durable record carries no delegation path: a task submitted from here starts one (spec: mesh#delegation).
    delegation: [o.agentId],
    signal: work.signal,
    store: { get: (key) => store.get(key), set: (key, value) => void store.set(key, value) },
    progress: (p) => o.log('info', `task ${work.record.task_id}: progress ${JSON.stringify(p)}`),
    output: (data) => work.emit(data),
    log: (message, level = 'info') => o.log(level === 'debug' ? 'info' : level, `task ${work.record.task_id}: ${message}`),
    submitPlan: noPlans,
    askInput: noInput,
    sideEffect: (fn) => work.effect(`side effect ${effects++}`, fn),
    checkResource: () => {},
    checkpoint: () => {},
    sleep: (ms) => pause(ms, work.signal),
    now: () => Date.now(),
  };
}

/** A capability's handler as a durable phase handler: the input checked as a session would, then the handler. */
function adapt(name: string, def: Handler | CapabilityDefinition, o: DurableServeOptions, store: Map<string, unknown>): DurableHandler {
  const handler = typeof def === 'function' ? def : def.handler;
  const schema = typeof def === 'function' ? undefined : (def.inputSchema ?? def.capability.input_schema);
  const validate = schema ? inputValidator(name, schema as Record<string, unknown>) : undefined;
  return async (work) => {
    const input = work.record.context.current_input;
    const issues = validate?.(input);
    if (issues) {
      const first = issues[0]!;
      throw new TapError(errorPayload('INVALID_MESSAGE', `the input of ${name} is invalid: ${first.path || '/'} ${first.message}`));
    }
    return handler(input, durableContext(work, name, o, store));
  };
}

/**
 * Starts a durable runner per capability the card offers (but those that need a session); resolves
 * with their metrics and the function that stops them all.
 */
export async function serveDurably(o: DurableServeOptions): Promise<DurableServing> {
  const conformance = durableConformanceHandlers();
  const store = new Map<string, unknown>();
  const runners: DurableRunner[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(runners.map((r) => r.stop().catch(() => undefined)));
  };
  try {
    for (const name of o.offered) {
      if (SESSION_ONLY.has(name)) continue;
      const def = o.capabilities[name];
      const handler = conformance[name] ?? (def ? adapt(name, def, o, store) : undefined);
      if (!handler) continue;
      runners.push(
        await startDurableRunner({
          nc: asConnection(o.nc),
          agentId: o.agentId,
          capability: name,
          handler,
          leaseMs: o.leaseMs,
          maxAttempts: o.maxDeliver,
          ...(o.signingKey ? { signingKey: o.signingKey } : {}),
          ...(o.trust ? { trust: o.trust } : {}),
          logger: o.log,
          ...(o.audit ? { audit: o.audit } : {}),
          ...(o.telemetry ? { telemetry: o.telemetry } : {}),
        }),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop, metrics: async () => (await Promise.all(runners.map((r) => r.metrics()))).flat() };
}
