/**
 * tapctl nats status|tasks|dead-letters|requeue|submit against a real nats-server, for people
 * and with --json; the errors for an unreachable server, a server without JetStream, a missing
 * stream and an unknown id; the commands from dist/, and the other commands without the NATS client.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { crashWhileHolding, strayPull } from '../jetstream/crash.testkit.ts';
import { startDurableRunner, type DurableRunnerOptions } from '../jetstream/runner.ts';
import { freePort } from '../transports/free-port.testkit.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { HERE } from '../workspace/workspace.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { tapctl } from './tapctl.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);
const BIN = resolve(HERE, '../../bin/tapctl.mjs');
const run = promisify(execFile);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// biome-ignore lint/suspicious/noExplicitAny: the JSON documents are checked member by member
// A poll here runs a tapctl command, which connects to the server afresh, and a redelivery waits
// out a lease: on a loaded machine (npm test runs three files and the certification at once) five
// seconds were too few.
async function until<T>(what: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms`);
    await sleep(50);
  }
}

describe('the NATS client library is loaded only by the nats commands', () => {
  it('runs tapctl from dist/ with the NATS client made unloadable: other commands and nats --help still work', async () => {
    // The client is CommonJS, loaded by require on first use: the block covers require and import alike.
    const hook = `export async function resolve(s, c, next) { if (s.startsWith('@nats-io/')) throw new Error('loaded ' + s); return next(s, c); }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const dir = mkdtempSync(join(tmpdir(), 'tap-no-nats-'));
    const block = join(dir, 'block-nats.cjs');
    writeFileSync(
      block,
      "const M = require('node:module'); const r = M._resolveFilename; M._resolveFilename = function (s, ...a) { if (s.startsWith('@nats-io/')) throw new Error('loaded ' + s); return r.call(this, s, ...a); };\n",
    );
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const args = ['--require', block, '--import', `data:text/javascript,${encodeURIComponent(register)}`, BIN];
    const [help, nats, status] = await Promise.all([
      run(process.execPath, [...args, 'workspace', '--help']),
      run(process.execPath, [...args, 'nats', '--help']),
      // The hook does bite: a nats command that connects needs the library.
      run(process.execPath, [...args, 'nats', 'status']).catch((e: { code: number; stderr: string }) => e),
    ]);
    expect(help.stdout).toContain('Usage: tapctl workspace');
    expect(nats.stdout).toContain('Usage: tapctl nats');
    expect(nats.stdout).toContain('dead-letters');
    expect((status as { stderr: string }).stderr).toContain('loaded @nats-io/');
  });
});

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tapctl nats against a real nats-server'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const stops: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
  });
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => {});
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });
  const runner = async (o: Partial<DurableRunnerOptions> & Pick<DurableRunnerOptions, 'capability' | 'handler'>, conn = nc) => {
    const r = await startDurableRunner({ nc: conn, agentId: 'tap.ops-test', leaseMs: 400, ...o });
    stops.push(() => r.stop());
    return r;
  };

  it('says which stream is missing before any runner made them, and status lists them as missing', async () => {
    const tasks = await tapctl('nats', 'tasks', '--server', server.url);
    expect(tasks.code).toBe(1);
    expect(tasks.err).toContain('stream TAP_TASKS does not exist on this server');
    expect(tasks.err).toContain(`where: ${server.url}`);
    const json = await tapctl('nats', 'dead-letters', '--json', '-s', server.url);
    expect(json.json().error.code).toBe('STREAM_MISSING');
    const status = await tapctl('nats', 'status', '--json', '--nats', server.url);
    expect(status.code).toBe(0);
    expect(status.json().server).toMatchObject({ url: server.url, name: 'tap-test' });
    expect(status.json().streams.map((s: { name: string; exists: boolean }) => [s.name, s.exists])).toEqual([
      ['TAP_TASKS', false],
      ['TAP_RESULTS', false],
      ['TAP_DEAD', false],
      ['TAP_EVENTS', false],
      ['KV_TAP_IDEMPOTENCY', false],
      ['TAP_ADVISORIES', false],
    ]);
    const submit = await tapctl('nats', 'submit', 'work.x', '{}', '--server', server.url);
    expect(submit.code).toBe(1);
    expect(submit.err).toContain('--create-streams');
  });

  it('submits a task, waits for its result, and reports it for people and as JSON', async () => {
    await runner({ capability: 'ops.echo', handler: async ({ record }) => ({ echoed: record.context.current_input }) });
    const human = await tapctl('nats', 'submit', 'ops.echo', '{"n":1}', '--wait', '--server', server.url);
    expect(human.code).toBe(0);
    expect(human.err).toMatch(/Queued task-\d{8}-[0-9a-f]{12} for ops\.echo/);
    // The text gives state.attempts as the JSON does, with what it counts (TAP-NATS-019, TAP-NATS-054).
    expect(human.out).toMatch(/completed by tap\.ops-test with attempts 0 \(no earlier delivery\): \{"echoed":\{"n":1\}\}/);
    expect(human.out).not.toMatch(/attempt 1/);
    const json = await tapctl('nats', 'submit', 'ops.echo', '"text"', '--wait', '--json', '--server', server.url);
    expect(json.json()).toMatchObject({ status: 'completed', attempts: 0, output: { echoed: 'text' }, duplicate: false });
    const bad = await tapctl('nats', 'submit', 'ops.echo', '{oops', '--server', server.url);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('<input-json> is not JSON');
  });

  it('submits once per idempotency key: a repeat queues nothing and waits for the task that holds the key', async () => {
    let runs = 0;
    await runner({
      capability: 'ops.once',
      handler: async () => {
        runs++;
        return { run: runs };
      },
    });
    const first = await tapctl('nats', 'submit', 'ops.once', '1', '--idempotency-key', 'order-7', '--wait', '--json', '-s', server.url);
    const again = await tapctl('nats', 'submit', 'ops.once', '1', '--idempotency-key', 'order-7', '--wait', '--json', '-s', server.url);
    expect(first.json()).toMatchObject({ duplicate: false, status: 'completed', output: { run: 1 } });
    expect(again.json()).toMatchObject({ duplicate: true, task_id: first.json().task_id, output: { run: 1 } });
    expect(runs).toBe(1);
    const human = await tapctl('nats', 'submit', 'ops.once', '1', '--idempotency-key', 'order-7', '-s', server.url);
    expect(human.out).toContain(`nothing new was queued; the task is ${first.json().task_id}`);
  });

  it('lists the queued records per capability with their attempt, and status counts them', async () => {
    const ids: string[] = [];
    for (const [cap, input] of [
      ['ops.parked', { a: 1 }],
      ['ops.parked', { a: 2 }],
      ['ops.other', 'x'],
    ] as const) {
      const r = await tapctl('nats', 'submit', cap, JSON.stringify(input), '--json', '-s', server.url);
      ids.push(r.json().task_id);
    }
    const all = (await tapctl('nats', 'tasks', '--json', '-s', server.url)).json();
    expect(all.tasks.map((t: { task_id: string }) => t.task_id)).toEqual(ids);
    expect(all.tasks[0]).toMatchObject({ capability: 'ops.parked', attempts: 0, delivery: 'waiting', input: { a: 1 } });
    const one = (await tapctl('nats', 'tasks', '--capability', 'ops.other', '--json', '-s', server.url)).json();
    expect(one.tasks.map((t: { task_id: string }) => t.task_id)).toEqual([ids[2]]);
    const human = await tapctl('nats', 'tasks', '-s', server.url);
    expect(human.out).toContain('3 of 3 records on TAP_TASKS');
    expect(human.out).toMatch(new RegExp(`${ids[1]}\\s+attempts 0 \\(no earlier delivery\\)\\s+waiting for a runner\\s+\\{"a":2\\}`));
    const status = await tapctl('nats', 'status', '-s', server.url);
    expect(status.out).toMatch(/TAP_TASKS\s+task queue\s+3 messages/);
    expect(status.out).toMatch(/ops\.parked\s+2\n/);
    expect(status.out).toMatch(/tap-ops_echo\s+tap\.tasks\.ops\.echo\s+0 waiting\s+0 in flight/);
  });

  async function deadIds(): Promise<string[]> {
    return (await tapctl('nats', 'dead-letters', '--json', '-s', server.url))
      .json()
      .dead_letters.map((d: { task_id: string }) => d.task_id);
  }

  it('lists a dead letter with its reason and requeues it as a new attempt series, which can die again', { timeout: 90_000 }, async () => {
    // The server announces a record's spent last delivery by an advisory a lease after that
    // delivery; TAP_ADVISORIES keeps it for the runner that moves the record to TAP_DEAD, which
    // starts after the crash, whether before the advisory or after.
    const leaseMs = 400;
    const submitted = (await tapctl('nats', 'submit', 'ops.poison', '"p"', '--json', '-s', server.url)).json();
    await crashWhileHolding(server.url, { capability: 'ops.poison', leaseMs, maxAttempts: 1, agentId: 'tap.ops-crash' });
    // A pull the server still holds has it publish the advisory as the lease runs out, with no runner
    // connected; status shows the advisory no runner has answered yet, under the capability's consumer.
    const advisories = async () =>
      (await tapctl('nats', 'status', '--json', '-s', server.url)).json().streams.find((x: { name: string }) => x.name === 'TAP_ADVISORIES')
        ?.subjects ?? {};
    const stray = strayPull(nc, 'ops.poison', 2000);
    await until(async () =>
      (await advisories())['$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TAP_TASKS.tap-ops_poison'] === 1 ? true : undefined,
    );
    await stray;
    expect((await tapctl('nats', 'status', '-s', server.url)).out).toMatch(
      /advisories waiting for a runner, per consumer\n\s*tap-ops_poison\s+1/,
    );
    let watcher = await runner({ capability: 'ops.poison', leaseMs, maxAttempts: 1, handler: async () => 'never' });
    await until(async () => ((await deadIds()).includes(submitted.task_id) ? true : undefined));
    await until(async () => (Object.keys(await advisories()).length === 0 ? true : undefined));
    const dead = (await tapctl('nats', 'dead-letters', '--json', '-s', server.url)).json().dead_letters;
    expect(dead).toEqual([
      expect.objectContaining({
        task_id: submitted.task_id,
        capability: 'ops.poison',
        attempts: 1,
        reason: expect.objectContaining({ code: 'MAX_ATTEMPTS' }),
      }),
    ]);
    const human = await tapctl('nats', 'dead-letters', '-s', server.url);
    expect(human.out).toMatch(
      new RegExp(`${submitted.task_id}\\s+ops\\.poison\\s+attempts 1 \\(1 delivery\\)\\s+MAX_ATTEMPTS: the phase was delivered 1 times`),
    );

    // Requeued while no runner serves it, it dies a second time: a second dead letter, not a duplicate dropped.
    await watcher.stop();
    stops.splice(0);
    const crash = crashWhileHolding(server.url, { capability: 'ops.poison', leaseMs, maxAttempts: 1, agentId: 'tap.ops-crash' });
    const requeued = await tapctl('nats', 'requeue', submitted.task_id, '-s', server.url);
    expect(requeued.code).toBe(0);
    expect(requeued.out).toMatch(
      new RegExp(
        `Requeued ${submitted.task_id} to tap\\.tasks\\.ops\\.poison \\(queue sequence \\d+\\) after attempts 1 \\(1 delivery\\), MAX_ATTEMPTS; a new attempt series starts at attempts 0; dead letter #\\d+ removed`,
      ),
    );
    expect(await deadIds()).toEqual([]);
    await crash;
    watcher = await runner({ capability: 'ops.poison', leaseMs, maxAttempts: 1, handler: async () => 'never' });
    await until(async () => ((await deadIds()).includes(submitted.task_id) ? true : undefined));
    const again = (await tapctl('nats', 'dead-letters', '--json', '-s', server.url)).json().dead_letters[0];
    expect(again.attempts).toBe(1);

    // Requeued with a runner that finishes it: the result comes at attempt 0 of the new series.
    await watcher.stop();
    stops.splice(0);
    await runner({ capability: 'ops.poison', leaseMs, maxAttempts: 1, handler: async ({ attempts }) => ({ attempts }) });
    const all = (await tapctl('nats', 'requeue', '--all', '--json', '-s', server.url)).json();
    expect(all.requeued).toEqual([expect.objectContaining({ task_id: submitted.task_id, previous_attempts: 1 })]);
    const result = await until(async () => {
      const m = await (await import('@nats-io/jetstream'))
        .jetstreamManager(nc)
        .then((jsm) => jsm.streams.getMessage('TAP_RESULTS', { last_by_subj: `tap.results.${submitted.task_id}` }));
      return m?.json<{ state: { status: string; attempts: number } }>();
    });
    expect(result.state).toMatchObject({ status: 'completed', attempts: 0 });
    expect((await tapctl('nats', 'requeue', '--all', '-s', server.url)).out).toContain('nothing to requeue');
  });

  it('removes a consumer no runner serves, with its twin of TAP_ADVISORIES, keeping its records; refuses one a runner pulls from, and an unknown one', async () => {
    const gone = await runner({ capability: 'ops.gone', pullExpiresMs: 1000, handler: async () => 'ran' });
    const jsm = await (await import('@nats-io/jetstream')).jetstreamManager(nc);
    const consumers = async (stream: string): Promise<string[]> => {
      const names: string[] = [];
      for await (const c of jsm.consumers.list(stream)) names.push(c.name);
      return names;
    };
    expect(await consumers('TAP_ADVISORIES')).toContain('tap-ops_gone');
    // A runner pulls from it: refused, nothing removed.
    const busy = await tapctl('nats', 'remove-consumer', 'tap-ops_gone', '--json', '-s', server.url);
    expect(busy.code).toBe(1);
    expect(busy.json().error).toMatchObject({
      code: 'CONSUMER_IN_USE',
      message: expect.stringContaining('a runner pulls from consumer tap-ops_gone'),
    });
    // An unknown name beside it: refused before anything moves.
    await gone.stop();
    expect((await tapctl('nats', 'submit', 'ops.gone', '"x"', '-s', server.url)).code).toBe(0);
    const unknown = await tapctl('nats', 'remove-consumer', 'tap-ops_gone', 'tap-nobody', '-s', server.url);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no consumer tap-nobody on TAP_TASKS');
    expect(await consumers('TAP_TASKS')).toContain('tap-ops_gone');
    // Once the runner's last pull has expired, the consumer goes, and its record stays on the queue.
    const removed = await until(async () => {
      const r = await tapctl('nats', 'remove-consumer', 'tap-ops_gone', '-s', server.url);
      return r.code === 0 ? r : undefined;
    });
    expect(removed.out).toBe(
      'Removed consumer tap-ops_gone of TAP_TASKS (tap.tasks.ops.gone) and its consumer of TAP_ADVISORIES; 1 record stays on the queue for the next runner of the capability, which creates the consumer afresh.\n',
    );
    expect(await consumers('TAP_TASKS')).not.toContain('tap-ops_gone');
    expect(await consumers('TAP_ADVISORIES')).not.toContain('tap-ops_gone');
    const queued = await jsm.streams.info('TAP_TASKS', { subjects_filter: 'tap.tasks.ops.gone' });
    expect(queued.state.subjects).toEqual({ 'tap.tasks.ops.gone': 1 });
    // The next runner creates it afresh and runs the record.
    const logged: string[] = [];
    const next = await runner({ capability: 'ops.gone', handler: async () => 'ran', logger: (level, m) => logged.push(`${level}: ${m}`) });
    await until(async () => (next.stats.completed === 1 ? true : undefined));
    // --force takes the consumer from under that live runner, which says so.
    const forced = await tapctl('nats', 'remove-consumer', 'tap-ops_gone', '--force', '-s', server.url);
    expect(forced.code).toBe(0);
    await until(async () => (logged.some((l) => l.startsWith('error: consumer tap-ops_gone of TAP_TASKS was deleted')) ? true : undefined));
    expect(logged.find((l) => l.includes('of TAP_TASKS was deleted'))).toBe(
      'error: consumer tap-ops_gone of TAP_TASKS was deleted: this runner takes nothing more from it until it is restarted, which creates it again',
    );
  });

  it('refuses an unknown id without moving anything, and says how to list the dead letters', async () => {
    const r = await tapctl('nats', 'requeue', 'task-20260101-000000000000', '-s', server.url);
    expect(r.code).toBe(1);
    expect(r.err).toContain('no dead letter with task id task-20260101-000000000000 in TAP_DEAD');
    expect(r.err).toContain('tapctl nats dead-letters lists');
    expect((await tapctl('nats', 'requeue', '-s', server.url)).code).toBe(2);
  });

  it('says that a server is unreachable, and that JetStream is off', async () => {
    const nobody = `nats://127.0.0.1:${await freePort()}`;
    const down = await tapctl('nats', 'status', '--server', nobody);
    expect(down.code).toBe(1);
    expect(down.err).toContain('cannot reach the NATS server');
    expect(down.err).toContain(`where: ${nobody}`);
    expect(down.err).toContain('Is nats-server running there');
    const plain = await startNatsServer({ jetstream: false });
    try {
      const off = await tapctl('nats', 'tasks', '--json', '--server', plain.url);
      expect(off.code).toBe(1);
      expect(off.json().error.code).toBe('JETSTREAM_OFF');
      expect(off.err).toContain('start nats-server with -js');
    } finally {
      await plain.stop();
    }
  });

  it('works from dist/ as the shipped tapctl', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'nats', 'status', '--json', '--server', server.url]);
    const st = JSON.parse(stdout);
    expect(st.streams.find((s: { name: string }) => s.name === 'TAP_TASKS')).toMatchObject({ exists: true, replicas: 1 });
    expect(st.consumers.map((c: { name: string }) => c.name)).toContain('tap-ops_poison');
  });
});
