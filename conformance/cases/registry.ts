/**
 * The registry profile: agents that join a mesh (spec: registry). The harness reads the agent's
 * entry in the key-value bucket TAP_REGISTRY on the server given by --registry, compares it with
 * what the agent says in its handshake, watches its heartbeats and load figures, and, with
 * --agent-pid, stops the agent to see the entry withdrawn.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV, type KvEntry } from '@nats-io/kv';
import { entryProblem, type RegistryEntry } from '../../reference/mesh/entry.ts';
import { REGISTRY_BUCKET } from '../../reference/mesh/registry.ts';
import { parseNatsUrl } from '../../reference/transports/nats/url.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import { startTask, collectUntilResult } from '../steps.ts';
import { fail, harnessError, type Outcome } from '../verdict.ts';
import { check, jsonEqual, need, require, show, Stop, verdictOf } from './kit.ts';

const P = 'registry' as const;
const REG = { registry: true };

/** One write of the key as the harness saw it. */
interface Write {
  op: 'PUT' | 'DEL' | 'PURGE';
  revision: number;
  /** The server's time of the write (spec: registry#nats, TAP-REG-040). */
  at: number;
  /** When the harness received it. */
  seenAt: number;
  value?: unknown;
}

const writeOf = (e: KvEntry): Write => {
  let value: unknown;
  if (e.operation === 'PUT') {
    try {
      value = e.json();
    } catch {
      value = e.string();
    }
  }
  return { op: e.operation, revision: e.revision, at: e.created.getTime(), seenAt: Date.now(), value };
};

/** The registry bucket on the --registry server, for the length of `use`. */
async function withBucket<T>(ctx: CaseContext, use: (kv: KV, agentId: string) => Promise<T>): Promise<T> {
  const url = ctx.env.registry!.url;
  const agentId = ctx.env.probe.agentId;
  if (!agentId) throw new Stop(harnessError('the probe handshake named no agent id, so there is no registry key to read'));
  const address = parseNatsUrl(url);
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: address.servers, ...(address.user !== undefined ? { user: address.user, pass: address.pass } : {}) });
  } catch (err) {
    throw new Stop(harnessError(`cannot reach the registry's NATS server at ${url}: ${(err as Error).message}`));
  }
  try {
    let kv: KV;
    try {
      kv = await new Kvm(nc).open(REGISTRY_BUCKET);
      await kv.status();
    } catch (err) {
      throw new Stop(
        fail(
          `there is no key-value bucket ${REGISTRY_BUCKET} on ${url}: the agent did not register (${(err as Error).message})`,
          `the bucket ${REGISTRY_BUCKET}`,
          'none',
        ),
      );
    }
    return await use(kv, agentId);
  } finally {
    await nc.close().catch(() => {});
  }
}

/** The agent's current entry, parsed and valid, or a FAIL that says what is wrong with it. */
async function currentEntry(kv: KV, agentId: string): Promise<{ entry: RegistryEntry; write: Write }> {
  const e = await kv.get(agentId);
  if (e?.operation !== 'PUT')
    throw new Stop(fail(`${REGISTRY_BUCKET} holds no entry under the key ${agentId}, the agent id of the handshake`, 'an entry', 'none'));
  const write = writeOf(e);
  if (typeof write.value === 'string')
    throw new Stop(fail(`the value under ${agentId} is not JSON text`, 'the entry as UTF-8 JSON', show(write.value, 120)));
  const problem = entryProblem(write.value);
  if (problem)
    throw new Stop(
      fail(`the entry under ${agentId} is not a valid entry: ${problem}`, 'every member of registry#entry', show(write.value, 200)),
    );
  return { entry: write.value as RegistryEntry, write };
}

/** Collects the key's writes (the current one first) until `done` holds (checked as writes come and every 20 ms) or `ms` pass. */
async function watchKey(kv: KV, agentId: string, ms: number, done: (writes: Write[]) => boolean = () => false): Promise<Write[]> {
  const writes: Write[] = [];
  const iterator = await kv.watch({ key: agentId });
  const end = Date.now() + ms;
  const ticker = setInterval(() => {
    if (Date.now() >= end || done(writes)) iterator.stop();
  }, 20);
  try {
    for await (const e of iterator) {
      writes.push(writeOf(e));
      if (done(writes)) break;
    }
  } finally {
    clearInterval(ticker);
    iterator.stop();
  }
  return writes;
}

