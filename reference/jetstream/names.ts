/**
 * The names and subjects of the NATS binding's durable tasks (spec: bindings-nats#subjects), with
 * no import: the harness's nats-durable cases use them without loading the NATS client.
 */

/** The names a deployment uses; the defaults are those of the spec. */
export interface DurableNames {
  prefix: string;
  tasks: string;
  results: string;
  events: string;
  dead: string;
  idempotency: string;
}

export const DEFAULT_NAMES: DurableNames = Object.freeze({
  prefix: 'tap',
  tasks: 'TAP_TASKS',
  results: 'TAP_RESULTS',
  events: 'TAP_EVENTS',
  dead: 'TAP_DEAD',
  idempotency: 'TAP_IDEMPOTENCY',
});

/** The subject of a capability's queue. */
export const taskSubject = (n: DurableNames, capability: string): string => `${n.prefix}.tasks.${capability}`;
/** The subject of a task's finished record. */
export const resultSubject = (n: DurableNames, taskId: string): string => `${n.prefix}.results.${taskId}`;
/** The subject of a durable task's stream of messages (spec: bindings-nats#event-streams). */
export const eventSubject = (n: DurableNames, taskId: string): string => `${n.prefix}.events.${taskId}`;
/** The subject of a capability's dead letters. */
export const deadSubject = (n: DurableNames, capability: string): string => `${n.prefix}.dead.${capability}`;
