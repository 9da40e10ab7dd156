/**
 * What the nats-durable tests share: the lease and deliveries of their agents, the verdicts a run
 * gives each case, a NATS server of its own for a test that runs beside others, and the keys of a
 * signed deployment.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'vitest';
import { newSigningKey, trustOf } from '../../reference/trust.ts';
import { startNatsServer, type NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { natsDurableCases } from '../cases/nats-durable/index.ts';

/**
 * A short lease and few deliveries keep every case under a few seconds. At 400 ms, `npm test`'s
 * own load once kept the reference agent from renewing in time (it renews every 133 ms); at
 * 1,000 ms it did so once more, in a fresh clone's run of 617 CPU-s (lease.waiting: a task that
 * waited for a place was delivered again; ten runs of that case beside two busy loops passed). At
 * 2,000 ms, as the broken agents have, a renewal may come 1,333 ms late.
 */
export const LEASE_MS = 2000;
export const MAX_DELIVER = 3;
/**
 * The lease of the broken agents, whose runs go four at a time: at 400 ms a loaded machine let
 * leases lapse while an agent that renews them waited for the CPU, and a redelivery failed cases
 * the break has nothing to do with. Their lease case waits 2.5 leases: it runs only for the
 * agent that never renews.
 */
export const BROKEN_LEASE_MS = 2000;
export const DURABLE_IDS = natsDurableCases.map((c) => c.id);
/** The cases of signed records: UNIMPLEMENTED in a run without --signing-key. */
export const SIGNED_IDS = ['nats-durable.signed.refused', 'nats-durable.signed.stored-result'];
/** The cases of a cluster (TAP-NATS-070): SKIPPED on the single server of these runs. */
export const CLUSTER_IDS = ['nats-durable.queue.replicas'];
/** What a run without a signing key gives a case the agent passes. */
export const passed = (id: string): string => (SIGNED_IDS.includes(id) ? 'UNIMPLEMENTED' : CLUSTER_IDS.includes(id) ? 'SKIPPED' : 'PASS');
/** Whether a case's detail is left out of the comparison: a pass, or a verdict these runs give whatever the agent does. */
export const quiet = (id: string, verdict: string): boolean => verdict === 'PASS' || SIGNED_IDS.includes(id) || CLUSTER_IDS.includes(id);
/**
 * A case as these runs compare it: id, verdict and detail, the detail left out when `quietly` says
 * so. A SKIPPED that says the machine was too slow to set the case up ("a machine under load")
 * counts as the verdict `expected` gives on an idle one: the case could not judge, and says so.
 */
export function compared(
  c: { id: string; verdict: string; detail: string },
  expected: (id: string) => string,
  quietly: (id: string, verdict: string) => boolean = quiet,
): [string, string, string] {
  const load = c.verdict === 'SKIPPED' && /a machine under load/.test(c.detail);
  return [c.id, load ? expected(c.id) : c.verdict, load || quietly(c.id, c.verdict) ? '' : c.detail];
}
export const CONSUMERS = ['echo', 'stream', 'sleep', 'fail', 'counter'].map((c) => `tap-tap_test_${c}`);

/** The keys of a signed deployment in a fresh folder: the agent's, the harness's, and the trust file of both. */
export function signing(agentId: string, stops: Array<() => Promise<unknown>>) {
  const dir = mkdtempSync(join(tmpdir(), 'tap-durable-keys-'));
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const agent = newSigningKey(agentId);
  const harness = newSigningKey('tap-conform.signer');
  const trust = trustOf([agent, harness]);
  const files = { agentKey: join(dir, 'agent.key.json'), harnessKey: join(dir, 'harness.key.json'), trust: join(dir, 'trust.json') };
  writeFileSync(files.agentKey, JSON.stringify(agent));
  writeFileSync(files.harnessKey, JSON.stringify(harness));
  writeFileSync(files.trust, JSON.stringify(trust));
  return { ...files, signing: { trust, signingKey: agent } };
}
/** With a key, the cases of an unsigned stored result do not apply: a runner with a trust file must not take it. */
export const UNSIGNED_STORED = ['nats-durable.result.stored-result', 'nats-durable.result.attempts', 'nats-durable.stream.fence'];
export const passedSigned = (id: string): string => (UNSIGNED_STORED.includes(id) || CLUSTER_IDS.includes(id) ? 'SKIPPED' : 'PASS');

/**
 * A server of its own for a broken agent's test, which runs beside the others (it.concurrent):
 * what it starts is stopped when that test finishes, not by the afterEach of the file.
 */
export async function brokenServer(t: TestContext): Promise<NatsServer & { cleanups: Array<() => Promise<unknown>> }> {
  const s = await startNatsServer();
  const own: Array<() => Promise<unknown>> = [() => s.stop()];
  t.onTestFinished(async () => {
    for (const c of own.splice(0).reverse()) await c().catch(() => {});
  });
  return Object.assign(s, { cleanups: own });
}