/** The allowance on a heartbeat interval: a quarter of it, at least 250 ms, stretched by the time scale. */
const allowance = (ctx: CaseContext, heartbeatMs: number): number => ctx.scaled(Math.max(250, heartbeatMs / 4));

const running = (w: Write): number | undefined => (w.value as RegistryEntry | undefined)?.load?.running_tasks;

export const registryCases: Case[] = [
  defineCase({
    id: 'registry.entry.card',
    title: 'The agent keeps a valid entry under its agent id whose card is its handshake card',
    profile: P,
    requirements: ['TAP-REG-001', 'TAP-REG-002', 'TAP-REG-003', 'TAP-REG-005', 'TAP-REG-007', 'TAP-REG-039'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const card = ctx.card;
        return verdictOf(
          'the entry is valid and carries the handshake card',
          check(entry.agent_id === agentId, 'the entry under the agent id names another agent', agentId, show(entry.agent_id)),
          check(
            jsonEqual(entry.card, card),
            'the registered card differs from the card of handshake.ack',
            show(card, 200),
            show(entry.card, 200),
          ),
          check(
            entry.load.max_concurrent_tasks === card?.limits?.max_concurrent_tasks,
            'load.max_concurrent_tasks differs from the card limits.max_concurrent_tasks',
            show(card?.limits?.max_concurrent_tasks),
            show(entry.load.max_concurrent_tasks),
          ),
          check(
            entry.versions.includes('1.0'),
            'versions leaves out 1.0, the version the handshake chose',
            '["1.0"]',
            show(entry.versions),
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.entry.endpoints',
    title: "Every endpoint of the entry accepts connections, and a NATS endpoint names the agent's id",
    profile: P,
    requirements: ['TAP-REG-004', 'TAP-REG-044'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const problems: (Outcome | null)[] = [];
        for (const ep of entry.endpoints) {
          try {
            if (ep.binding === 'nats') {
              const path = parseNatsUrl(ep.url).agentId;
              problems.push(
                check(path === agentId, `the NATS endpoint ${ep.url} does not name the agent id in its path`, agentId, show(path)),
              );
              const { connectNatsTransport } = await import('../../reference/transports/nats/connect.ts');
              const t = await connectNatsTransport(ep.url, { timeoutMs: ctx.scaled(5000), ...(ep.prefix ? { prefix: ep.prefix } : {}) });
              t.terminate();
            } else if (ep.binding === 'websocket') {
              const { connectWebSocket } = await import('../../reference/transports/websocket.ts');
              const t = await connectWebSocket(ep.url, { protocols: ['tap.v1'], handshakeTimeout: ctx.scaled(5000) });
              await t.close({ code: 1000, reason: 'checked' });
            }
            ctx.note(`${ep.binding} endpoint ${ep.url} accepted a connection`);
          } catch (err) {
            problems.push(
              fail(`the ${ep.binding} endpoint ${ep.url} accepts no connection: ${(err as Error).message}`, 'a connection', 'refused'),
            );
          }
        }
        return verdictOf(`${entry.endpoints.length} endpoint(s) accept connections`, ...problems);
      }),
  }),
  defineCase({
    id: 'registry.heartbeat.renewed',
    title: 'The agent renews its entry at least every heartbeat_ms, with a lifetime of at least two heartbeats',
    profile: P,
    requirements: ['TAP-REG-013', 'TAP-REG-014', 'TAP-REG-016', 'TAP-REG-017', 'TAP-REG-041'],
    needs: REG,
    budgetMs: 45_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry: first } = await currentEntry(kv, agentId);
        const hb = first.heartbeat_ms;
        require(check(hb >= 100, 'heartbeat_ms is below 100', '>= 100', String(hb)));
        require(check(first.ttl_ms >= 2 * hb, 'ttl_ms is below twice heartbeat_ms', `>= ${2 * hb}`, String(first.ttl_ms)));
        const maxAge = (await kv.status()).ttl;
        require(
          check(
            maxAge === 0 || first.ttl_ms <= maxAge,
            `ttl_ms is above the bucket's max_age (${maxAge} ms)`,
            `<= ${maxAge}`,
            String(first.ttl_ms),
          ),
        );
        // Three heartbeats at most 30 s long are watched: every gap, to the end of the window too, within one heartbeat.
        const window = Math.min(3 * hb, 30_000) + allowance(ctx, hb);
        const started = Date.now();
        const writes = (await watchKey(kv, agentId, window)).filter((w) => w.op === 'PUT');
        const ended = Date.now();
        ctx.note(`${writes.length} writes in ${ended - started} ms, heartbeat_ms ${hb}`);
        const limit = hb + allowance(ctx, hb);
        const problems: (Outcome | null)[] = [];
        for (let i = 1; i < writes.length; i++) {
          const gap = writes[i]!.at - writes[i - 1]!.at;
          problems.push(
            check(gap <= limit, `two writes of the entry were ${gap} ms apart, more than heartbeat_ms (${hb})`, `<= ${hb} ms`, `${gap} ms`),
          );
        }
        const last = writes.at(-1);
        const silence = ended - (last ? last.seenAt : started);
        problems.push(
          check(
            silence <= limit,
            `the entry was not renewed for ${silence} ms, more than heartbeat_ms (${hb})`,
            `<= ${hb} ms`,
            `${silence} ms`,
          ),
        );
        for (const w of writes) {
          const e = w.value as RegistryEntry;
          const drift = Math.abs(Date.parse(e?.updated_at) - w.at);
          problems.push(
            check(
              Number.isFinite(drift) && drift <= ctx.scaled(2000),
              'updated_at is not the time of its write',
              `within 2 s of the server's time ${new Date(w.at).toISOString()}`,
              show(e?.updated_at),
            ),
          );
          for (const k of ['instance', 'started_at', 'heartbeat_ms', 'ttl_ms'] as const)
            problems.push(check(e?.[k] === first[k], `${k} changed between writes of one instance`, show(first[k]), show(e?.[k])));
        }
        return verdictOf(`renewed ${writes.length} times in ${ended - started} ms`, ...problems);
      }),
  }),
  defineCase({
    id: 'registry.heartbeat.margin',
    title: 'The entry lives at least three heartbeats, so that one late heartbeat does not drop it',
    profile: P,
    requirements: ['TAP-REG-015'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        return verdictOf(
          'ttl_ms is at least three heartbeats',
          check(
            entry.ttl_ms >= 3 * entry.heartbeat_ms,
            'ttl_ms is below three heartbeats',
            `>= ${3 * entry.heartbeat_ms}`,
            String(entry.ttl_ms),
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.load.moves',
    title: 'The load figure follows the running tasks within a heartbeat, up as they start and down as they end',
    profile: P,
    spec: 'registry#load',
    reason: "the case watches the load figure of Load; the rule it checks is the entry's running_tasks (TAP-REG-006)",
    requirements: ['TAP-REG-006', 'TAP-REG-019'],
    needs: { ...REG, capabilities: ['tap.test.sleep'] },
    exclusive: true,
    budgetMs: 60_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const hb = entry.heartbeat_ms;
        if (hb > 15_000) return harnessError(`heartbeat_ms ${hb} is too long for this case's budget (tasks would sleep over 30 s)`);
        const base = entry.load.running_tasks;
        const limit = hb + allowance(ctx, hb);
        const peer = need(await ctx.session());
        const sleepMs = 2 * hb + ctx.scaled(1000);
        const up = watchKey(kv, agentId, sleepMs, (ws) => ws.some((w) => (running(w) ?? 0) >= base + 2));
        const a = need(await startTask(peer, 'tap.test.sleep', { ms: sleepMs }));
        const b = need(await startTask(peer, 'tap.test.sleep', { ms: sleepMs }));
        const acceptedAt = Date.now();
        const writes = await up;
        const busy = writes.find((w) => (running(w) ?? 0) >= base + 2);
        require(
          check(
            busy !== undefined && busy.seenAt - acceptedAt <= limit,
            `with 2 tasks running no write of the entry showed them within heartbeat_ms (${hb})`,
            `running_tasks ${base + 2}`,
            show(writes.map(running)),
          ),
        );
        require(
          check(running(busy!) === base + 2, 'running_tasks counts more tasks than are running', String(base + 2), show(running(busy!))),
        );
        const down = watchKey(kv, agentId, sleepMs + 2 * limit, (ws) => ws.some((w) => (running(w) ?? Number.POSITIVE_INFINITY) <= base));
        need(await collectUntilResult(peer, a.taskId, sleepMs + ctx.scaled(10_000)));
        need(await collectUntilResult(peer, b.taskId, sleepMs + ctx.scaled(10_000)));
        const endedAt = Date.now();
        const after = await down;
        const idle = after.find((w) => (running(w) ?? Number.POSITIVE_INFINITY) <= base);
        return verdictOf(
          `running_tasks went ${base} → ${base + 2} → ${base}`,
          check(
            idle !== undefined && idle.seenAt - endedAt <= limit,
            `after both tasks ended no write of the entry showed it within heartbeat_ms (${hb})`,
            `running_tasks ${base}`,
            show(after.map(running)),
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.trace.carried',
    title: "Every message of a traced task's stream carries the request's trace_id and span_id unchanged",
    profile: P,
    requirements: ['TAP-MESH-019'],
    needs: { ...REG, capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // W3C-shaped ids, as a mesh requester sets them (TAP-MESH-016, TAP-MESH-017).
      const trace = { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' };
      const t = need(await startTask(peer, 'tap.test.stream', { count: 3 }, { extra: { metadata: trace } as never }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const stream = r.stream;
      const off = stream.filter((m) => {
        const md = (m.msg as { metadata?: { trace_id?: unknown; span_id?: unknown } }).metadata;
        return md?.trace_id !== trace.trace_id || md?.span_id !== trace.span_id;
      });
      return verdictOf(
        `${stream.length} messages of the task, each with the trace`,
        check(
          off.length === 0,
          `${off.length} of the ${stream.length} messages of the task do not carry the request's trace_id and span_id`,
          `metadata ${JSON.stringify(trace)} on every message`,
          off.map((m) => `${m.msg.type}: ${show((m.msg as { metadata?: unknown }).metadata)}`).join('; '),
        ),
      );
    },
  }),
  defineCase({
    id: 'registry.withdraw.shutdown',
    title: 'On SIGTERM the agent withdraws its entry with a delete before it exits, and writes it no more',
    profile: P,
    requirements: ['TAP-REG-025', 'TAP-REG-028', 'TAP-REG-043'],
    needs: { ...REG, agentPid: true },
    exclusive: true,
    budgetMs: 30_000,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const pid = ctx.env.registry!.agentPid!;
        const alive = (): boolean => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        };
        if (!alive()) return harnessError(`there is no process ${pid} to stop (--agent-pid)`);
        let exitedAt: number | undefined;
        const poll = setInterval(() => {
          if (exitedAt === undefined && !alive()) exitedAt = Date.now();
        }, 20);
        const grace = ctx.scaled(15_000);
        try {
          const watching = watchKey(kv, agentId, grace, (ws) => {
            const del = ws.findIndex((w) => w.op !== 'PUT');
            // After the delete, one heartbeat more to see that no write follows it (TAP-REG-028).
            if (del !== -1 && Date.now() - ws[del]!.seenAt >= entry.heartbeat_ms) return true;
            return exitedAt !== undefined && Date.now() - exitedAt > ctx.scaled(1000);
          });
          ctx.note(`sending SIGTERM to process ${pid}`);
          process.kill(pid, 'SIGTERM');
          const writes = await watching;
          const del = writes.find((w) => w.op !== 'PUT');
          if (!del)
            return fail(
              exitedAt !== undefined
                ? 'the agent exited and left its entry in the registry'
                : `the agent neither withdrew its entry nor exited within ${grace} ms of SIGTERM`,
              'a delete of the entry',
              'none',
            );
          const later = writes.filter(
            (w) => w.op === 'PUT' && w.revision > del.revision && (w.value as RegistryEntry)?.instance === entry.instance,
          );
          return verdictOf(
            'withdrawn with a delete',
            check(del.op === 'DEL', 'the entry was withdrawn with a purge, which watchers are not told of as a delete', 'DEL', del.op),
            check(
              later.length === 0,
              'the agent wrote its entry again after withdrawing it',
              'no write',
              show(later.map((w) => w.revision)),
            ),
          );
        } finally {
          clearInterval(poll);
        }
      }),
  }),
];
