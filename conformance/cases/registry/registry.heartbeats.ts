/** registry profile, Heartbeats (spec: registry#heartbeats). */
import { type Case, defineCase } from '../../case.ts';
import { allowance, currentEntry, entryWithHeartbeat, REG, watchKey, withBucket, type Write } from './kit.ts';
import { check, require, show, verdictOf } from '../kit.ts';
import { fail, type Outcome } from '../../verdict.ts';
import type { RegistryEntry } from '../../../reference/mesh/entry.ts';
import { refusalOf } from '../../../reference/mesh/signature.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.heartbeat.renewed',
    title: 'The agent renews its entry at least every heartbeat_ms, with a lifetime of at least two heartbeats',
    profile: 'registry',
    requirements: ['TAP-REG-013', 'TAP-REG-014', 'TAP-REG-016', 'TAP-REG-017', 'TAP-REG-041'],
    needs: REG,
    budgetMs: 45_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry: first } = await currentEntry(kv, agentId);
        const hb = first.heartbeat_ms;
        require(check(hb >= 100, 'heartbeat_ms is below 100', '>= 100', String(hb)));
        require(check(first.ttl_ms >= 2 * hb, 'ttl_ms is below twice heartbeat_ms', `>= ${2 * hb}`, String(first.ttl_ms)));
        const maxAge = (await kv.status()).ttl;
        require(
          check(
            maxAge === 0 || first.ttl_ms <= maxAge,
            `ttl_ms is above the bucket's max_age (${maxAge} ms)`,
            `<= ${maxAge}`,
            String(first.ttl_ms),
          ),
        );
        // Three heartbeats at most 30 s long are watched: every gap, to the end of the window too, within one heartbeat.
        const window = Math.min(3 * hb, 30_000) + allowance(ctx, hb);
        const started = Date.now();
        const writes = (await watchKey(kv, agentId, window)).filter((w) => w.op === 'PUT');
        const ended = Date.now();
        ctx.note(`${writes.length} writes in ${ended - started} ms, heartbeat_ms ${hb}`);
        const limit = hb + allowance(ctx, hb);
        const problems: (Outcome | null)[] = [];
        for (let i = 1; i < writes.length; i++) {
          const gap = writes[i]!.at - writes[i - 1]!.at;
          problems.push(
            check(gap <= limit, `two writes of the entry were ${gap} ms apart, more than heartbeat_ms (${hb})`, `<= ${hb} ms`, `${gap} ms`),
          );
        }
        const last = writes.at(-1);
        const silence = ended - (last ? last.seenAt : started);
        problems.push(
          check(
            silence <= limit,
            `the entry was not renewed for ${silence} ms, more than heartbeat_ms (${hb})`,
            `<= ${hb} ms`,
            `${silence} ms`,
          ),
        );
        for (const w of writes) {
          const e = w.value as RegistryEntry;
          const drift = Math.abs(Date.parse(e?.updated_at) - w.at);
          problems.push(
            check(
              Number.isFinite(drift) && drift <= ctx.scaled(2000),
              'updated_at is not the time of its write',
              `within 2 s of the server's time ${new Date(w.at).toISOString()}`,
              show(e?.updated_at),
            ),
          );
          for (const k of ['instance', 'started_at', 'heartbeat_ms', 'ttl_ms'] as const)
            problems.push(check(e?.[k] === first[k], `${k} changed between writes of one instance`, show(first[k]), show(e?.[k])));
        }
        return verdictOf(`renewed ${writes.length} times in ${ended - started} ms`, ...problems);
      }),
  }),
  defineCase({
    id: 'registry.heartbeat.margin',
    title: 'The entry lives at least three heartbeats, so that one late heartbeat does not drop it',
    profile: 'registry',
    requirements: ['TAP-REG-015'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        return verdictOf(
          'ttl_ms is at least three heartbeats',
          check(
            entry.ttl_ms >= 3 * entry.heartbeat_ms,
            'ttl_ms is below three heartbeats',
            `>= ${3 * entry.heartbeat_ms}`,
            String(entry.ttl_ms),
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.overwrite.reasserts',
    title: 'An agent whose live entry another writer overwrote or deleted writes its own entry again instead of leaving the mesh',
    profile: 'registry',
    requirements: ['TAP-REG-018'],
    needs: REG,
    exclusive: true,
    budgetMs: 60_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry, hb } = await entryWithHeartbeat(kv, agentId, 'it waits two heartbeats twice');
        // The agent finds the write at its next heartbeat at the latest, and writes its entry again then.
        const limit = 2 * hb + allowance(ctx, hb);
        const trust = ctx.env.registry?.trust;
        const own = (w: Write): boolean => w.op === 'PUT' && (w.value as RegistryEntry | undefined)?.instance === entry.instance;
        const { signature: _dropped, ...unsigned } = entry;
        const forged = {
          ...unsigned,
          instance: 'tap-conform-forgery',
          endpoints: [{ binding: 'nats', url: `nats://127.0.0.1:9/${agentId}` }],
          updated_at: new Date().toISOString(),
        };
        const attacks: Array<[string, () => Promise<number>]> = [
          [
            `another writer put instance tap-conform-forgery, endpoint nats://127.0.0.1:9/${agentId}, under its key`,
            () => kv.put(agentId, JSON.stringify(forged)),
          ],
          ['another writer deleted its key', async () => (await kv.delete(agentId), (await kv.get(agentId))?.revision ?? 0)],
        ];
        const problems: (Outcome | null)[] = [];
        for (const [what, attack] of attacks) {
          const after = await attack();
          ctx.note(`${what} (revision ${after})`);
          // A watch of the key begins with its last write, so a quick answer of the agent is not missed.
          const writes = await watchKey(kv, agentId, limit, (ws) => ws.some((w) => w.revision > after && own(w)));
          const back = writes.find((w) => w.revision > after && own(w));
          if (!back) {
            // Leave no forgery behind for the cases that follow.
            if (what.includes('put')) await kv.delete(agentId).catch(() => {});
            return fail(
              `after ${what}, the agent did not write its own entry again within two heartbeats (${limit} ms): it left the mesh or stopped renewing, so one forged write removes it for good`,
              `a write of instance ${entry.instance} after revision ${after}`,
              'none',
            );
          }
          const why = trust ? refusalOf(back.value as RegistryEntry, new Date(back.at), trust) : undefined;
          problems.push(
            check(why === undefined, `the entry the agent wrote again does not verify: ${why}`, 'a signed entry', show(back.value, 200)),
          );
        }
        // It goes on renewing: another write of its own within a heartbeat and a half.
        const last = (await kv.get(agentId))?.revision ?? 0;
        const renewed = await watchKey(kv, agentId, limit, (ws) => ws.some((w) => w.revision > last && own(w)));
        problems.push(
          check(
            renewed.some((w) => w.revision > last && own(w)),
            'after writing its entry again the agent stopped renewing it',
            `a heartbeat within ${limit} ms`,
            'none',
          ),
        );
        return verdictOf('the agent wrote its entry again after a forged write and a forged delete, and kept renewing it', ...problems);
      }),
  }),
];
