/**
 * The effects records of a durable runner (spec: bindings-nats#idempotency, TAP-NATS-025): what
 * each effect of a task gave, kept for the deliveries of the task that come after the one that
 * made it, so that a redelivery never repeats an effect that completed. The records live as long
 * as the runner: an effect whose record must outlive the process keeps it beside the effect, as
 * fixtures/agents/nats/durable-counter.mjs does.
 */

/** The most tasks whose effects records a runner keeps: past it, the records of the oldest go first. */
const MAX_EFFECTS_RECORDS = 10_000;

/**
 * The effects records of a runner's tasks, by task_id: what each effect a delivery completed
 * gave, for the deliveries of the same task that come after it (spec: bindings-nats#idempotency).
 */
export class EffectsRecords {
  private readonly byTask = new Map<string, Map<string, unknown>>();

  /** Runs `fn` as the effect `name` of task `taskId` unless the task's record holds it; resolves with its value. */
  async once<T>(taskId: string, name: string, fn: () => T | Promise<T>): Promise<T> {
    const record = this.byTask.get(taskId);
    if (record?.has(name)) return record.get(name) as T;
    const value = await fn();
    let kept = this.byTask.get(taskId);
    if (!kept) {
      if (this.byTask.size >= MAX_EFFECTS_RECORDS) this.byTask.delete(this.byTask.keys().next().value!);
      kept = new Map();
      this.byTask.set(taskId, kept);
    }
    kept.set(name, value);
    return value;
  }

  /** Forgets a finished task's record: a later delivery of it finds its finished record and runs nothing. */
  forget(taskId: string): void {
    this.byTask.delete(taskId);
  }
}
