/** registry profile, Instances (spec: registry#instances). */
import { type Case, defineCase } from '../../case.ts';
import {
  currentEntry,
  entryWithHeartbeat,
  instanceBits,
  REG,
  startSecondProcess,
  watchKey,
  watchPublishes,
  withBucket,
  type Write,
} from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { harnessError } from '../../verdict.ts';
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
  defineCase({
    id: 'registry.instance.taken',
    title:
      "A second process of the agent id, started while the agent is in the mesh, refuses to join and says the id is taken; the live entry stays the running instance's",
    profile: 'registry',
    requirements: ['TAP-REG-010'],
    needs: { ...REG, agentCommand: true },
    // Alone: the second process may answer the agent's open subject for as long as it lives.
    exclusive: true,
    budgetMs: 30_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const command = ctx.env.registry!.agentCommand!;
        const windowMs = ctx.scaled(10_000);
        ctx.note(`starting a second process of ${agentId} while instance ${entry.instance} is live: ${command}`);
        const instanceOf = (w: Write): unknown => (w.value as { instance?: unknown } | undefined)?.instance;
        const isForeign = (w: Write): boolean => w.op !== 'PUT' || instanceOf(w) !== entry.instance;
        const second = startSecondProcess(command);
        let exitedAt: number | undefined;
        void second.exited.then(() => (exitedAt = Date.now()));
        let writes: Write[];
        let status: number | string | undefined;
        try {
          // Until it has exited (and a write it sent just before could have come), it wrote, or the window ends.
          writes = await watchKey(
            kv,
            agentId,
            windowMs,
            (ws) => ws.some(isForeign) || (exitedAt !== undefined && Date.now() - exitedAt > ctx.scaled(300)),
          );
          status = second.status();
        } finally {
          await second.stop(ctx.scaled(2000));
        }
        const output = second.output();
        const tail = output.trim().split('\n').slice(-5).join('\n');
        if (status === 126 || status === 127 || status === 'not started')
          return harnessError(`the --agent-command could not be run (exit ${status}): ${tail || 'no output'}`);
        const foreign = writes.filter(isForeign);
        const now = await kv.get(agentId);
        const kept = now?.operation === 'PUT' && (now.json() as { instance?: unknown }).instance === entry.instance;
        const report = output
          .split('\n')
          .find((line) => line.includes(agentId) && /taken|in use|already|held|holds|exists|refus|conflict/i.test(line));
        const ended = status === undefined ? `was still running after ${windowMs} ms` : `exited with ${status}`;
        return verdictOf(
          `the second process refused (it ${ended}): ${show(report?.trim() ?? '', 200)}`,
          check(
            foreign.length === 0,
            `the second process wrote over the live entry of instance ${entry.instance}: a process may not overwrite a live entry of another instance`,
            `only writes of instance ${entry.instance}`,
            show(
              foreign.map((w) => (w.op === 'PUT' ? { revision: w.revision, instance: instanceOf(w) } : { revision: w.revision, op: w.op })),
            ),
          ),
          check(
            kept,
            `after the second process, the entry under ${agentId} is no longer that of the running instance ${entry.instance}`,
            `instance ${entry.instance}`,
            show(now?.operation === 'PUT' ? (now.json() as { instance?: unknown }).instance : (now?.operation ?? 'no entry')),
          ),
          check(
            report !== undefined,
            `the second process did not report that agent id ${agentId} is taken: no line of its output names the id with a word such as "taken" (it ${ended})`,
            `a line naming ${agentId} as taken`,
            show(tail || 'no output', 300),
          ),
        );
      }),
  }),
];
