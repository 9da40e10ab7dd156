/**
 * tapctl nats remove-consumer: deletes a capability's consumer of TAP_TASKS that no runner serves
 * any more, with its twin of TAP_ADVISORIES (spec: bindings-nats#task-queue, #dead-letters), so
 * that the next runner of the capability creates both afresh with its own lease. The queue's
 * records and the unanswered advisories stay on their streams: a work queue keeps a message until
 * a consumer acknowledges it.
 */
import type { ConsumerInfo } from '@nats-io/jetstream';
import { CliError, type CommandContext } from '../registry.ts';
import { printJson } from '../workspace/format.ts';
import { withNats, requireStream, type NatsSession } from './connection.ts';

/** What was removed for one consumer. */
export interface RemovedConsumer {
  name: string;
  /** The subject it took, when it had one filter. */
  filter: string | undefined;
  /** Records of its queue that stay on TAP_TASKS: not yet delivered, or delivered and not acknowledged. */
  records_kept: number;
  /** Whether a consumer of the same name on TAP_ADVISORIES was removed too. */
  advisories_consumer: boolean;
}

/**
 * Removes the named consumers of TAP_TASKS and their twins of TAP_ADVISORIES. Every name is
 * checked before anything is removed: an unknown one, or one a runner pulls from (unless
 * `force`), fails the whole command.
 */
export async function removeConsumers(s: NatsSession, names: string[], force: boolean): Promise<RemovedConsumer[]> {
  await requireStream(s, s.names.tasks);
  const found: ConsumerInfo[] = [];
  for (const name of names) {
    const c = await s.jsm.consumers.info(s.names.tasks, name).catch(() => null);
    if (!c)
      throw new CliError(`no consumer ${name} on ${s.names.tasks}`, {
        where: s.url,
        hint: "tapctl nats status lists the queue's consumers and whether a runner pulls from each.",
        code: 'UNKNOWN_CONSUMER',
      });
    if (c.num_waiting > 0 && !force)
      throw new CliError(
        `a runner pulls from consumer ${name} of ${s.names.tasks} (${c.num_waiting} pull requests waiting): removing it takes the queue from under that runner`,
        {
          where: s.url,
          hint: 'Stop the runners of the capability first (a stopped runner pull lasts a few seconds more), or give --force.',
          code: 'CONSUMER_IN_USE',
        },
      );
    found.push(c);
  }
  const removed: RemovedConsumer[] = [];
  for (const c of found) {
    await s.jsm.consumers.delete(s.names.tasks, c.name);
    const advisories = await s.jsm.consumers.delete(s.names.advisories, c.name).catch(() => false);
    removed.push({
      name: c.name,
      filter: c.config.filter_subject,
      records_kept: c.num_pending + c.num_ack_pending,
      advisories_consumer: advisories,
    });
  }
  return removed;
}

/** Runs `tapctl nats remove-consumer`. */
export async function runRemoveConsumer(
  o: { server: string; json: boolean; names: string[]; force: boolean },
  ctx: CommandContext,
): Promise<number> {
  return withNats(o.server, async (s) => {
    const done = await removeConsumers(s, o.names, o.force);
    if (o.json) {
      printJson(ctx.io, { removed: done });
      return 0;
    }
    for (const r of done)
      ctx.io.out(
        `Removed consumer ${r.name} of ${s.names.tasks}${r.filter ? ` (${r.filter})` : ''}` +
          `${r.advisories_consumer ? ` and its consumer of ${s.names.advisories}` : ''}; ` +
          `${r.records_kept === 1 ? '1 record stays' : `${r.records_kept} records stay`} on the queue for the next runner of the capability, which creates the consumer afresh.\n`,
      );
    return 0;
  });
}
