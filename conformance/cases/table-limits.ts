/**
 * Core profile, hostile input: nesting depth, frame size before the ack, the duplicate table
 * under a flood of large replies, and idempotency records under another principal's flood
 * (spec: limits#nesting, limits#pre-handshake, limits#table-limits).
 */
import { defineCase, type Case } from '../case.ts';
import type { Peer, Received } from '../peer.ts';
import type { Wire } from '../session-state.ts';
import { describeMessage, handshake, request } from '../steps.ts';
import { check, checkError, expectAlive, need, require, runTask, show, verdictOf } from './kit.ts';

const P = 'core' as const;
/** The depth every receiver accepts and one level more (spec: limits#nesting). */
const MAX_DEPTH = 64;
/** The frame size every agent takes before handshake.ack (spec: limits#pre-handshake). */
const PRE_HANDSHAKE_BYTES = 65_536;

/** A value `levels` containers deep: nested arrays. */
function nested(levels: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

/** A message of `type` padded so that its JSON text has exactly `bytes` bytes. */
function sized(peer: Peer, type: string, bytes: number, extra: Partial<Wire> = {}): Wire {
  const m = peer.envelope(type, { pad: '' }, extra);
  const base = Buffer.byteLength(JSON.stringify(m));
  return { ...m, payload: { pad: 'x'.repeat(Math.max(0, bytes - base)) } };
}

/** The error, if any, that answered `sent` (by reply_to), else the first error after `mark`. */
async function answerTo(peer: Peer, sent: Wire, mark: number, what: string): Promise<Received> {
  return need(await peer.waitFor((r) => r.index >= mark && (r.msg.reply_to === sent.message_id || r.msg.type === 'error'), what));
}

export const tableLimitCases: Case[] = [
  defineCase({
    id: 'core.limits.nesting',
    title: 'A message 64 levels deep is taken; one 65 or 5 000 levels deep gets MALFORMED_MESSAGE and the session goes on',
    profile: P,
    requirements: ['TAP-LIM-013', 'TAP-LIM-015'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // ping (1) → payload (2) → deep: 62 levels of arrays, 64 in all.
      const ok = await peer.send(peer.envelope('ping', { deep: nested(MAX_DEPTH - 2) }), { deliberate: 'a ping 64 levels deep' });
      const pong = need(await peer.reply(ok));
      require(check(pong.msg.type === 'pong', 'a ping 64 levels deep was refused', 'pong', describeMessage(pong.msg)));
      let mark = peer.mark();
      const deep = await peer.send(peer.envelope('ping', { deep: nested(MAX_DEPTH - 1) }), { deliberate: 'a ping 65 levels deep' });
      const r65 = await answerTo(peer, deep, mark, 'an error for a message 65 levels deep');
      require(checkError(r65.msg, { code: 'MALFORMED_MESSAGE' }, 'a message 65 levels deep'));
      mark = peer.mark();
      await peer.sendText(`{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`, 'a 10 KB frame 5 000 levels deep');
      const r5000 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a frame 5 000 levels deep'));
      require(checkError(r5000.msg, { code: 'MALFORMED_MESSAGE' }, 'a frame 5 000 levels deep'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a frame 5 000 levels deep'));
    },
  }),
  defineCase({
    id: 'core.limits.pre-handshake-size',
    title: 'Before handshake.ack, a 65 536-byte frame is taken and a larger one gets MESSAGE_TOO_LARGE; the handshake then succeeds',
    profile: P,
    requirements: ['TAP-LIM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const fits = await peer.send(sized(peer, 'task.status', PRE_HANDSHAKE_BYTES, { task_id: 'pre-handshake-fits' }), {
        deliberate: 'a 65 536-byte task.status before the handshake',
      });
      const rFits = need(await peer.reply(fits));
      const mark = peer.mark();
      const over = await peer.send(sized(peer, 'task.status', 200_000, { task_id: 'pre-handshake-over' }), {
        deliberate: 'a 200 000-byte task.status before the handshake',
      });
      const rOver = await answerTo(peer, over, mark, 'an error for a 200 000-byte frame before the handshake');
      require(checkError(rOver.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a 200 000-byte frame before the handshake'));
      const hs = need(await handshake(peer));
      const cardMax = Number(hs.ack.msg.payload?.agent?.limits?.max_message_bytes);
      const fitsCode = rFits.msg.type === 'error' ? String(rFits.msg.payload?.code) : rFits.msg.type;
      const mayRefuse = cardMax < PRE_HANDSHAKE_BYTES;
      return verdictOf(
        'the small frame judged on its content, the large one refused for its size',
        check(
          mayRefuse || fitsCode !== 'MESSAGE_TOO_LARGE',
          `a 65 536-byte frame before the handshake was refused as too large, though the card allows ${cardMax} bytes`,
          'HANDSHAKE_REQUIRED (the frame was read)',
          fitsCode,
        ),
        await expectAlive(peer, 'the refused frames'),
      );
    },
  }),
  defineCase({
    id: 'core.limits.duplicate-table-hostile',
    title: '1 100 small task.status requests about a large result: the newest 1 024 are still answered byte for byte',
    profile: P,
    requirements: ['TAP-LIM-018', 'TAP-IDEM-004'],
    budgetMs: 60_000,
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const big = need(await runTask(peer, 'tap.test.echo', 'r'.repeat(8000)));
      const statuses: Wire[] = [];
      for (let batch = 0; batch < 11; batch++) {
        const sent: Wire[] = [];
        for (let i = 0; i < 100; i++) sent.push(await peer.post('task.status', {}, { task_id: big.taskId }));
        for (const s of sent) need(await peer.reply(s));
        statuses.push(...sent);
      }
      const probes = [statuses[statuses.length - 1024]!, statuses[statuses.length - 1]!];
      const outcomes = [];
      for (const probe of probes) {
        const first = need(await peer.reply(probe));
        const mark = peer.mark();
        await peer.send(probe, { deliberate: 'a repeat of an answered task.status' });
        const again = need(await peer.waitFor((r) => r.index >= mark && r.msg.reply_to === probe.message_id, 'the original reply again'));
        outcomes.push(
          check(
            again.text === first.text,
            `the repeat of task.status ${probe.message_id} did not get its original reply byte for byte`,
            'the original task.snapshot',
            describeMessage(again.msg),
          ),
        );
      }
      return verdictOf('the original replies, and the session goes on', ...outcomes, await expectAlive(peer, '1 100 status requests'));
    },
  }),
  defineCase({
    id: 'core.limits.retention-per-principal',
    title: "Another principal's flood of 4 200 tiny tasks does not erase an idempotency record: the retry runs nothing again",
    profile: P,
    requirements: ['TAP-LIM-019', 'TAP-LIM-020', 'TAP-IDEM-015', 'TAP-IDEM-005'],
    // 4 200 tasks, each answered and ended, before the retry; 50 at a time, refusals counted.
    budgetMs: 120_000,
    fillsLimits: true,
    needs: { capabilities: ['tap.test.counter', 'tap.test.echo'], binding: 'websocket' },
    run: async (ctx) => {
      const victim = need(await ctx.session());
      const key = `flood-${victim.ids.task('k')}`;
      const first = need(await runTask(victim, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const flooder = need(await ctx.session());
      let refused = 0;
      for (let batch = 0; batch < 84; batch++) {
        const sent: Wire[] = [];
        for (let i = 0; i < 50; i++) {
          sent.push(await flooder.post('task.request', { capability: 'tap.test.echo', input: i }, { task_id: flooder.ids.task('f') }));
        }
        for (const s of sent) {
          const r = need(await flooder.reply(s));
          if (r.msg.type === 'error') refused++;
          else need(await flooder.waitFor((x) => x.msg.type === 'task.result' && x.msg.task_id === s.task_id, 'the flood task result'));
        }
      }
      ctx.note(`the flood: 4 200 tasks, ${refused} refused`);
      const retry = await request(victim, 'tap.test.counter', { key }, { idempotencyKey: key });
      const m = need(retry.reply).msg;
      const firstCount = first.result.msg.payload?.output?.count;
      return verdictOf(
        'the snapshot of the first task',
        check(
          m.type === 'task.snapshot' && m.task_id === first.taskId,
          'after the flood the retry under the same idempotency_key was not answered with the first task',
          `task.snapshot of ${first.taskId}`,
          describeMessage(m),
        ),
        check(
          m.type !== 'task.snapshot' || m.payload?.result?.output?.count === firstCount,
          'the recorded task changed',
          `count ${show(firstCount)}`,
          show(m.payload?.result?.output),
        ),
      );
    },
  }),
];
