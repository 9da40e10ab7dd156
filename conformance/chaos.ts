/**
 * The chaos layer: a fault-injecting Transport between the harness and the agent. It duplicates,
 * delays, reorders and chops outbound frames, drops inbound stream messages (recovered with
 * task.resume) or the whole connection (recovered with a resume handshake), and injects forged,
 * malformed, invalid UTF-8, oversized, unknown and flooding traffic. After a workload the recorded
 * history must still keep every rule: legal transitions, one result per task, gap-free
 * sequences, one effect per idempotency key, no lost accepted task (spec: conformance#chaos).
 */
import { judgeHistory } from './judge/history.ts';
import type { RawTransport } from '../reference/transports/transport.ts';
import { FaultLayer, type FaultPlan } from './fault-layer.ts';
import { defineCase, type Case, type Profile } from './case.ts';
import type { CaseContext } from './context.ts';
import { signMessage } from './mac.ts';
import type { Peer, Received } from './peer.ts';
import { recovered } from './runner.ts';
import type { SessionState, Wire } from './session-state.ts';
import type { Connection } from './target.ts';
import { collectUntilResult, describeMessage, handshake } from './steps.ts';
import { fail, pass, skipped, type Outcome } from './verdict.ts';

/** The garbage the layer injects between real messages, each answered by an error or ignored. */
function garbage(peer: Peer, random: () => number): { text?: string; bytes?: Uint8Array; why: string } {
  const pick = Math.floor(random() * 6);
  const ping = () => peer.envelope('ping', {});
  switch (pick) {
    case 0:
      return { text: '{"type":"task.request",', why: 'malformed JSON' };
    case 1:
      return { bytes: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), why: 'invalid UTF-8' };
    case 2:
      return {
        text: JSON.stringify({
          ...ping(),
          payload: { 'x-pad': 'z'.repeat(Number(peer.state.params?.max_message_bytes ?? 1_048_576) + 10) },
        }),
        why: 'an oversized message',
      };
    case 3:
      return { text: JSON.stringify({ ...ping(), type: 'task.teleport' }), why: 'an unknown type' };
    case 4:
      return {
        text: JSON.stringify({ ...ping(), x_unknown: [1, 2, 3], payload: { 'x-extra': true } }),
        why: 'unknown fields (a valid ping)',
      };
    default:
      return { text: '[]', why: 'a top-level array' };
  }
}

/** A forged copy of a request, with its own message_id and task_id so it cannot shadow the real one. */
function forged(peer: Peer, random: () => number, taskId: string): { msg: Wire; why: string } {
  const base = peer.envelope('task.request', { capability: 'tap.test.counter', input: { key: `forged-${taskId}` } }, { task_id: taskId });
  const pick = Math.floor(random() * (peer.state.integrity ? 3 : 2));
  if (pick === 0) return { msg: { ...base, source: 'mallory' }, why: 'a forged sender' };
  if (pick === 1) return { msg: { ...base, session_id: 'FORGEDFORGEDFORGEDFORGED' }, why: 'a forged session' };
  const key = peer.state.integrity!;
  const s = signMessage(base as unknown as Record<string, unknown>, key.key, key.keyId) as unknown as Wire;
  return { msg: { ...s, signature: { ...s.signature!, value: 'A'.repeat(43) } }, why: 'a forged signature' };
}

interface Work {
  taskId: string;
  request: Wire;
  key?: string;
  kind: 'counter' | 'stream' | 'sleep';
}

/** Waits for the reply to a request, re-sending it byte for byte while the layer loses or delays it. */
async function replyOf(peer: Peer, request: Wire, ctx: CaseContext): Promise<Received | Outcome> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const r = await peer.poll((m) => m.msg.reply_to === request.message_id, ctx.scaled(attempt === 0 ? 4000 : 2000));
    if (r) return r;
    if (peer.closed) break;
    await peer.send(request);
  }
  const d = await peer.waitFor(
    (m) => m.msg.reply_to === request.message_id,
    `the reply to ${request.type} ${request.message_id}`,
    ctx.scaled(2000),
  );
  return d.ok ? d.value : d.outcome;
}

