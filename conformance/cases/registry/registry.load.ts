/** registry profile, Load (spec: registry#load). */
import { allowance, entryWithHeartbeat, REG, watchKey, withBucket, type Write } from './kit.ts';
import type { RegistryEntry } from '../../../reference/mesh/entry.ts';
import { type Case, defineCase } from '../../case.ts';
import { check, need, require, show, verdictOf } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';

const running = (w: Write): number | undefined => (w.value as RegistryEntry | undefined)?.load?.running_tasks;

export const cases: Case[] = [
  defineCase({
    id: 'registry.load.moves',
    title: 'The load figure follows the running tasks within a heartbeat, up as they start and down as they end',
    profile: 'registry',
    spec: 'registry#load',
    reason: "the case watches the load figure of Load; the rule it checks is the entry's running_tasks (TAP-REG-006)",
    requirements: ['TAP-REG-006', 'TAP-REG-019'],
    needs: { ...REG, capabilities: ['tap.test.sleep'] },
    exclusive: true,
    budgetMs: 60_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry, hb } = await entryWithHeartbeat(kv, agentId, 'tasks would sleep over 30 s');
        const base = entry.load.running_tasks;
        const limit = hb + allowance(ctx, hb);
        const peer = need(await ctx.session());
        const sleepMs = 2 * hb + ctx.scaled(1000);
        const up = watchKey(kv, agentId, sleepMs, (ws) => ws.some((w) => (running(w) ?? 0) >= base + 2));
        const a = need(await startTask(peer, 'tap.test.sleep', { ms: sleepMs }));
        const b = need(await startTask(peer, 'tap.test.sleep', { ms: sleepMs }));
        const acceptedAt = Date.now();
        const writes = await up;
        const busy = writes.find((w) => (running(w) ?? 0) >= base + 2);
        require(
          check(
            busy !== undefined && busy.seenAt - acceptedAt <= limit,
            `with 2 tasks running no write of the entry showed them within heartbeat_ms (${hb})`,
            `running_tasks ${base + 2}`,
            show(writes.map(running)),
          ),
        );
        require(
          check(running(busy!) === base + 2, 'running_tasks counts more tasks than are running', String(base + 2), show(running(busy!))),
        );
        const down = watchKey(kv, agentId, sleepMs + 2 * limit, (ws) => ws.some((w) => (running(w) ?? Number.POSITIVE_INFINITY) <= base));
        need(await collectUntilResult(peer, a.taskId, sleepMs + ctx.scaled(10_000)));
        need(await collectUntilResult(peer, b.taskId, sleepMs + ctx.scaled(10_000)));
        const endedAt = Date.now();
        const after = await down;
        const idle = after.find((w) => (running(w) ?? Number.POSITIVE_INFINITY) <= base);
        return verdictOf(
          `running_tasks went ${base} → ${base + 2} → ${base}`,
          check(
            idle !== undefined && idle.seenAt - endedAt <= limit,
            `after both tasks ended no write of the entry showed it within heartbeat_ms (${hb})`,
            `running_tasks ${base}`,
            show(after.map(running)),
          ),
        );
      }),
  }),
];
