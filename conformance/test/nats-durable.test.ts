/**
 * tap-conform's nats-durable profile against a real nats-server: the reference agent with its
 * durable queues passes every case, and each broken durable agent fails the case of its rule
 * and no other.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../../reference/transports/nats/test-server.ts';
import { natsDurableCases } from '../cases/nats-durable.ts';
import { runConformance } from '../run.ts';
import { startBrokenDurableAgent, type DurableFault } from './nats-durable-broken.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** A short lease and few deliveries keep every case under a few seconds. */
const LEASE_MS = 400;
const MAX_DELIVER = 3;
const NO_RENEWAL_LEASE_MS = 2000;
const DURABLE_IDS = natsDurableCases.map((c) => c.id);

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tap-conform nats-durable (spec: bindings-nats#certification)'), () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function server(): Promise<NatsServer> {
    const s = await startNatsServer();
    cleanups.push(() => s.stop());
    return s;
  }

  it('certifies tap-reference-agent --nats --durable: every nats-durable case passes', { timeout: 30_000 }, async () => {
    const s = await server();
    const agent: ChildProcess = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'reference/agents/reference-agent.ts',
        '--nats',
        s.url,
        '--durable',
        '--lease-ms',
        String(LEASE_MS),
        '--max-deliver',
        String(MAX_DELIVER),
        '--grace-ms',
        '1000',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    cleanups.push(async () => {
      if (agent.exitCode === null) {
        const exited = once(agent, 'exit');
        agent.kill('SIGTERM');
        await exited;
      }
    });
    const [url] = (await once(createInterface({ input: agent.stdout! }), 'line')) as [string];
    const report = await runConformance({ target: url, profiles: ['nats-durable'], timeoutMs: 5000 });
    expect(report.cases.map((c) => [c.id, c.verdict, c.verdict === 'PASS' ? '' : c.detail])).toEqual(
      DURABLE_IDS.map((id) => [id, 'PASS', '']),
    );
  });

  it('leaves the cases not tested for an agent that serves no durable queue', { timeout: 20_000 }, async () => {
    const s = await server();
    const agent = createAgent({
      card: {
        agent_id: 'tap.sessions-only',
        name: 'sessions only',
        description: 'The reference runtime over NATS without durable queues.',
        capabilities: [],
        limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
      },
      capabilities: withConformanceCapabilities(),
      logger: () => {},
    });
    const listener = await agent.listenNats({ url: s.url });
    cleanups.push(async () => {
      await listener.close();
      await agent.shutdown();
    });
    const report = await runConformance({ target: listener.url, profiles: ['nats-durable'], timeoutMs: 2000 });
    expect(new Set(report.cases.map((c) => c.verdict))).toEqual(new Set(['NOT-TESTED']));
  });

  it.each<[DurableFault, string, RegExp]>([
    ['no-renewal', 'nats-durable.lease.renewal', /delivered [2-9] times .* the lease was not renewed/],
    ['attempt-zero', 'nats-durable.attempts.delivery-count', /delivery 2 ran with Tap-Attempt 0/],
    ['no-idempotency', 'nats-durable.idempotency.repeat', /TAP_IDEMPOTENCY does not hold the first task/],
    ['no-dead-letters', 'nats-durable.dead-letter', /was not in TAP_DEAD after 3 failed deliveries/],
    ['runs-again', 'nats-durable.result.stored-result', /the phase ran again/],
  ])('fails the broken durable agent %s in %s, and only there', { timeout: 60_000 }, async (fault, id, reason) => {
    const s = await server();
    const agentId = `tap.broken-durable-${fault}`;
    // The agent that never renews gets a longer lease: at 400 ms a loaded machine let the short
    // tasks of other cases outlive it too, and they failed for the same break.
    const leaseMs = fault === 'no-renewal' ? NO_RENEWAL_LEASE_MS : LEASE_MS;
    cleanups.push(await startBrokenDurableAgent(s.url, agentId, fault, { leaseMs, maxDeliver: MAX_DELIVER }));
    const report = await runConformance({ target: `${s.url}/${agentId}`, profiles: ['nats-durable'], timeoutMs: 2000 });
    const verdicts = Object.fromEntries(report.cases.map((c) => [c.id, c.verdict]));
    expect(verdicts).toEqual(Object.fromEntries(DURABLE_IDS.map((c) => [c, c === id ? 'FAIL' : 'PASS'])));
    expect(report.cases.find((c) => c.id === id)?.detail).toMatch(reason);
  });
});
