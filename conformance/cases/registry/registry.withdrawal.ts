/** registry profile, Withdrawal (spec: registry#withdrawal). */
import { type Case, defineCase } from '../../case.ts';
import { currentEntry, REG, watchKey, watchPublishes, withBucket } from './kit.ts';
import { fail, harnessError } from '../../verdict.ts';
import type { RegistryEntry } from '../../../reference/mesh/entry.ts';
import { check, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.withdraw.shutdown',
    title: 'On SIGTERM the agent withdraws its entry with a delete before it exits, and writes it no more',
    profile: 'registry',
    requirements: ['TAP-REG-025', 'TAP-REG-027', 'TAP-REG-028', 'TAP-REG-043'],
    needs: { ...REG, agentPid: true },
    exclusive: true,
    budgetMs: 30_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId, nc) => {
        const { entry, write: first } = await currentEntry(kv, agentId);
        const pid = ctx.env.registry!.agentPid!;
        const alive = (): boolean => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        };
        if (!alive()) return harnessError(`there is no process ${pid} to stop (--agent-pid)`);
        let exitedAt: number | undefined;
        const poll = setInterval(() => {
          if (exitedAt === undefined && !alive()) exitedAt = Date.now();
        }, 20);
        const grace = ctx.scaled(15_000);
        const publishes = await watchPublishes(nc, agentId);
        try {
          const watching = watchKey(kv, agentId, grace, (ws) => {
            const del = ws.findIndex((w) => w.op !== 'PUT');
            // After the delete, one heartbeat more to see that no write follows it (TAP-REG-028).
            if (del !== -1 && Date.now() - ws[del]!.seenAt >= entry.heartbeat_ms) return true;
            return exitedAt !== undefined && Date.now() - exitedAt > ctx.scaled(1000);
          });
          ctx.note(`sending SIGTERM to process ${pid}`);
          process.kill(pid, 'SIGTERM');
          const writes = await watching;
          const del = writes.find((w) => w.op !== 'PUT');
          if (!del)
            return fail(
              exitedAt !== undefined
                ? 'the agent exited and left its entry in the registry'
                : `the agent neither withdrew its entry nor exited within ${grace} ms of SIGTERM`,
              'a delete of the entry',
              'none',
            );
          // The delete is conditional on the agent's own last write (TAP-REG-027): the last PUT before it.
          const lastOwn = writes.filter((w) => w.op === 'PUT' && w.revision < del.revision).at(-1);
          // The agent's writes: the entry read before SIGTERM and every later one of its instance.
          const ownRevisions = new Set([
            first.revision,
            ...writes.filter((w) => w.op === 'PUT' && (w.value as RegistryEntry)?.instance === entry.instance).map((w) => w.revision),
          ]);
          const deletes = publishes.seen.filter((p) => p.op === 'DEL');
          const later = writes.filter(
            (w) => w.op === 'PUT' && w.revision > del.revision && (w.value as RegistryEntry)?.instance === entry.instance,
          );
          return verdictOf(
            'withdrawn with a delete',
            check(del.op === 'DEL', 'the entry was withdrawn with a purge, which watchers are not told of as a delete', 'DEL', del.op),
            deletes.length === 0
              ? null
              : check(
                  // The server applies a conditional delete only at that revision; any write of the
                  // agent's own instance is its own (a heartbeat in flight may have moved the key).
                  deletes.every((p) => p.expected !== undefined && ownRevisions.has(p.expected)),
                  "the agent deleted its key without requiring the key's last write to be its own (Nats-Expected-Last-Subject-Sequence): it would delete another process's entry",
                  `a delete conditional on revision ${lastOwn?.revision ?? first.revision}`,
                  show(deletes.map((p) => p.expected ?? 'unconditional')),
                ),
            check(
              later.length === 0,
              'the agent wrote its entry again after withdrawing it',
              'no write',
              show(later.map((w) => w.revision)),
            ),
          );
        } finally {
          publishes.stop();
          clearInterval(poll);
        }
      }),
  }),
];
