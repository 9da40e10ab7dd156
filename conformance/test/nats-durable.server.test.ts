/**
 * tap-conform's nats-durable profile against a real nats-server: the reference agent with its
 * durable queues passes every case, with a short lease and with one long enough to wait on; an agent
 * that serves no durable queue leaves the profile UNIMPLEMENTED, also beside consumers that a
 * killed agent left; queues another agent serves and a lease over the bound are said to be what
 * they are, never FAILs. The broken durable agents are judged in nats-durable-broken.server.test.ts,
 * a file of its own so that another worker runs them beside these. The whole run against the bin
 * is also the run of one agent process that serves every case with a card of 8 tasks at once and a
 * run key: the suite keeps its load within that limit (shared-agent.testkit.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsServer,
  type NatsServer,
} from '../../reference/transports/nats/nats-server.testkit.ts';
import { takesSubject } from '../cases/nats-durable/durable-survey.ts';
import { LONGEST_LEASE_MS } from '../options.ts';
import { runConformance } from '../run.ts';
import { AGENT, ROOT, tapConform } from './bins.testkit.ts';
import {
  CLUSTER_IDS,
  CONSUMERS,
  DURABLE_IDS,
  LEASE_MS,
  MAX_DELIVER,
  passed,
  passedSigned,
  compared,
  SIGNED_IDS,
  signing,
  UNSIGNED_STORED,
} from './nats-durable.testkit.ts';
import { busyAnswers, expectWithinLimits, SHARED_LIMIT } from './shared-agent.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

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

/**
 * What one test starts — servers, agent processes, agents in this process — stopped in reverse
 * order when the test ends (`cleanups`, to which a test adds its own). Each test has a nats-server
 * of its own, so the tests of the file run at once: most of their time is a wait on a lease or a
 * redelivery.
 */
