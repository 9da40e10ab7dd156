/**
 * tap-conform's nats-durable profile against a real nats-server: the reference agent with its
 * durable queues passes every case, with a short lease and with one long enough to wait on; an agent
 * that serves no durable queue leaves the profile UNIMPLEMENTED, also beside consumers that a
 * killed agent left; queues another agent serves and a lease over the bound are said to be what
 * they are, never FAILs; and each broken durable agent fails the case of its rule and no other.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it, type TestContext } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsServer,
  type NatsServer,
} from '../../reference/transports/nats/nats-server.testkit.ts';
import { takesSubject } from '../cases/nats-durable/durable-survey.ts';
import { natsDurableCases } from '../cases/nats-durable/index.ts';
import { newSigningKey, trustOf } from '../../reference/trust.ts';
import { LONGEST_LEASE_MS } from '../options.ts';
import { runConformance } from '../run.ts';
import { AGENT, ROOT, tapConform } from './bins.testkit.ts';
import { startBrokenDurableAgent, type DurableFault } from './nats-durable-broken.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** A short lease and few deliveries keep every case under a few seconds. */
const LEASE_MS = 400;
const MAX_DELIVER = 3;
/**
 * The lease of the broken agents, whose runs go four at a time: at 400 ms a loaded machine let
 * leases lapse while an agent that renews them waited for the CPU, and a redelivery failed cases
 * the break has nothing to do with. Their lease case waits 2.5 leases: it runs only for the
 * agent that never renews.
 */
const BROKEN_LEASE_MS = 2000;
const DURABLE_IDS = natsDurableCases.map((c) => c.id);
/** The cases of signed records: UNIMPLEMENTED in a run without --signing-key. */
const SIGNED_IDS = ['nats-durable.signed.refused', 'nats-durable.signed.stored-result'];
/** The cases of a cluster (TAP-NATS-070): SKIPPED on the single server of these runs. */
const CLUSTER_IDS = ['nats-durable.queue.replicas'];
/** What a run without a signing key gives a case the agent passes. */
const passed = (id: string): string => (SIGNED_IDS.includes(id) ? 'UNIMPLEMENTED' : CLUSTER_IDS.includes(id) ? 'SKIPPED' : 'PASS');
/** Whether a case's detail is left out of the comparison: a pass, or a verdict these runs give whatever the agent does. */
const quiet = (id: string, verdict: string): boolean => verdict === 'PASS' || SIGNED_IDS.includes(id) || CLUSTER_IDS.includes(id);
const CONSUMERS = ['echo', 'stream', 'sleep', 'fail', 'counter'].map((c) => `tap-tap_test_${c}`);