/** Fills the gaps of each task's stream with task.resume from the last contiguous sequence. */
async function recover(peer: Peer, works: Work[], ctx: CaseContext): Promise<Outcome | null> {
  for (const w of works) {
    // The faults go on during recovery, so each round may lose part of the replay again: keep
    // asking while rounds make progress, and stop after 8 rounds in a row that bring nothing.
    let best = -1;
    for (let idle = 0; idle < 8; ) {
      const streamed = peer.state.streams.get(w.taskId);
      let contiguous = 0;
      while (streamed?.has(contiguous + 1)) contiguous++;
      const result = peer.state.resultSeq.get(w.taskId);
      if (result !== undefined && contiguous >= result) break;
      if (contiguous > best) {
        best = contiguous;
        idle = 0;
      } else idle++;
      const sent = await peer.post('task.resume', { last_sequence: contiguous }, { task_id: w.taskId });
      const r = await replyOf(peer, sent, ctx);
      if ('verdict' in r) return r;
      if (r.msg.type !== 'task.snapshot')
        return fail(`task.resume during recovery got ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const last = r.msg.payload.last_sequence as number;
      await peer.poll((m) => m.msg.task_id === w.taskId && m.msg.sequence === last && m.index > r.index, ctx.scaled(3000));
    }
  }
  return null;
}

/** Runs the chaos workload under `plan` and checks the recovered history. */
export async function chaosRun(ctx: CaseContext, plan: FaultPlan): Promise<Outcome> {
  if (plan.dropConnection && ctx.binding === 'stdio')
    return skipped('dropping and resuming a connection needs a binding with connections (WebSocket or NATS)');
  let layer: FaultLayer | undefined;
  const wrap = (t: RawTransport, c: Connection) => (layer = new FaultLayer(t, c, { ...plan }, ctx.random, (n) => ctx.note(n), ctx.binding));
  const first = await ctx.connect({ wrap });
  if (!first.ok) return first.outcome;
  let peer = first.value;
  const hs = await handshake(peer, { params: { max_concurrent_tasks: 32 } });
  if (!hs.ok) return hs.outcome;
  if (plan.dropInbound) peer.state.lenientGaps = true;
  const works: Work[] = [];
  const forgedIds: string[] = [];
  const add = (kind: Work['kind'], input: unknown, keyed: boolean): Work => {
    const taskId = peer.ids.task('chaos');
    const key = keyed ? `chaos-${taskId}` : undefined;
    const capability = `tap.test.${kind}`;
    const request = peer.envelope(
      'task.request',
      { capability, input: kind === 'counter' ? { key: key ?? taskId } : input },
      key ? { task_id: taskId, idempotency_key: key } : { task_id: taskId },
    );
    const w: Work = { taskId, request, key: key ?? (kind === 'counter' ? taskId : undefined), kind };
    works.push(w);
    return w;
  };
  const plan1 = [
    add('counter', null, true),
    add('stream', { count: 8, interval_ms: 5 }, false),
    add('counter', null, true),
    add('sleep', { ms: 120_000 }, false),
    add('counter', null, false),
    add('stream', { count: 4 }, true),
  ];
  const sendAll = async (ws: Work[]) => {
    for (const w of ws) {
      await peer.send(w.request);
      if (plan.garbage !== undefined && ctx.random() < plan.garbage) {
        const g = garbage(peer, ctx.random);
        layer?.count('garbage', g.why);
        if (g.bytes) await peer.sendRaw(g.bytes, g.why);
        else await peer.sendText(g.text!, g.why);
      }
      if (plan.forge !== undefined && ctx.random() < plan.forge) {
        const id = peer.ids.task('forged');
        forgedIds.push(id);
        const f = forged(peer, ctx.random, id);
        layer?.count('forge', f.why);
        await peer.send(f.msg, { deliberate: f.why, sign: false });
      }
    }
    if (plan.flood) {
      layer?.count('flood', '100 pings at once');
      await Promise.all(Array.from({ length: 100 }, () => peer.post('ping', {})));
    }
  };
  await sendAll(plan1.slice(0, 3));
  if (plan.dropConnection) {
    layer?.count('drop-connection', 'terminated the connection; resuming on a new one');
    (ctx.connectionOf(peer)?.transport as { terminate?: () => void } | undefined)?.terminate?.();
    await peer.waitClosed(ctx.scaled(3000));
    const state: SessionState = peer.state;
    const next = await ctx.connect({ state, wrap });
    if (!next.ok) return next.outcome;
    peer = next.value;
    // Every task asked for is listed: one whose request never arrived is answered UNKNOWN_TASK,
    // and the request repeated below creates it.
    const tasks = works.map((w) => ({ task_id: w.taskId, last_sequence: 0 }));
    const again = await handshake(peer, { resume: { session_id: state.sessionId!, resume_token: state.resumeToken!, tasks } });
    if (!again.ok) return again.outcome;
    if (again.value.ack.msg.payload.resumed !== true)
      return fail('the resume after a dropped connection was declined', 'resumed: true', String(again.value.ack.msg.payload.resumed));
    // Requests whose replies were lost with the connection are repeated byte for byte.
    for (const w of plan1.slice(0, 3)) await peer.send(w.request);
  }
  await sendAll(plan1.slice(3));
  for (const w of plan1) {
    const r = await replyOf(peer, w.request, ctx);
    if ('verdict' in r) return r;
    if (r.msg.type !== 'task.accepted' && r.msg.type !== 'task.snapshot')
      return fail(`${w.kind} request ${w.taskId} got ${describeMessage(r.msg)}`, 'task.accepted', describeMessage(r.msg));
  }
  const sleeper = plan1.find((w) => w.kind === 'sleep')!;
  const cancel = await peer.post('task.cancel', {}, { task_id: sleeper.taskId });
  const cr = await replyOf(peer, cancel, ctx);
  if ('verdict' in cr) return cr;
  for (const w of plan1) {
    const res = await collectUntilResult(peer, w.taskId, ctx.scaled(10_000));
    if (!res.ok && !peer.state.resultSeq.has(w.taskId) && !plan.dropInbound) return res.outcome;
  }
  if (plan.dropInbound) {
    const lost = await recover(peer, plan1, ctx);
    if (lost) return lost;
  }
  layer?.quiet();
  return judgeChaos(ctx, peer, plan1, forgedIds, layer);
}

/** The after-the-fact checks of a chaos run. */
async function judgeChaos(
  ctx: CaseContext,
  peer: Peer,
  works: Work[],
  forgedIds: string[],
  layer: FaultLayer | undefined,
): Promise<Outcome> {
  const session = ctx.findings.received.filter((r) => r.session === peer.state);
  const msgs = recovered(session).filter((m) => works.some((w) => w.taskId === (m as Wire).task_id));
  const violations = judgeHistory(msgs, { complete: true });
  if (violations.length)
    return fail(
      `under faults the history breaks a rule (${violations[0]!.rule}): ${violations[0]!.message}`,
      'legal transitions, gap-free sequences, one result per task',
      violations[0]!.message,
    );
  for (const w of works) {
    const result = peer.state.resultSeq.get(w.taskId);
    if (result === undefined)
      return fail(`the accepted task ${w.taskId} never got its result (lost under faults)`, 'a result for every accepted task', 'none');
  }
  for (const w of works.filter((x) => x.kind === 'counter')) {
    const id = peer.ids.task('probe');
    const sent = await peer.post('task.request', { capability: 'tap.test.counter', input: { key: w.key } }, { task_id: id });
    const r = await replyOf(peer, sent, ctx);
    if ('verdict' in r) return r;
    const res = await collectUntilResult(peer, id, ctx.scaled(10_000));
    const count = res.ok ? res.value.result.msg.payload.output?.count : undefined;
    if (count !== 2)
      return fail(
        `counter ${w.key} ran ${typeof count === 'number' ? count - 1 : '?'} times for one request under faults`,
        'exactly one effect per request',
        `${typeof count === 'number' ? count - 1 : '?'} effects`,
      );
  }
  for (const id of forgedIds) {
    const sent = await peer.post('task.status', {}, { task_id: id });
    const r = await replyOf(peer, sent, ctx);
    if ('verdict' in r) return r;
    if (!(r.msg.type === 'error' && r.msg.payload.code === 'UNKNOWN_TASK'))
      return fail(`a forged request created task ${id}`, 'no effect (UNKNOWN_TASK)', describeMessage(r.msg));
  }
  const faults = Object.entries(layer?.injected ?? {})
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  return pass(`${works.length} tasks under ${faults || 'no faults (none drawn)'}: history intact, one effect per key`);
}

export function chaosCase(
  id: string,
  profile: Profile,
  title: string,
  plan: FaultPlan,
  caps: string[],
  requirements: string[],
  binding?: 'stdio' | 'websocket' | 'nats',
): Case {
  return defineCase({
    id: `${profile}.chaos.${id}`,
    title,
    profile,
    spec: 'conformance#targets',
    reason:
      'a chaos run judges the whole workload under faults (Targets), not one section: its first requirements are the task rules every run keeps',
    requirements: ['TAP-TASK-007', 'TAP-EVT-004', ...requirements],
    needs: { capabilities: caps.map((c) => `tap.test.${c}`), ...(binding ? { binding } : {}) },
    // The six tasks of the workload at once; the checks after it run one at a time.
    tasks: 6,
    budgetMs: 60_000,
    run: (ctx) => chaosRun(ctx, plan),
  });
}

/** The workload of every chaos case: counters, streams and sleeps. */
export const BASE = ['counter', 'stream', 'sleep'];
