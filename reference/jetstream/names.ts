/**
 * The names and subjects of the NATS binding's durable tasks (spec: bindings-nats#subjects), built
 * by the binding's one checked subject builder and importing no NATS client: the harness's
 * nats-durable cases use them without loading it.
 */
import { buildSubject, checkPrefix, SubjectPartError, type Wildcard } from '../transports/nats/subjects.ts';

/** The names a deployment uses; the defaults are those of the spec. */
export interface DurableNames {
  prefix: string;
  tasks: string;
  results: string;
  events: string;
  dead: string;
  /** The stream that keeps the server's max-deliveries advisories of the queue's consumers until a runner answers each. */
  advisories: string;
  idempotency: string;
}

export const DEFAULT_NAMES: DurableNames = Object.freeze({
  prefix: 'tap',
  tasks: 'TAP_TASKS',
  results: 'TAP_RESULTS',
  events: 'TAP_EVENTS',
  dead: 'TAP_DEAD',
  advisories: 'TAP_ADVISORIES',
  idempotency: 'TAP_IDEMPOTENCY',
});

/** The names, each checked: a prefix of subject tokens and stream and bucket names of one token each. */
export function checkNames(n: DurableNames): DurableNames {
  checkPrefix(n.prefix);
  for (const key of ['tasks', 'results', 'events', 'dead', 'advisories', 'idempotency'] as const) {
    if (typeof n[key] !== 'string' || !/^[A-Za-z0-9_-]{1,200}$/.test(n[key]))
      throw new SubjectPartError(`the ${key} stream name ${JSON.stringify(n[key])} must be letters, digits, "_" and "-"`);
  }
  return n;
}

/** A subject part for a capability, a task id, a placeholder `{name}`, or every subject under the kind (`>`). */
export type DurableTail = string | { template: string } | typeof Wildcard.TAIL;

const tail = (value: DurableTail, what: string) => (typeof value === 'string' ? { id: value, what } : value);

/** The subject of a capability's queue. */
export const taskSubject = (n: DurableNames, capability: DurableTail): string =>
  buildSubject(checkPrefix(n.prefix), 'tasks', tail(capability, 'capability'));
/** The subject of a task's finished record. */
export const resultSubject = (n: DurableNames, taskId: DurableTail): string =>
  buildSubject(checkPrefix(n.prefix), 'results', tail(taskId, 'task id'));
/** The subject of a durable task's stream of messages (spec: bindings-nats#event-streams). */
export const eventSubject = (n: DurableNames, taskId: DurableTail): string =>
  buildSubject(checkPrefix(n.prefix), 'events', tail(taskId, 'task id'));
/** The subject of a capability's dead letters. */
export const deadSubject = (n: DurableNames, capability: DurableTail): string =>
  buildSubject(checkPrefix(n.prefix), 'dead', tail(capability, 'capability'));
