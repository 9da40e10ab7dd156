/** registry profile, Instances (spec: registry#instances). */
import { type Case, defineCase } from '../../case.ts';
import { currentEntry, entryWithHeartbeat, instanceBits, REG, watchPublishes, withBucket } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { sleep } from '../../peer.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.instance.random',
    title: 'The instance of the entry is long enough to carry 64 random bits',
    profile: 'registry',
    requirements: ['TAP-REG-009'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const bits = instanceBits(entry.instance);
        return verdictOf(
          `instance ${show(entry.instance)} can carry ${bits} bits`,
          check(
            bits >= 64,
            `the instance ${show(entry.instance)} is too short to carry 64 random bits (${bits} at most in its alphabet): two processes of one agent id could draw the same one`,
            'at least 64 bits',
            `${bits} bits`,
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.instance.conditional-writes',
    title: "The agent writes its entry only by create or by update against the key's last revision, never by a blind put",
    profile: 'registry',
    requirements: ['TAP-REG-012'],
    needs: REG,
    budgetMs: 30_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId, nc) => {
        const { entry, hb } = await entryWithHeartbeat(kv, agentId, 'three heartbeats');
        const watch = await watchPublishes(nc, agentId);
        await sleep(ctx.scaled(3 * hb + 500));
        watch.stop();
        const own = watch.seen.filter((p) => p.op === 'PUT' && p.instance === entry.instance);
        const blind = own.filter((p) => p.expected === undefined);
        return verdictOf(
          `${own.length} writes, each conditional on a revision`,
          check(own.length > 0, `the agent wrote its entry no more in ${3 * hb} ms (three heartbeats)`, 'writes', 'none'),
          check(
            blind.length === 0,
            `${blind.length} of the agent's ${own.length} writes of its entry carry no expected revision (Nats-Expected-Last-Subject-Sequence): a blind put can overwrite another process's entry`,
            'every write by create or update',
            `${blind.length} blind puts`,
          ),
        );
      }),
  }),
];
