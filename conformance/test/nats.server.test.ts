/**
 * tap-conform over the NATS binding against a real nats-server: an agent that serves no durable
 * queue leaves the nats-durable profile UNIMPLEMENTED and says why, each broken agent fails the case
 * of its rule, and two processes under one agent id stop the run with a message that says so.
 *
 * The whole suite over NATS against the reference agent is the README's command pair
 * (`tap-reference-agent --nats` and `tap-conform nats://…/tap.reference-agent`, recipe "nats"),
 * which npm test's docs step runs verbatim from the installed package and holds to the level line
 * "TAP 1.1 Certified over NATS — security (…) and nats-durable (durable queues) not offered": a
 * strict certification, so no case FAILs, ERRORs or is NOT-TESTED, and no profile but those two
 * is left unoffered. It is not run a second time here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsServer,
  type NatsServer,
} from '../../reference/transports/nats/nats-server.testkit.ts';
import { answeringProcesses } from '../nats-processes.ts';
import { runConformance } from '../run.ts';
import { AGENT, tapConform } from './bins.testkit.ts';
import { startBrokenNatsAgent, type NatsFault } from './nats-broken.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** `p`, or a rejection naming `what` once `ms` have passed: a hang says which step it was. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tap-conform nats://host:port/<agent_id> (spec: bindings-nats)'), () => {
  let server: NatsServer;
  let agent: ChildProcess;
  let url: string;

  beforeAll(async () => {
    server = await startNatsServer();
    // The README's command: tap-reference-agent --nats URL.
    agent = spawn(process.execPath, [AGENT, '--nats', server.url, '--grace-ms', '2000'], { stdio: ['ignore', 'pipe', 'ignore'] });
    [url] = (await once(createInterface({ input: agent.stdout! }), 'line')) as [string];
  });
  afterAll(async () => {
    if (agent && agent.exitCode === null) agent.kill('SIGKILL');
    await server?.stop();
  });

  it('an agent that serves no durable queue: tap-conform --profile nats-durable leaves every case UNIMPLEMENTED, says why, and exits 0', {
    timeout: 60_000,
  }, async () => {
    const run = await tapConform([url, '--profile', 'nats-durable']);
    expect(run.code).toBe(0);
    expect(run.report?.transport).toBe('nats');
    expect(run.report?.profiles['nats-durable']).toBe('UNIMPLEMENTED');
    const durable = run.report!.cases.filter((c) => c.profile === 'nats-durable');
    expect(durable.length).toBeGreaterThanOrEqual(8);
    expect(durable.map((c) => c.verdict)).toEqual(durable.map(() => 'UNIMPLEMENTED'));
    expect(new Set(durable.map((c) => c.detail))).toEqual(
      new Set([
        'the agent serves no durable queue: the NATS server has no stream TAP_TASKS (an agent built on runAgent, such as tap-reference-agent, serves its capabilities on durable queues when started with --durable)',
      ]),
    );
  });

  // Each step is bounded on its own (the run above the case's own 30 s budget), so a hang names its step.
  // The broken agents answer for agent ids of their own, so their runs go at once: each mostly waits
  // for a frame its agent never sends.
  it.concurrent.each<[NatsFault, string]>([
    ['late-subscribe', 'nats.open.first-frame'],
    ['any-connection-id', 'nats.open.connection-id'],
    ['no-keepalives', 'nats.liveness.keepalive'],
    ['any-keepalive', 'nats.open.keepalive-range'],
    ['no-queue-group', 'nats.open.queue-group'],
    ['no-default-keepalive', 'nats.liveness.default-keepalive'],
    // Every connection of these two meets the fault: the probe names it, and the run stops after its case (FAIL), not with exit 3.
    ['seq-counts-open', 'nats.open.first-seq'],
    ['wrong-out-subject', 'nats.frames.out-subject'],
  ])('fails an agent that breaks the rule (%s) in %s', { timeout: 90_000 }, async (fault, id) => {
    const agentId = `tap.broken-${fault}`;
    const stop = await within(15_000, `starting the ${fault} agent`, startBrokenNatsAgent(server.url, agentId, fault));
    try {
      const report = await within(
        60_000,
        `the run of ${id}`,
        runConformance({ target: `${server.url}/${agentId}`, only: [id], timeoutMs: 2000 }),
      );
      expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[id, 'FAIL', expect.any(String)]]);
    } finally {
      await within(10_000, `stopping the ${fault} agent`, stop());
    }
  });

  it.concurrent.each<[NatsFault, string, string]>([
    ['seq-counts-open', 'nats.open.first-seq', 'TAP-NATS-049'],
    ['wrong-out-subject', 'nats.frames.out-subject', 'TAP-NATS-006'],
  ])(
    'a whole run against an agent whose every connection breaks a rule (%s) FAILs %s, naming %s, and exits 1, not 3',
    {
      timeout: 90_000,
    },
    async (fault, id, requirement) => {
      const agentId = `tap.broken-run-${fault}`;
      const stop = await within(15_000, `starting the ${fault} agent`, startBrokenNatsAgent(server.url, agentId, fault));
      try {
        const run = await within(60_000, `the run against ${fault}`, tapConform([`${server.url}/${agentId}`]));
        expect(run.code).toBe(1);
        expect(run.report?.cases.map((c) => [c.id, c.verdict])).toEqual([[id, 'FAIL']]);
        expect(run.stderr).toContain(requirement);
        expect(run.stderr).toContain(`the case that checks it (${id})`);
      } finally {
        await within(10_000, `stopping the ${fault} agent`, stop());
      }
    },
  );

  describe('a frame forged into a signed session (bindings-nats#forged-frames)', () => {
    const key = { keyId: 'nats-forged', key: randomBytes(32).toString('base64url'), peer: 'tap-conform.hmac' };
    const only = ['integrity.nats.forged-frame'];

    it('the reference agent, holding the run key, passes it', { timeout: 60_000 }, async () => {
      const keyed = spawn(process.execPath, [AGENT, '--nats', server.url, '--agent-id', 'tap.keyed', '--grace-ms', '1000'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, TAP_HMAC_KEY_ID: key.keyId, TAP_HMAC_KEY: key.key, TAP_HMAC_PEER: key.peer },
      });
      try {
        const [keyedUrl] = (await once(createInterface({ input: keyed.stdout! }), 'line')) as [string];
        const report = await runConformance({ target: keyedUrl, only, timeoutMs: 5000, hmac: key });
        expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[only[0], 'PASS', expect.any(String)]]);
      } finally {
        keyed.kill('SIGKILL');
      }
    });

    it('fails an agent that numbers a frame before it checks the signature (seq-before-signature)', { timeout: 90_000 }, async () => {
      const agentId = 'tap.broken-seq-before-signature';
      const stop = await within(
        15_000,
        'starting the seq-before-signature agent',
        startBrokenNatsAgent(server.url, agentId, 'seq-before-signature', [{ key_id: key.keyId, key: key.key, peer: key.peer }]),
      );
      try {
        const report = await within(
          60_000,
          `the run of ${only[0]}`,
          runConformance({ target: `${server.url}/${agentId}`, only, timeoutMs: 2000, hmac: key }),
        );
        expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[only[0], 'FAIL', expect.any(String)]]);
      } finally {
        await within(10_000, 'stopping the seq-before-signature agent', stop());
      }
    });
  });

  it('stops a run when two processes answer for the agent id, and says so (bindings-nats#opening)', { timeout: 90_000 }, async () => {
    expect(await answeringProcesses(url, 5000)).toBe(1);
    const second = spawn(process.execPath, [AGENT, '--nats', server.url, '--grace-ms', '1000'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      await once(createInterface({ input: second.stdout! }), 'line');
      expect(await answeringProcesses(url, 5000)).toBe(2);
      const run = await tapConform([url]);
      expect(run.code).toBe(3);
      expect(run.report).toBeUndefined();
      expect(run.stderr).toContain(`tap-conform: two processes answer for tap.reference-agent on ${server.url}:`);
      expect(run.stderr).toContain('Stop all but one of them');
    } finally {
      const exited = once(second, 'exit');
      second.kill('SIGTERM');
      await exited;
    }
    // One process again: the run goes ahead.
    expect(await answeringProcesses(url, 5000)).toBe(1);
  });

  it('tap-reference-agent --nats exits 0 on SIGTERM (shutdown#signals)', async () => {
    const exited = once(agent, 'exit');
    agent.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  });
});
