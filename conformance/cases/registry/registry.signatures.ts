/** registry profile, Signed entries (spec: registry#signatures). */
import { type Case, defineCase } from '../../case.ts';
import { allowance, currentEntry, REG, watchKey, withBucket } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { harnessError } from '../../verdict.ts';
import { entryProblem, type RegistryEntry } from '../../../reference/mesh/entry.ts';
import { refusalOf } from '../../../reference/mesh/signature.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.signature.signed',
    title: 'An agent started with a signing key signs every write of its entry with the key the trust file binds to its agent id',
    profile: 'registry',
    requirements: ['TAP-REG-052'],
    needs: { ...REG, registryTrust: true },
    budgetMs: 45_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const trust = ctx.env.registry!.trust!;
        if (!Object.hasOwn(trust.principals, agentId))
          return harnessError(
            `the trust file given with --registry-trust has no key for ${agentId}, the agent under test: give the trust file of its deployment`,
          );
        const { entry } = await currentEntry(kv, agentId);
        const hb = entry.heartbeat_ms;
        // The current write, then two heartbeats at most 20 s long: each write must verify.
        const window = Math.min(2 * hb, 20_000) + allowance(ctx, hb);
        const writes = (await watchKey(kv, agentId, window)).filter((w) => w.op === 'PUT');
        ctx.note(`${writes.length} writes in ${window} ms`);
        const problems = writes.map((w) => {
          const e = w.value as RegistryEntry;
          const why = entryProblem(e) ?? refusalOf(e, new Date(w.at), trust);
          return check(
            why === undefined,
            e?.signature === undefined
              ? 'a write of the entry carries no signature although the trust file binds a key to the agent id: was the agent given its key?'
              : `a write of the entry does not verify: ${why}`,
            `a signature by the key of ${agentId}`,
            show(e?.signature ?? '(none)'),
          );
        });
        return verdictOf(`${writes.length} writes, each signed by the key of ${agentId}`, ...problems);
      }),
  }),
];