function kit(onTestFinished: (fn: () => Promise<void>) => void) {
  const cleanups: Array<() => Promise<unknown>> = [];
  const defer = (fn: () => Promise<unknown>): void => {
    cleanups.push(fn);
  };
  onTestFinished(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function server(): Promise<NatsServer> {
    const s = await startNatsServer();
    defer(() => s.stop());
    return s;
  }

  /**
   * A reference agent process, the compiled bin (vitest's global setup keeps dist/ current): its
   * URL, its stderr so far, and a stop (SIGTERM, or SIGKILL as an agent that dies).
   */
  async function reference(
    url: string,
    args: string[],
    o: { env?: NodeJS.ProcessEnv } = {},
  ): Promise<{ url: string; stderr: () => string; kill: (signal?: NodeJS.Signals) => Promise<void> }> {
    const agent: ChildProcess = spawn(process.execPath, [AGENT, '--nats', url, '--grace-ms', '1000', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...o.env },
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
    defer(kill);
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
    defer(async () => {
      await listener.close();
      await agent.shutdown();
    });
    return listener.url;
  }

  /** A reference agent whose durable runners hold a trust file (started with `args` besides), on a server of its own, and the harness's signing key. */
  async function signedReference(args: string[]): Promise<{ url: string; harnessKey: string }> {
    const s = await server();
    const k = signing('tap.reference-agent', cleanups);
    const agent = await reference(s.url, [...args, '--signing-key', k.agentKey, '--trust', k.trust]);
    return { url: agent.url, harnessKey: k.harnessKey };
  }

  return { cleanups, server, reference, sessionsOnly, signedReference };
}

describe.skipIf(lacks('nats-server'))(
  needing('nats-server', 'tap-conform nats-durable (spec: bindings-nats#certification)'),
  { concurrent: true },
  () => {
    const durableArgs = (leaseMs = LEASE_MS) => ['--durable', '--lease-ms', String(leaseMs), '--max-deliver', String(MAX_DELIVER)];

    it('certifies tap-reference-agent --nats --durable: every nats-durable case passes, and the run removes what its cases left, only that', {
      timeout: 90_000,
    }, async ({ onTestFinished }) => {
      const { cleanups, server, reference } = kit(onTestFinished);
      const s = await server();
      const agent = await reference(s.url, durableArgs());
      // What a user keeps on the same server: a queue of their own with its consumer and a record, a dead letter, a result.
      const nc = await connect({ servers: s.url });
      cleanups.push(() => nc.close());
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc);
      await jsm.consumers.add('TAP_TASKS', {
        durable_name: 'user-own',
        ack_policy: AckPolicy.Explicit,
        filter_subject: 'tap.tasks.user.thing',
      });
      await js.publish('tap.tasks.user.thing', '{"user":"record"}');
      await js.publish('tap.dead.user.thing', '{"user":"dead letter"}');
      await js.publish('tap.results.user-task', '{"user":"result"}');
      const lines: string[] = [];
      const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000, log: (l) => lines.push(l) });
      expect(report.cases.map((c) => compared(c, passed))).toEqual(DURABLE_IDS.map((id) => [id, passed(id), '']));
      // The run's records, their dead letters, results, task streams and idempotency keys are gone; the user's things stay.
      const subjects = async (stream: string): Promise<string[]> => {
        const info = await jsm.streams.info(stream, { subjects_filter: '>' });
        return Object.keys(info.state.subjects ?? {}).sort();
      };
      expect(await subjects('TAP_TASKS')).toEqual(['tap.tasks.user.thing']);
      expect(await subjects('TAP_DEAD')).toEqual(['tap.dead.user.thing']);
      expect(await subjects('TAP_RESULTS')).toEqual(['tap.results.user-task']);
      expect(await subjects('TAP_EVENTS')).toEqual([]);
      const keys: string[] = [];
      for await (const k of await (await new Kvm(nc).open('TAP_IDEMPOTENCY')).keys()) keys.push(k);
      expect(keys).toEqual([]);
      // The agent's consumers stay, and the run says why; the user's stays untouched.
      const consumers: string[] = [];
      for await (const c of jsm.consumers.list('TAP_TASKS')) consumers.push(c.name);
      expect(consumers.sort()).toEqual([...CONSUMERS, 'user-own'].sort());
      expect(lines.find((l) => l.startsWith('tap-conform: removed what the nats-durable cases left on the server: '))).toMatch(
        /dead letters.*; nothing else was touched$/,
      );
      expect(await subjects('TAP_ADVISORIES')).toEqual([]);
      // Nor does the run leave the consumers it read task streams through.
      const readers: string[] = [];
      for await (const c of jsm.consumers.list('TAP_EVENTS')) readers.push(c.name);
      expect(readers).toEqual([]);
      expect(lines.find((l) => l.includes('of TAP_TASKS and of TAP_ADVISORIES stay'))).toMatch(
        /^tap-conform: the consumers (tap-tap_test_\w+, )+.*of TAP_TASKS and of TAP_ADVISORIES stay: the agent's durable runners made them.*TAP-NATS-053, TAP-NATS-071/,
      );
      // Without --signing-key the signed-records cases say why they do not apply, and what to pass.
      for (const c of report.cases.filter((c) => SIGNED_IDS.includes(c.id)))
        expect(c.detail).toMatch(/hold no trust file: they ran tap-conform's unsigned records.*--trust <file>.*tap-conform --signing-key/);
    });

    // A lease of 8 s makes the lease case a wait of 20 s, past the 15 s after which a wait says how far
    // it is; the default 30 s lease is the same arithmetic over 75 s (conformance/cases/nats-durable).
    // The agent's card allows 8 tasks at once and it holds the run key (shared-agent.testkit.ts).
    it('certifies the bin with --durable and a lease worth waiting on, serving every case from one process with a card of 8 tasks at once: the lease case says what it waits for, and how far it is', {
      timeout: 180_000,
    }, async ({ onTestFinished }) => {
      const { cleanups, server, reference } = kit(onTestFinished);
      const s = await server();
      const key = { TAP_HMAC_KEY_ID: 'shared-key', TAP_HMAC_KEY: randomBytes(32).toString('base64url'), TAP_HMAC_PEER: 'tap-conform.hmac' };
      const agent = await reference(s.url, ['--durable', '--lease-ms', '8000', '--max-concurrent-tasks', String(SHARED_LIMIT)], {
        env: key,
      });
      const transcripts = mkdtempSync(join(tmpdir(), 'tap-durable-transcripts-'));
      cleanups.push(async () => rmSync(transcripts, { recursive: true, force: true }));
      const hmac = ['--hmac-key-id', key.TAP_HMAC_KEY_ID, `--hmac-key=${key.TAP_HMAC_KEY}`, '--hmac-peer', key.TAP_HMAC_PEER];
      const run = await tapConform([agent.url, '--transcripts', transcripts, ...hmac]);
      expectWithinLimits({ ...run, busy: busyAnswers(transcripts) });
      // The run key reached the agent: the integrity cases ran over NATS.
      expect(run.report?.cases.filter((c) => c.profile === 'integrity' && c.verdict === 'PASS').length).toBeGreaterThan(0);
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
      // Said every 15 s: a timer that a loaded machine may fire a second or more late.
      expect(run.stderr).toMatch(/tap-conform: nats-durable\.lease\.renewal: waited 1[5-9] s of about 20 s\n/);
    });

    it('leaves nats-durable UNIMPLEMENTED for an agent that serves no durable queue', { timeout: 60_000 }, async ({ onTestFinished }) => {
      const { server, sessionsOnly } = kit(onTestFinished);
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
    }, async ({ onTestFinished }) => {
      const { server, reference, sessionsOnly } = kit(onTestFinished);
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

    it('sets the lease of a restarted agent on the consumers it left, says so, and certifies with it', { timeout: 90_000 }, async ({
      onTestFinished,
    }) => {
      const { server, reference } = kit(onTestFinished);
      const s = await server();
      const first = await reference(s.url, durableArgs(LEASE_MS));
      await first.kill('SIGKILL');
      const again = await reference(s.url, durableArgs(3000));
      for (const name of CONSUMERS)
        expect(again.stderr()).toContain(
          `consumer ${name} of TAP_TASKS had ack_wait ${LEASE_MS} ms and max_deliver ${MAX_DELIVER} (left by an earlier runner); set to this runner's lease of 3000 ms`,
        );
      const report = await runConformance({ target: again.url, profiles: ['nats-durable'], timeoutMs: 5000 });
      expect(report.cases.map((c) => compared(c, passed))).toEqual(DURABLE_IDS.map((id) => [id, passed(id), '']));
      expect(report.cases.find((c) => c.id === 'nats-durable.lease.renewal')?.detail).toBe('delivered once over 7500 ms');
    });

    it('says that another agent serves the queues (ERROR), never FAILs the agent under test', { timeout: 90_000 }, async ({
      onTestFinished,
    }) => {
      const { server, reference, sessionsOnly } = kit(onTestFinished);
      const s = await server();
      await reference(s.url, durableArgs());
      const url = await sessionsOnly(s.url, 'tap.sessions-only');
      const report = await runConformance({ target: url, profiles: ['nats-durable'], timeoutMs: 2000 });
      expect(report.cases.map((c) => c.verdict)).toEqual(DURABLE_IDS.map(() => 'ERROR'));
      expect(report.cases[0]!.detail).toMatch(
        /^another agent serves the durable queues of this server: tap\.reference-agent ran the records tap-conform published to the queues of tap\.test\.echo, .*so these cases cannot judge tap\.sessions-only\. Stop tap\.reference-agent, or test tap\.sessions-only on a NATS server of its own$/,
      );
    });

    it('leaves the lease cases NOT-TESTED, with the reason, for a lease over the bound', { timeout: 60_000 }, async ({
      onTestFinished,
    }) => {
      const { server, reference } = kit(onTestFinished);
      const s = await server();
      const over = LONGEST_LEASE_MS + 1000;
      const agent = await reference(s.url, ['--durable', '--lease-ms', String(over)]);
      const report = await runConformance({
        target: agent.url,
        only: ['nats-durable.lease.renewal', 'nats-durable.lease.waiting', 'nats-durable.result.before-ack'],
        timeoutMs: 5000,
      });
      expect(report.cases.map((c) => [c.id, c.verdict])).toEqual([
        ['nats-durable.result.before-ack', 'PASS'],
        ['nats-durable.lease.renewal', 'NOT-TESTED'],
        ['nats-durable.lease.waiting', 'NOT-TESTED'],
      ]);
      const tooLong = (what: string) =>
        `the lease of tap.test.sleep is ${over / 1000} s (the ack_wait of consumer tap-tap_test_sleep), longer than the ${LONGEST_LEASE_MS / 1000} s this case waits out (${what}; see tap-conform --help): start the agent with a shorter lease to test it`;
      expect(report.cases.slice(1).map((c) => c.detail)).toEqual([
        tooLong('a task of 2.5 leases'),
        tooLong('a task waits more than a lease for a place'),
      ]);
    });

    it('certifies tap-reference-agent --durable with a trust file, run with --signing-key: every case passes, the unsigned stored result is skipped', {
      timeout: 90_000,
    }, async ({ onTestFinished }) => {
      const agent = await kit(onTestFinished).signedReference(durableArgs());
      const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000, signingKey: agent.harnessKey });
      const quietly = (id: string, verdict: string): boolean =>
        verdict === 'PASS' || UNSIGNED_STORED.includes(id) || CLUSTER_IDS.includes(id);
      expect(report.cases.map((c) => compared(c, passedSigned, quietly))).toEqual(DURABLE_IDS.map((id) => [id, passedSigned(id), '']));
      for (const id of UNSIGNED_STORED) expect(report.cases.find((c) => c.id === id)?.detail).toContain('TAP-NATS-039');
      expect(report.profiles['nats-durable']).toBe('PASS');
    });

    it('says what to pass when the agent takes only signed records and the run has no key: ERROR, never FAIL', {
      timeout: 90_000,
    }, async ({ onTestFinished }) => {
      const agent = await kit(onTestFinished).signedReference(durableArgs());
      const report = await runConformance({ target: agent.url, profiles: ['nats-durable'], timeoutMs: 5000 });
      expect(report.cases.map((c) => c.verdict)).toEqual(DURABLE_IDS.map(() => 'ERROR'));
      expect(report.cases[0]!.detail).toMatch(
        /^the agent's durable runners take only signed records: they dead-lettered tap-conform's unsigned probe of .* with INVALID_SIGNATURE\. Pass --signing-key with the key of a principal in their trust file$/,
      );
    });
  },
);