describe('the subjects a consumer filter takes', () => {
  it('matches tokens, * for one token and > for the rest', () => {
    expect(takesSubject('tap.tasks.tap.test.echo', 'tap.tasks.tap.test.echo')).toBe(true);
    expect(takesSubject('tap.tasks.>', 'tap.tasks.tap.test.echo')).toBe(true);
    expect(takesSubject('tap.tasks.*.test.echo', 'tap.tasks.tap.test.echo')).toBe(true);
    expect(takesSubject('tap.tasks.tap.test.sleep', 'tap.tasks.tap.test.echo')).toBe(false);
    expect(takesSubject('tap.tasks.tap.test', 'tap.tasks.tap.test.echo')).toBe(false);
    expect(takesSubject('tap.tasks.tap.test.echo.>', 'tap.tasks.tap.test.echo')).toBe(false);
  });
});

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

  /**
   * A server of its own for a broken agent's test, which runs beside the others (it.concurrent):
   * what it starts is stopped when that test finishes, not by the afterEach of the file.
   */
  async function brokenServer(t: TestContext): Promise<NatsServer & { cleanups: Array<() => Promise<unknown>> }> {
    const s = await startNatsServer();
    const own: Array<() => Promise<unknown>> = [() => s.stop()];
    t.onTestFinished(async () => {
      for (const c of own.splice(0).reverse()) await c().catch(() => {});
    });
    return Object.assign(s, { cleanups: own });
  }

  /** A reference agent process: its URL, its stderr so far, and a stop (SIGTERM, or SIGKILL as an agent that dies). */
  async function reference(
    url: string,
    args: string[],
    o: { bin?: boolean } = {},
  ): Promise<{ url: string; stderr: () => string; kill: (signal?: NodeJS.Signals) => Promise<void> }> {
    const program = o.bin ? [AGENT] : ['--import', 'tsx', 'reference/agents/reference-agent.ts'];
    const agent: ChildProcess = spawn(process.execPath, [...program, '--nats', url, '--grace-ms', '1000', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    agent.stderr!.on('data', (d) => (stderr += d));
    const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (agent.exitCode !== null || agent.signalCode !== null) return;
      const exited = once(agent, 'exit');
      agent.kill(signal);
      await exited;
    };
    cleanups.push(kill);
    const [line] = (await once(createInterface({ input: agent.stdout! }), 'line')) as [string];
    return { url: line, stderr: () => stderr, kill };
  }

  /** An agent of the reference runtime over NATS without durable queues. */
  async function sessionsOnly(url: string, agentId: string): Promise<string> {
    const agent = createAgent({
      card: {
        agent_id: agentId,
        name: 'sessions only',
        description: 'The reference runtime over NATS without durable queues.',
        capabilities: [],
        limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
      },
      capabilities: withConformanceCapabilities(),
      logger: () => {},
    });
    const listener = await agent.listenNats({ url });
    cleanups.push(async () => {
      await listener.close();
      await agent.shutdown();
    });
    return listener.url;
  }

  const durableArgs = (leaseMs = LEASE_MS) => ['--durable', '--lease-ms', String(leaseMs), '--max-deliver', String(MAX_DELIVER)];

  it('certifies tap-reference-agent --nats --durable: every nats-durable case passes', { timeout: 90_000 }, async () => {
    const s = await server();
    const agent = await reference(s.url, durableArgs());
    const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000 });
    expect(report.cases.map((c) => [c.id, c.verdict, quiet(c.id, c.verdict) ? '' : c.detail])).toEqual(
      DURABLE_IDS.map((id) => [id, passed(id), '']),
    );
    // Without --signing-key the signed-records cases say why they do not apply, and what to pass.
    for (const c of report.cases.filter((c) => SIGNED_IDS.includes(c.id)))
      expect(c.detail).toMatch(/hold no trust file \(they ran tap-conform's unsigned records\).*--trust <file>.*tap-conform --signing-key/);
  });

  // A lease of 8 s makes the lease case a wait of 20 s, past the 15 s after which a wait says how far
  // it is; the default 30 s lease is the same arithmetic over 75 s (conformance/cases/nats-durable).
  it('certifies the bin with --durable and a lease worth waiting on: the lease case says what it waits for, and how far it is', {
    timeout: 120_000,
  }, async () => {
    const s = await server();
    const agent = await reference(s.url, ['--durable', '--lease-ms', '8000'], { bin: true });
    const run = await tapConform([agent.url]);
    const bad = run.report?.cases.filter((c) => c.verdict === 'FAIL' || c.verdict === 'ERROR' || c.verdict === 'NOT-TESTED');
    expect(bad?.map((c) => `${c.id}: ${c.verdict} ${c.detail}`)).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.report?.certified).toBe(true);
    expect(run.report?.profiles['nats-durable']).toBe('PASS');
    expect(run.report?.level).not.toContain('durable queues');
    // 2.5 leases of 8 s, delivered once: the lease was renewed all the way, and the wait said how far it was.
    expect(run.report?.cases.find((c) => c.id === 'nats-durable.lease.renewal')?.detail).toBe('delivered once over 20000 ms');
    expect(run.stderr).toContain(
      'tap-conform: nats-durable.lease.renewal: a task of 20 s outlives the lease of tap.test.sleep (ack_wait 8 s) twice; waiting about 20 s\n',
    );
    expect(run.stderr).toContain('tap-conform: nats-durable.lease.renewal: waited 15 s of about 20 s\n');
  });

  it('leaves nats-durable UNIMPLEMENTED for an agent that serves no durable queue', { timeout: 60_000 }, async () => {
    const s = await server();
    const url = await sessionsOnly(s.url, 'tap.sessions-only');
    const report = await runConformance({ target: url, profiles: ['nats-durable'], timeoutMs: 2000 });
    expect(new Set(report.cases.map((c) => c.verdict))).toEqual(new Set(['UNIMPLEMENTED']));
    expect(report.profiles['nats-durable']).toBe('UNIMPLEMENTED');
    expect(report.cases[0]?.detail).toBe(
      'the agent serves no durable queue: the NATS server has no stream TAP_TASKS (an agent built on runAgent, such as tap-reference-agent, serves its capabilities on durable queues when started with --durable)',
    );
  });

  it('judges a fresh agent by none of the consumers a killed agent left: UNIMPLEMENTED, and they are named', {
    timeout: 90_000,
  }, async () => {
    const s = await server();
    const killed = await reference(s.url, durableArgs());
    await killed.kill('SIGKILL');
    const url = await sessionsOnly(s.url, 'tap.reference-agent');
    const report = await runConformance({ target: url, profiles: ['nats-durable'], timeoutMs: 2000 });
    expect(report.cases.map((c) => c.verdict)).toEqual(DURABLE_IDS.map(() => 'UNIMPLEMENTED'));
    const detail = report.cases[0]!.detail;
    expect(detail).toMatch(/^the agent serves no durable queue: no one pulls from the 5 consumers of TAP_TASKS/);
    for (const name of CONSUMERS) expect(detail).toContain(name);
    expect(detail).toContain('left by an agent that is gone');
  });

  it('sets the lease of a restarted agent on the consumers it left, says so, and certifies with it', { timeout: 90_000 }, async () => {
    const s = await server();
    const first = await reference(s.url, durableArgs(LEASE_MS));
    await first.kill('SIGKILL');
    const again = await reference(s.url, durableArgs(3000));
    for (const name of CONSUMERS)
      expect(again.stderr()).toContain(
        `consumer ${name} of TAP_TASKS had ack_wait ${LEASE_MS} ms and max_deliver ${MAX_DELIVER} (left by an earlier runner); set to this runner's lease of 3000 ms`,
      );
    const report = await runConformance({ target: again.url, profiles: ['nats-durable'], timeoutMs: 5000 });
    expect(report.cases.map((c) => [c.id, c.verdict, quiet(c.id, c.verdict) ? '' : c.detail])).toEqual(
      DURABLE_IDS.map((id) => [id, passed(id), '']),
    );
    expect(report.cases.find((c) => c.id === 'nats-durable.lease.renewal')?.detail).toBe('delivered once over 7500 ms');
  });

  it('says that another agent serves the queues (ERROR), never FAILs the agent under test', { timeout: 90_000 }, async () => {
    const s = await server();
    await reference(s.url, durableArgs());
    const url = await sessionsOnly(s.url, 'tap.sessions-only');
    const report = await runConformance({ target: url, profiles: ['nats-durable'], timeoutMs: 2000 });
    expect(report.cases.map((c) => c.verdict)).toEqual(DURABLE_IDS.map(() => 'ERROR'));
    expect(report.cases[0]!.detail).toMatch(
      /^another agent serves the durable queues of this server: tap\.reference-agent ran the records tap-conform published to the queues of tap\.test\.echo, .*so these cases cannot judge tap\.sessions-only\. Stop tap\.reference-agent, or test tap\.sessions-only on a NATS server of its own$/,
    );
  });

  it('leaves the lease case NOT-TESTED, with the reason, for a lease over the bound', { timeout: 60_000 }, async () => {
    const s = await server();
    const over = LONGEST_LEASE_MS + 1000;
    const agent = await reference(s.url, ['--durable', '--lease-ms', String(over)]);
    const report = await runConformance({
      target: agent.url,
      only: ['nats-durable.lease.renewal', 'nats-durable.result.before-ack'],
      timeoutMs: 5000,
    });
    expect(report.cases.map((c) => [c.id, c.verdict])).toEqual([
      ['nats-durable.result.before-ack', 'PASS'],
      ['nats-durable.lease.renewal', 'NOT-TESTED'],
    ]);
    expect(report.cases[1]!.detail).toBe(
      `the lease of tap.test.sleep is ${over / 1000} s (the ack_wait of consumer tap-tap_test_sleep), longer than the ${LONGEST_LEASE_MS / 1000} s this case waits out (a task of 2.5 leases; see tap-conform --help): start the agent with a shorter lease to test its renewal`,
    );
  });

  it.concurrent.for<[DurableFault, string, RegExp, string[]?]>([
    ['no-renewal', 'nats-durable.lease.renewal', /delivered [2-9] times .* the lease was not renewed/],
    ['attempt-zero', 'nats-durable.attempts.delivery-count', /delivery 2 ran with Tap-Attempt 0/],
    ['no-idempotency', 'nats-durable.idempotency.repeat', /TAP_IDEMPOTENCY does not hold the first task/],
    ['no-dead-letters', 'nats-durable.dead-letter', /was not in TAP_DEAD after 3 failed deliveries/],
    // A phase run again finishes with its own attempt and output, not the stored result's: the attempts and fence cases fail too.
    [
      'runs-again',
      'nats-durable.result.stored-result',
      /the phase ran again/,
      ['nats-durable.result.attempts', 'nats-durable.stream.fence'],
    ],
    // Another phase's record on the queue is run, not dead-lettered: there is no dead letter to name.
    [
      'no-record-check',
      'nats-durable.record.invalid',
      /was finished: its task_id widened a lookup, or it ran/,
      ['nats-durable.dead-letter.msg-id'],
    ],
    ['no-trace', 'nats-durable.stream.trace', /do not carry the trace_id and span_id of the record's metadata/],
    ['idempotency-expires', 'nats-durable.queue.streams', /TAP_IDEMPOTENCY removes keys after 3600000 ms/],
    ['other-consumer-name', 'nats-durable.queue.consumer', /through the consumer runner-tap-test-echo/],
    ['attempts-reset', 'nats-durable.result.attempts', /not the attempts of the delivery that finished the phase/],
    ['json-idempotency-value', 'nats-durable.idempotency.repeat', /TAP_IDEMPOTENCY does not hold the first task/],
    ['runs-any-target', 'nats-durable.queue.target-agent', /ran a record whose requirements.target_agent is/],
    ['dead-msg-id', 'nats-durable.dead-letter.msg-id', /Nats-Msg-Id is not <task_id>:dead:<its stream sequence/],
    // A task.accepted first also makes the replayed stream one message longer, and takes the sequence the fence case plants.
    [
      'accepted-first',
      'nats-durable.stream.no-accepted',
      /holds a task.accepted/,
      ['nats-durable.resume.replay', 'nats-durable.stream.fence'],
    ],
    ['no-fence', 'nats-durable.stream.fence', /the fenced delivery went on and finished the task with its own output/],
    ['ack-then-publish', 'nats-durable.result.before-ack', /acknowledged the delivery before it published the finished record/],
  ])('fails the broken durable agent %s in %s, and only there', { timeout: 90_000 }, async ([fault, id, reason, also = []], t) => {
    const s = await brokenServer(t);
    const agentId = `tap.broken-durable-${fault}`;
    s.cleanups.push(await startBrokenDurableAgent(s.url, agentId, fault, { leaseMs: BROKEN_LEASE_MS, maxDeliver: MAX_DELIVER }));
    // The lease case is left out of the breaks that are not about leases: it waits 2.5 leases.
    const skip = fault === 'no-renewal' ? [] : ['nats-durable.lease.renewal'];
    const report = await runConformance({ target: `${s.url}/${agentId}`, profiles: ['nats-durable'], timeoutMs: 5000, skip });
    const verdicts = Object.fromEntries(report.cases.map((c) => [c.id, c.verdict]));
    const judged = DURABLE_IDS.filter((c) => !skip.includes(c));
    // The cases a break can also fail (listed with it) fail or pass as the timing of the run has it; every other case passes.
    const seen = Object.fromEntries(judged.map((c) => [c, also.includes(c) && verdicts[c] === 'PASS' ? 'FAIL' : verdicts[c]]));
    expect(seen).toEqual(Object.fromEntries(judged.map((c) => [c, c === id || also.includes(c) ? 'FAIL' : passed(c)])));
    expect(report.cases.find((c) => c.id === id)?.detail).toMatch(reason);
  });

  /** The keys of a signed deployment in a fresh folder: the agent's, the harness's, and the trust file of both. */
  function signing(agentId: string, stops = cleanups) {
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
  const UNSIGNED_STORED = ['nats-durable.result.stored-result', 'nats-durable.result.attempts', 'nats-durable.stream.fence'];
  const passedSigned = (id: string): string => (UNSIGNED_STORED.includes(id) || CLUSTER_IDS.includes(id) ? 'SKIPPED' : 'PASS');

  it('certifies tap-reference-agent --durable with a trust file, run with --signing-key: every case passes, the unsigned stored result is skipped', {
    timeout: 90_000,
  }, async () => {
    const s = await server();
    const k = signing('tap.reference-agent');
    const agent = await reference(s.url, [...durableArgs(), '--signing-key', k.agentKey, '--trust', k.trust]);
    const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000, signingKey: k.harnessKey });
    expect(
      report.cases.map((c) => [
        c.id,
        c.verdict,
        c.verdict === 'PASS' || UNSIGNED_STORED.includes(c.id) || CLUSTER_IDS.includes(c.id) ? '' : c.detail,
      ]),
    ).toEqual(DURABLE_IDS.map((id) => [id, passedSigned(id), '']));
    for (const id of UNSIGNED_STORED) expect(report.cases.find((c) => c.id === id)?.detail).toContain('TAP-NATS-039');
    expect(report.profiles['nats-durable']).toBe('PASS');
  });

  it('says what to pass when the agent takes only signed records and the run has no key: ERROR, never FAIL', {
    timeout: 90_000,
  }, async () => {
    const s = await server();
    const k = signing('tap.reference-agent');
    const agent = await reference(s.url, [...durableArgs(), '--signing-key', k.agentKey, '--trust', k.trust]);
    const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000 });
    expect(report.cases.map((c) => c.verdict)).toEqual(DURABLE_IDS.map(() => 'ERROR'));
    expect(report.cases[0]!.detail).toMatch(
      /^the agent's durable runners take only signed records: they dead-lettered tap-conform's unsigned probe of .* with INVALID_SIGNATURE\. Pass --signing-key with the key of a principal in their trust file$/,
    );
  });

  it.concurrent.for<[DurableFault, string, RegExp]>([
    ['no-signature-check', 'nats-durable.signed.refused', /not dead-lettered with its reason: an unsigned record; a record altered/],
    ['trusts-stored-results', 'nats-durable.signed.stored-result', /a task\.result no runner signed decided the outcome/],
  ])('fails the broken signed durable agent %s in %s, and only there', { timeout: 90_000 }, async ([fault, id, reason], t) => {
    const s = await brokenServer(t);
    const agentId = `tap.broken-durable-${fault}`;
    const k = signing(agentId, s.cleanups);
    s.cleanups.push(
      await startBrokenDurableAgent(s.url, agentId, fault, { leaseMs: BROKEN_LEASE_MS, maxDeliver: MAX_DELIVER, signing: k.signing }),
    );
    const report = await runConformance({
      target: `${s.url}/${agentId}`,
      profiles: ['nats-durable'],
      timeoutMs: 5000,
      signingKey: k.harnessKey,
    });
    const verdicts = Object.fromEntries(report.cases.map((c) => [c.id, c.verdict]));
    expect(verdicts).toEqual(Object.fromEntries(DURABLE_IDS.map((c) => [c, c === id ? 'FAIL' : passedSigned(c)])));
    expect(report.cases.find((c) => c.id === id)?.detail).toMatch(reason);
  });
});
