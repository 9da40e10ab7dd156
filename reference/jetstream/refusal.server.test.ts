/**
 * Regression tests of the durable queue under attack (issue "A mesh safe on a shared server"): a
 * record whose task_id is a wildcard is never finished with another task's result, records that are
 * not objects leave the queue as dead letters, a forged advisory moves nothing, and with a trust
 * file a record cannot claim another principal's idempotency key and a task.result planted in a
 * task's stream does not decide its outcome (spec: bindings-nats#task-queue, #signed-records).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamManager } from '@nats-io/jetstream';
import { validateAgainst } from '../core/validate.ts';
import { newSigningKey, trustOf } from '../trust.ts';
import { maxDeliveriesAdvisory, Wildcard } from '../transports/nats/subjects.ts';
import { recordFromDraft, type TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { consumerName } from './consumer.ts';
import { replayDurableTask, TaskStreamWriter } from './events.ts';
import { startDurableRunner, type DurableRunner, type DurableRunnerOptions, type DurableWork } from './runner.ts';
import { signRecord } from './signatures.ts';
import { DEFAULT_NAMES as N, deadSubject, ensureStreams, eventSubject, resultSubject, taskSubject } from './streams.ts';
import { submitDurable } from './submit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const AGENT = 'tap.refusal-test';

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'a durable runner under attack (spec: bindings-nats#task-queue)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const stops: Array<() => Promise<unknown>> = [];
  const runnerKey = newSigningKey(AGENT);
  const alice = newSigningKey('alice');
  const mallory = newSigningKey('mallory');
  const trust = trustOf([runnerKey, alice, mallory]);

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    ({ jsm } = await ensureStreams(nc));
  });
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => {});
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  async function runner(
    o: Partial<DurableRunnerOptions> & Pick<DurableRunnerOptions, 'capability'>,
  ): Promise<{ r: DurableRunner; ran: DurableWork[] }> {
    const ran: DurableWork[] = [];
    const r = await startDurableRunner({
      nc,
      agentId: AGENT,
      leaseMs: 1000,
      maxAttempts: 2,
      handler: async (work) => {
        ran.push(work);
        return work.record.context.current_input;
      },
      ...o,
    });
    stops.push(() => r.stop());
    return { r, ran };
  }

  async function until<T>(what: string, probe: () => Promise<T | null | undefined>, ms = 8000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await probe().catch(() => null);
      if (v !== null && v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
      await sleep(25);
    }
  }

  const resultOf = (taskId: string): Promise<TaskRecord> =>
    until(`the finished record of ${taskId}`, async () =>
      (await jsm.streams.getMessage(N.results, { last_by_subj: resultSubject(N, taskId) }))?.json<TaskRecord>(),
    );

  /** Every dead letter of `capability` stored after stream sequence `after`. */
  async function deadAfter(capability: string, after: number): Promise<TaskRecord[]> {
    const info = await jsm.streams.info(N.dead);
    const out: TaskRecord[] = [];
    for (let seq = Math.max(after + 1, info.state.first_seq); seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(N.dead, { seq }).catch(() => null);
      if (m?.subject === deadSubject(N, capability)) out.push(m.json<TaskRecord>());
    }
    return out;
  }
  const deadMark = async (): Promise<number> => (await jsm.streams.info(N.dead)).state.last_seq;
  const queued = async (capability: string): Promise<number> =>
    (await jsm.streams.info(N.tasks, { subjects_filter: taskSubject(N, capability) })).state.subjects?.[taskSubject(N, capability)] ?? 0;
  /** The runner acknowledges a refused record after it stores its dead letter: the queue empties a moment later. */
  const emptied = (capability: string): Promise<true> =>
    until(`the queue of ${capability} to empty`, async () => ((await queued(capability)) === 0 ? true : null));

  it('dead-letters a record whose task_id is ">", "*" or "a.*" before any lookup: never finished with another task\'s result (TAP-NATS-037)', async () => {
    const { ran } = await runner({ capability: 'work.wild' });
    const victim = (await submitDurable(nc, { next_phase: 'work.wild', input: 'VICTIM-SECRET-OUTPUT' })).record;
    await resultOf(victim.task_id);
    const mark = await deadMark();
    const js = jetstream(nc);
    for (const taskId of ['>', '*', 'a.*']) {
      const forged = { ...victim, task_id: taskId, context: { ...victim.context, current_input: `attacker ${taskId}` } };
      await js.publish(taskSubject(N, 'work.wild'), JSON.stringify(forged), { msgID: `forged-${taskId}` });
    }
    const dead = await until('three dead letters', async () => {
      const d = await deadAfter('work.wild', mark);
      return d.length >= 3 ? d : null;
    });
    expect(dead.map((d) => d.state.last_error?.code)).toEqual(['INVALID_MESSAGE', 'INVALID_MESSAGE', 'INVALID_MESSAGE']);
    for (const d of dead) expect(validateAgainst('task-record.schema.json', d)).toBeNull();
    expect(dead.map((d) => d.metadata['x-rejected-record'] !== undefined)).toEqual([true, true, true]);
    await emptied('work.wild');
    // Nothing but the victim's own finished record is in TAP_RESULTS, and the handler ran only the victim.
    const results = await jsm.streams.info(N.results, { subjects_filter: resultSubject(N, Wildcard.TAIL) });
    expect(Object.keys(results.state.subjects ?? {}).filter((s) => s.includes('*') || s.endsWith('>'))).toEqual([]);
    expect(ran.map((w) => w.record.task_id)).toEqual([victim.task_id]);
  });

  it('dead-letters null, "x", [] and a record for another capability at once, with their reasons; none stays queued', async () => {
    const { r, ran } = await runner({ capability: 'work.poison' });
    const mark = await deadMark();
    const js = jetstream(nc);
    for (const bad of ['null', '"x"', '[]']) await js.publish(taskSubject(N, 'work.poison'), bad, { msgID: `poison-${bad}` });
    const elsewhere = (await submitDurable(nc, { next_phase: 'work.other', input: 1 })).record;
    await js.publish(taskSubject(N, 'work.poison'), JSON.stringify(elsewhere), { msgID: 'poison-elsewhere' });
    const dead = await until('four dead letters', async () => {
      const d = await deadAfter('work.poison', mark);
      return d.length >= 4 ? d : null;
    });
    expect(dead.map((d) => d.state.last_error?.code)).toEqual([
      'MALFORMED_MESSAGE',
      'MALFORMED_MESSAGE',
      'MALFORMED_MESSAGE',
      'INVALID_MESSAGE',
    ]);
    expect(dead.slice(0, 3).map((d) => (d.metadata['x-rejected-record'] as { excerpt: string }).excerpt)).toEqual(['null', '"x"', '[]']);
    // A record that is one keeps its task id and its input, for the operator.
    expect(dead[3]).toMatchObject({ task_id: elsewhere.task_id, state: { status: 'failed' } });
    expect(dead[3]!.state.last_error?.message).toContain('work.other');
    await emptied('work.poison');
    expect(r.stats.refused).toBe(4);
    expect(ran).toEqual([]);
  });

  it('moves nothing for a forged max-deliveries advisory: not JSON, no sequence, or a message of another queue', async () => {
    await runner({ capability: 'work.advised' });
    // A record on a queue no runner serves, which the forged advisory names.
    const { seq } = await submitDurable(nc, { next_phase: 'work.unserved', input: 1 });
    const mark = await deadMark();
    const advisory = maxDeliveriesAdvisory(N.tasks, consumerName('work.advised'));
    nc.publish(advisory, 'not json');
    nc.publish(advisory, JSON.stringify({ deliveries: 2 }));
    nc.publish(advisory, JSON.stringify({ stream_seq: seq, deliveries: 2 }));
    await nc.flush();
    await sleep(500);
    expect(await jsm.streams.getMessage(N.tasks, { seq })).not.toBeNull();
    expect(await deadAfter('work.advised', mark)).toEqual([]);
    expect(await deadAfter('work.unserved', mark)).toEqual([]);
  });

  describe('with a trust file (spec: bindings-nats#signed-records, TAP-NATS-038)', () => {
    const signed = { trust, signingKey: runnerKey };

    it('dead-letters unsigned and forged records with their reasons, and runs a signed one as its signer', async () => {
      const { ran } = await runner({ capability: 'work.signed', ...signed });
      const mark = await deadMark();
      await submitDurable(nc, { next_phase: 'work.signed', input: 'unsigned' });
      const eve = newSigningKey('eve');
      await submitDurable(nc, { next_phase: 'work.signed', input: 'by a stranger' }, { signingKey: eve });
      const good = (await submitDurable(nc, { next_phase: 'work.signed', input: 'alice' }, { signingKey: alice })).record;
      const done = await resultOf(good.task_id);
      expect(done.state.status).toBe('completed');
      const dead = await until('two dead letters', async () => {
        const d = await deadAfter('work.signed', mark);
        return d.length >= 2 ? d : null;
      });
      expect(dead.map((d) => [d.context.current_input, d.state.last_error?.code])).toEqual([
        ['unsigned', 'INVALID_SIGNATURE'],
        ['by a stranger', 'INVALID_SIGNATURE'],
      ]);
      expect(ran.map((w) => [w.record.context.current_input, w.principal])).toEqual([['alice', 'alice']]);
    });

    it("refuses a record that claims alice's idempotency key, so that alice's own submission runs (durable-forgery, attack 1)", async () => {
      const { ran } = await runner({ capability: 'work.idem', ...signed });
      const mark = await deadMark();
      // Mallory signs a record naming alice as the key's principal: the signer differs.
      const claim = signRecord(
        recordFromDraft({
          next_phase: 'work.idem',
          input: 'ATTACKER-CHOSEN',
          metadata: { 'x-idempotency': { principal: 'alice', key: 'order-77' } },
        }) as TaskRecord,
        mallory,
      );
      // Published under the message id an unsigned submit of alice's key would have: the server must not drop hers for it.
      await jetstream(nc).publish(taskSubject(N, 'work.idem'), JSON.stringify(claim), { msgID: 'alice:work.idem:order-77' });
      const [refused] = await until('the claim as a dead letter', async () => {
        const d = await deadAfter('work.idem', mark);
        return d.length >= 1 ? d : null;
      });
      expect(refused!.state.last_error?.code).toBe('IDENTITY_MISMATCH');
      const mine = await submitDurable(
        nc,
        { next_phase: 'work.idem', input: 'alice real work' },
        { idempotency: { key: 'order-77' }, signingKey: alice },
      );
      expect(mine.duplicate).toBe(false);
      const done = await resultOf(mine.record.task_id);
      expect([done.state.status, done.context.history.at(-1)?.output]).toEqual(['completed', 'alice real work']);
      expect(ran.map((w) => w.record.context.current_input)).toEqual(['alice real work']);
    });

    it('does not let a task.result planted in the stream decide the outcome: the phase runs (durable-forgery, attack 2)', async () => {
      const { ran } = await runner({ capability: 'work.pay', ...signed });
      const draft = recordFromDraft({ next_phase: 'work.pay', input: 'real payment' }) as TaskRecord;
      const record = signRecord(draft, alice);
      // A forgery names the runner as its source, unsigned; another is signed by alice, a principal but no runner.
      const js = jetstream(nc);
      const forged = (sequence: number, key?: typeof alice) => {
        const message = {
          protocol: 'tap/1.0',
          message_id: `forged-${sequence}`,
          type: 'task.result',
          source: key ? key.principal : AGENT,
          target: '*',
          timestamp: new Date().toISOString(),
          task_id: record.task_id,
          sequence,
          payload: { status: 'completed', output: 'FORGED' },
        };
        const h = headers();
        h.set('Tap-Attempt', '0');
        return { message, h };
      };
      const first = forged(1);
      await js.publish(eventSubject(N, record.task_id), JSON.stringify(first.message), { msgID: `${record.task_id}:1`, headers: first.h });
      await js.publish(taskSubject(N, 'work.pay'), JSON.stringify(record), { msgID: `${record.task_id}:submit` });
      const done = await resultOf(record.task_id);
      expect([done.state.status, done.context.history.at(-1)?.output]).toEqual(['completed', 'real payment']);
      expect(ran).toHaveLength(1);
      // A requester that replays the stream with the trust file sees the runner's messages only.
      const replay = await replayDurableTask(nc, { taskId: record.task_id, signedBy: { trust, runners: [AGENT] }, timeoutMs: 5000 });
      expect(replay.map((s) => [s.message.sequence, s.message.type, s.message.source])).toEqual([
        [2, 'task.event', AGENT],
        [3, 'task.result', AGENT],
      ]);
      expect(replay.at(-1)!.message.payload).toEqual({ status: 'completed', output: 'real payment' });
    });

    it("still stores a task's outcome from the task.result its own runner signed, without running again (TAP-NATS-035)", async () => {
      const { ran } = await runner({ capability: 'work.stored', ...signed });
      const record = signRecord(recordFromDraft({ next_phase: 'work.stored', input: 'again?' }) as TaskRecord, alice);
      // An earlier delivery of this runner's agent stored its running event and its signed task.result.
      const earlier = new TaskStreamWriter(jetstream(nc), N, AGENT, record.task_id, 0, 0, runnerKey);
      await earlier.publish('task.event', { kind: 'state', state: 'running' });
      await earlier.publish('task.result', { status: 'completed', output: 'stored by the runner' });
      await jetstream(nc).publish(taskSubject(N, 'work.stored'), JSON.stringify(record), { msgID: `${record.task_id}:submit` });
      const done = await resultOf(record.task_id);
      expect(done.context.history.at(-1)?.output).toBe('stored by the runner');
      expect(ran).toEqual([]);
    });

    it('will not start with a trust file but no key, or with a key of another agent', async () => {
      await expect(startDurableRunner({ nc, agentId: AGENT, capability: 'work.x', handler: async () => 1, trust })).rejects.toThrow(
        /give signingKey/,
      );
      await expect(
        startDurableRunner({ nc, agentId: AGENT, capability: 'work.x', handler: async () => 1, trust, signingKey: alice }),
      ).rejects.toThrow(/alice's, not agent tap\.refusal-test's/);
    });
  });
});
