/** nats profile, Liveness (spec: bindings-nats#liveness). */
import { sleep } from '../../peer.ts';
import { type Case, defineCase } from '../../case.ts';
import { natsOf } from '../connection.ts';
import { NATS, openRaw, openVerdicts } from './kit.ts';
import { newConnectionId } from '../../../reference/transports/nats/index.ts';
import { check, need, show, verdictOf } from '../kit.ts';
import { judgeOccurrence, timingWindow } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'nats.liveness.keepalive',
    title: 'The agent sends keepalives at least as often as the Tap-Keepalive-Ms it announced',
    profile: 'nats',
    requirements: ['TAP-NATS-012'],
    needs: NATS,
    budgetMs: 30_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      const every = t.peerKeepaliveMs;
      const from = Date.now();
      const before = t.log.keepalives;
      await ctx.sleep(Math.min(3 * every, 20_000));
      const times = t.log.keepaliveTimes.filter((x) => x >= from);
      const gaps = times.slice(1).map((x, i) => x - times[i]!);
      const worst = Math.max(0, ...gaps, times.length ? times[0]! - from : Date.now() - from);
      const allowance = timingWindow(every, ctx.env.timeScale).latestMs;
      return verdictOf(
        `keepalives every ${every} ms`,
        check(
          t.log.keepalives - before >= 2,
          `the agent sent ${t.log.keepalives - before} keepalives in ${3 * every} ms`,
          'at least 2',
          show(t.log.keepalives - before),
        ),
        check(
          worst <= allowance,
          `the agent let ${worst} ms pass between keepalives, announcing ${every} ms`,
          `at most ${allowance} ms`,
          `${worst} ms`,
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.liveness.silent-peer',
    title: 'A requester that sends nothing for three keepalive intervals is counted lost: the agent closes with 1006',
    level: 'SHOULD',
    profile: 'nats',
    reason:
      'the case judges the close with 1006, a SHOULD (TAP-NATS-015); counting the peer lost (TAP-NATS-013, MUST) is how it gets there',
    requirements: ['TAP-NATS-013', 'TAP-NATS-015'],
    needs: NATS,
    budgetMs: 30_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      // The harness announced 1000 ms keepalives: the agent counts it lost after 3000 ms of silence.
      t.silence();
      // The agent's silence starts with the last message the harness sent, not with silence().
      const since = t.lastSentAt;
      const window = timingWindow(3000, ctx.env.timeScale);
      const closed = await peer.waitClosed(window.latestMs + ctx.scaled(2000));
      const elapsed = Date.now() - since;
      if (!closed) return judgeOccurrence(window, undefined, 'the close of a silent connection');
      return verdictOf(
        'lost after the missed keepalives',
        judgeOccurrence(window, elapsed, 'the close of a silent connection'),
        check(peer.closed?.code === 1006, 'the agent closed a silent connection with the wrong code', '1006', show(peer.closed?.code)),
      );
    },
  }),
  defineCase({
    id: 'nats.open.keepalive-range',
    title: 'An open request announcing Tap-Keepalive-Ms 1e13, 0, 60001, 1e3 or +1000 is refused with 1008; 100, 60000 and none are taken',
    profile: 'nats',
    requirements: ['TAP-NATS-045'],
    needs: NATS,
    run: async (ctx) => {
      const bad = ['1e13', '0', '60001', '99', '1.5', '1e3', '+1000', '1000.0'];
      const good = ['100', '60000', undefined];
      const verdicts = await openVerdicts(
        ctx,
        [...bad, ...good].map((keepaliveMs) => ({ connection: newConnectionId(), keepaliveMs })),
        true,
      );
      return verdictOf(
        'refused outside 100–60 000 ms, taken within',
        ...bad.map((value, i) =>
          check(
            verdicts[i] === '1008',
            `an open request announcing Tap-Keepalive-Ms ${value} was not refused with 1008`,
            '1008',
            show(verdicts[i]),
          ),
        ),
        ...good.map((value, i) =>
          check(
            verdicts[bad.length + i] === 'ok',
            `an open request ${value === undefined ? 'without Tap-Keepalive-Ms' : `announcing Tap-Keepalive-Ms ${value}`} was not accepted`,
            'ok',
            show(verdicts[bad.length + i]),
          ),
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.liveness.default-keepalive',
    title: 'An open request without Tap-Keepalive-Ms announces 1000 ms: the agent counts a silent requester lost after 3000 ms',
    profile: 'nats',
    requirements: ['TAP-NATS-050'],
    needs: NATS,
    budgetMs: 40_000,
    run: async (ctx) => {
      const raw = await openRaw(ctx, undefined);
      try {
        if (raw.verdict !== 'ok')
          return verdictOf('', check(false, 'the agent refused an open request without Tap-Keepalive-Ms', 'ok', show(raw.verdict)));
        const every = Number(raw.announced) || 1000;
        // Silent from the open request on: lost by 3000 ms, within the suite's timing window.
        const window = timingWindow(3000, ctx.env.timeScale);
        await sleep(window.latestMs + ctx.scaled(1000));
        const before = raw.seen.length;
        await sleep(Math.min(2 * every, 20_000) + ctx.scaled(500));
        const after = raw.seen.length - before;
        const close = raw.seen.find((m) => m.control === 'close');
        return verdictOf(
          'a silent requester that announced no interval was counted lost',
          check(
            after === 0,
            `the agent went on publishing ${Math.round((window.latestMs + ctx.scaled(1000)) / 1000)} s after an open request without Tap-Keepalive-Ms, from a requester that sent nothing: it did not take the missing header as 1000 ms`,
            'nothing after the connection is lost',
            `${after} more messages`,
          ),
          check(
            close === undefined || close.code === '1006',
            'the agent closed the silent connection with the wrong code',
            '1006',
            show(close?.code),
          ),
        );
      } finally {
        await raw.end();
      }
    },
  }),
];
