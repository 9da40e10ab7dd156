/**
 * The NATS binding's permission model, shipped (spec: bindings-nats#security): tapctl nats
 * permissions writes the users of a deployment, nats-server runs with them, the reference agent
 * (sessions, registry entry, durable queues with a trust file) and a requester complete a session
 * task and a durable task, and every attack of "A mesh safe on a shared server" that needs a write
 * or a read the model forbids is refused by the server; forged records a requester may publish
 * are refused by the runner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../client/nats.ts';
import { replayDurableTask } from '../jetstream/events.ts';
import { DEFAULT_NAMES as N, deadSubject, eventSubject, resultSubject, taskSubject } from '../jetstream/names.ts';
import { signRecord } from '../jetstream/signatures.ts';
import { idempotencyKey, submitDurable } from '../jetstream/submit.ts';
import { openRegistry } from '../mesh/registry.ts';
import { readSigningKey, readTrustFile } from '../trust.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { jsApiSubject, kvSubject, maxDeliveriesAdvisory, subjectsOf, Wildcard } from '../transports/nats/subjects.ts';
import { natsClientOptions, parseNatsUrl } from '../transports/nats/url.ts';
import { recordFromDraft, type TaskRecord } from '../workspace/record.ts';
import { compiledScript } from '../../test/compiled.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { tapctl } from './tapctl.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const ROOT = resolve(new URL('.', import.meta.url).pathname, '../..');
const AGENT = 'tap.reference-agent';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('tapctl nats permissions: the command', () => {
  it('refuses a command line without principals, without --out, or with an id that is not one, saying what to do', async () => {
    const none = await tapctl('nats', 'permissions', '--out', '/tmp/x.conf');
    expect([none.code, none.err]).toEqual([2, expect.stringContaining('no principals: give at least one --agent')]);
    const noOut = await tapctl('nats', 'permissions', '--agent', 'a.b');
    expect([noOut.code, noOut.err]).toEqual([2, expect.stringContaining('missing --out <file>')]);
    const wild = await tapctl('nats', 'permissions', '--agent', 'a.>', '--out', '/tmp/x.conf');
    expect([wild.code, wild.err]).toEqual([2, expect.stringMatching(/"a\.>" is not a valid principal id/)]);
    const clash = await tapctl('nats', 'permissions', '--requester', 'a.b', '--requester', 'a_b', '--out', '/tmp/x.conf');
    expect([clash.code, clash.err]).toEqual([2, expect.stringContaining('would share the inbox prefix _INBOX_a_b')]);
    const help = await tapctl('nats', 'permissions', '--help');
    expect(help.out).toContain('Usage: tapctl nats permissions');
  });

  it("keeps the keys and passwords it wrote before when run again with one more principal, so that no one else's rotate", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-permissions-again-'));
    try {
      const out = join(dir, 'server.conf');
      expect((await tapctl('nats', 'permissions', '--agent', 'a.b', '--runner', 'a.b', '--requester', 'alice', '--out', out)).code).toBe(0);
      const before = readFileSync(join(dir, 'keys', 'credentials.json'), 'utf8');
      const key = readFileSync(join(dir, 'keys', 'alice.key.json'), 'utf8');
      const again = await tapctl(
        'nats',
        'permissions',
        '--agent',
        'a.b',
        '--runner',
        'a.b',
        '--requester',
        'alice',
        '--requester',
        'bob',
        '--out',
        out,
        '--json',
      );
      expect(again.code, again.err).toBe(0);
      const summary = JSON.parse(again.out) as { users: { user: string; new_key: boolean }[] };
      expect(summary.users.map((u) => [u.user, u.new_key])).toEqual([
        ['a.b', false],
        ['alice', false],
        ['bob', true],
      ]);
      expect(readFileSync(join(dir, 'keys', 'alice.key.json'), 'utf8')).toBe(key);
      const passwords = (text: string) => JSON.parse(text).principals as Record<string, { password: string }>;
      expect(passwords(readFileSync(join(dir, 'keys', 'credentials.json'), 'utf8')).alice).toEqual(passwords(before).alice);
      expect(Object.keys(readTrustFile(join(dir, 'keys', 'trust.json')).principals)).toEqual(['a.b', 'alice', 'bob']);
      // The requesters may open sessions with the agent of the deployment, and write nothing of the runners'.
      const conf = readFileSync(out, 'utf8');
      expect(conf).toContain('"tap.open.a.b", "tap.in.*.a.b"');
      const block = (user: string): string => conf.slice(conf.indexOf(`# ${user}:`)).split('} }')[0]!;
      expect(block('a.b')).toContain('"tap.events.>"');
      expect(block('alice')).not.toContain('"tap.events.>"');
      expect(block('alice')).not.toContain('$KV.TAP_IDEMPOTENCY');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(lacks('nats-server'))(
  needing('nats-server', 'the permission model on a nats-server (spec: bindings-nats#security)'),
  () => {
    let dir: string;
    let server: NatsServer;
    let agent: ChildProcess | undefined;
    let agentErr = '';
    const conns: NatsConnection[] = [];
    let creds: Record<string, { password: string; url: string }>;
    const keys = (id: string): string => join(dir, 'keys', `${id}.key.json`);

    /** A NATS connection of principal `id`, with its user and inbox prefix. */
    async function as(id: string): Promise<NatsConnection> {
      const nc = await connect(natsClientOptions(parseNatsUrl(creds[id]!.url)));
      conns.push(nc);
      return nc;
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tap-permissions-'));
      const conf = join(dir, 'server.conf');
      // The port is known only once the server runs: the URLs are made here from the passwords.
      const made = await tapctl(
        ...['nats', 'permissions', '--agent', AGENT, '--runner', AGENT, '--agent', 'tap.other-agent'],
        ...['--requester', 'alice', '--requester', 'mallory', '--operator', 'ops', '--out', conf],
      );
      expect(made.code, made.err).toBe(0);
      server = await startNatsServer({ config: readFileSync(conf, 'utf8') });
      const principals = JSON.parse(readFileSync(join(dir, 'keys', 'credentials.json'), 'utf8')).principals as Record<
        string,
        { password: string }
      >;
      creds = Object.fromEntries(
        Object.entries(principals).map(([id, c]) => [
          id,
          { password: c.password, url: `nats://${id}:${c.password}@127.0.0.1:${server.port}` },
        ]),
      );
      agent = spawn(
        process.execPath,
        [
          ...[compiledScript('reference/agents/reference-agent.ts'), '--nats', creds[AGENT]!.url, '--mesh', creds[AGENT]!.url],
          ...[
            '--durable',
            '--lease-ms',
            '2000',
            '--max-deliver',
            '2',
            '--signing-key',
            keys(AGENT),
            '--trust',
            join(dir, 'keys', 'trust.json'),
          ],
          '--grace-ms',
          '500',
        ],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      agent.stderr!.on('data', (d) => (agentErr += d));
      const ready = once(createInterface({ input: agent.stdout! }), 'line');
      const exited = once(agent, 'exit').then(() => {
        throw new Error(`the agent exited under the generated permissions:\n${agentErr}`);
      });
      await Promise.race([ready, exited]);
    });

    afterAll(async () => {
      for (const nc of conns) await nc.close().catch(() => {});
      if (agent && agent.exitCode === null && agent.signalCode === null) {
        const exited = once(agent, 'exit');
        agent.kill('SIGTERM');
        await exited;
      }
      await server?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('writes the configuration, the passwords and the keys for their owner only, and the trust file of every principal', () => {
      expect(statSync(join(dir, 'server.conf')).mode & 0o077).toBe(0);
      expect(statSync(join(dir, 'keys', 'credentials.json')).mode & 0o077).toBe(0);
      expect(statSync(keys('alice')).mode & 0o077).toBe(0);
      expect(Object.keys(readTrustFile(join(dir, 'keys', 'trust.json')).principals).sort()).toEqual(
        ['alice', 'mallory', 'ops', 'tap.other-agent', AGENT].sort(),
      );
    });

    it('lets the agent and a requester complete a session task, a signed durable task, its replay and the registry read', async () => {
      const client = await connectNats(`${creds.alice!.url}/${AGENT}`, { agentId: 'alice' });
      try {
        expect(await client.submit('tap.test.echo', { over: 'a session' }).result).toEqual({
          status: 'completed',
          output: { over: 'a session' },
        });
      } finally {
        await client.close();
      }
      const submitted = await tapctl(
        ...['nats', 'submit', 'tap.test.echo', '{"over":"the queue"}', '--server', creds.alice!.url, '--signing-key', keys('alice')],
        ...['--idempotency-key', 'order-1', '--wait', '--timeout', '15000', '--json'],
      );
      expect(submitted.code, submitted.err + agentErr).toBe(0);
      const done = JSON.parse(submitted.out) as { task_id: string; status: string; output: unknown };
      expect([done.status, done.output]).toEqual(['completed', { over: 'the queue' }]);
      const alice = await as('alice');
      const trust = readTrustFile(join(dir, 'keys', 'trust.json'));
      const stream = await replayDurableTask(alice, { taskId: done.task_id, signedBy: { trust, runners: [AGENT] }, timeoutMs: 5000 });
      expect(stream.map((s) => s.message.type)).toEqual(['task.event', 'task.result']);
      const entry = await (await openRegistry(alice, { create: false })).get(AGENT);
      expect(entry?.entry.agent_id).toBe(AGENT);
    });

    /** Resolves with the server's refusal of a publish by `nc` to `subject` (a request, so that the refusal comes back to it). */
    async function refusedPublish(nc: NatsConnection, subject: string): Promise<string> {
      return nc.request(subject, 'forged', { timeout: 3000 }).then(
        () => `answered: ${subject}`,
        (err: Error) => err.message,
      );
    }
    /** Resolves with the server's refusal of a subscription. */
    async function refusedSubscribe(nc: NatsConnection, subject: string): Promise<string> {
      const sub = nc.subscribe(subject);
      const closed = sub.closed.then((err) => (err as Error | undefined)?.message ?? 'closed without error');
      await nc.flush();
      return Promise.race([closed, sleep(3000).then(() => `subscribed: ${subject}`)]);
    }

    it("refuses, at the server, every write of a requester or another agent that the model forbids (durable-forgery's planted result, registry takeover, key claims)", async () => {
      const mallory = await as('mallory');
      const other = await as('tap.other-agent');
      const writes: Array<[NatsConnection, string]> = [
        // A task.result planted before the task runs, a finished record, a dead letter.
        [mallory, eventSubject(N, 'pay-1')],
        [mallory, resultSubject(N, 'pay-1')],
        [mallory, deadSubject(N, 'tap.test.echo')],
        // Alice's idempotency key claimed in the bucket itself.
        [mallory, kvSubject(N.idempotency, idempotencyKey('alice', 'tap.test.echo', 'order-77'))],
        // Another agent's registry entry, by a requester and by another agent.
        [mallory, kvSubject('TAP_REGISTRY', AGENT)],
        [other, kvSubject('TAP_REGISTRY', AGENT)],
        // Frames as the agent, and a forged max-deliveries advisory.
        [other, subjectsOf(N.prefix, AGENT, 'c1').toRequester],
        [mallory, maxDeliveriesAdvisory(N.tasks, 'tap-tap_test_echo')],
        // The queue's and the streams' administration.
        [mallory, jsApiSubject('STREAM.PURGE', N.tasks)],
        [mallory, jsApiSubject('STREAM.DELETE', N.events)],
        [mallory, jsApiSubject('STREAM.MSG.DELETE', N.tasks)],
        [mallory, jsApiSubject('CONSUMER.DELETE', N.tasks, { token: 'tap-tap_test_echo', what: 'consumer' })],
        [mallory, jsApiSubject('STREAM.UPDATE', N.results)],
      ];
      for (const [nc, subject] of writes) expect(await refusedPublish(nc, subject), subject).toMatch(/Permissions Violation for Publish/);
    });

    it("refuses, at the server, every read a role may not make: the queue, the deliveries, another user's inbox, an agent's inbound frames", async () => {
      const mallory = await as('mallory');
      const other = await as('tap.other-agent');
      expect(await refusedPublish(mallory, jsApiSubject('STREAM.MSG.GET', N.tasks))).toMatch(/Permissions Violation/);
      expect(
        await refusedPublish(mallory, jsApiSubject('CONSUMER.MSG.NEXT', N.tasks, { token: 'tap-tap_test_echo', what: 'consumer' })),
      ).toMatch(/Permissions Violation/);
      expect(await refusedSubscribe(mallory, '_INBOX_alice.>')).toMatch(/Permissions Violation for Subscription/);
      expect(await refusedSubscribe(mallory, '_INBOX_tap_reference-agent.>')).toMatch(/Permissions Violation for Subscription/);
      expect(await refusedSubscribe(mallory, subjectsOf(N.prefix, AGENT, Wildcard.TOKEN).toAgent)).toMatch(
        /Permissions Violation for Subscription/,
      );
      expect(await refusedSubscribe(other, subjectsOf(N.prefix, AGENT, Wildcard.TOKEN).open)).toMatch(
        /Permissions Violation for Subscription/,
      );
      expect(await refusedSubscribe(mallory, maxDeliveriesAdvisory(N.tasks, Wildcard.TOKEN))).toMatch(
        /Permissions Violation for Subscription/,
      );
    });

    it("dead-letters the records a requester may publish but not forge: unsigned, or claiming alice's key; alice's own then runs", async () => {
      const mallory = await as('mallory');
      const ops = await as('ops');
      const opsJsm = await jetstreamManager(ops);
      const mark = (await opsJsm.streams.info(N.dead)).state.last_seq;
      const claim = signRecord(
        recordFromDraft({
          next_phase: 'tap.test.echo',
          input: 'ATTACKER-CHOSEN',
          metadata: { 'x-idempotency': { principal: 'alice', key: 'order-77' } },
        }) as TaskRecord,
        readSigningKey(keys('mallory')),
      );
      await jetstream(mallory).publish(taskSubject(N, 'tap.test.echo'), JSON.stringify(claim), { msgID: 'alice:tap.test.echo:order-77' });
      await submitDurable(mallory, { next_phase: 'tap.test.echo', input: 'unsigned' });
      const alice = await as('alice');
      const mine = await submitDurable(
        alice,
        { next_phase: 'tap.test.echo', input: 'alice real work' },
        { idempotency: { key: 'order-77' }, signingKey: readSigningKey(keys('alice')) },
      );
      const aliceJsm = await jetstreamManager(alice);
      const deadline = Date.now() + 15_000;
      let done: TaskRecord | undefined;
      while (!done && Date.now() < deadline) {
        done = (await aliceJsm.streams.getMessage(N.results, { last_by_subj: resultSubject(N, mine.record.task_id) }))?.json<TaskRecord>();
        if (!done) await sleep(50);
      }
      expect([done?.state.status, done?.context.history.at(-1)?.output]).toEqual(['completed', 'alice real work']);
      const dead: string[] = [];
      const info = await opsJsm.streams.info(N.dead);
      for (let seq = mark + 1; seq <= info.state.last_seq; seq++) {
        const m = await opsJsm.streams.getMessage(N.dead, { seq }).catch(() => null);
        if (m) dead.push(m.json<TaskRecord>().state.last_error!.code);
      }
      expect(dead.sort()).toEqual(['IDENTITY_MISMATCH', 'INVALID_SIGNATURE']);
    });
  },
);
