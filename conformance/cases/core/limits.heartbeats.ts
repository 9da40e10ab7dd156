/** core profile, Heartbeats (spec: limits#heartbeats). */
import type { CaseContext } from '../../context.ts';
import { between, judgeOccurrence, type Observed, type Outcome, pass, skipped, timingWindow } from '../../verdict.ts';
import { type Case, defineCase } from '../../case.ts';
import { timedCases } from '../timing.ts';
import { check, need, require, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';
import { goneScenario } from '../liveness.ts';

/** The heartbeat scenario: stay silent after the handshake; when does the agent ping? */
async function heartbeatScenario(ctx: CaseContext): Promise<{ at?: Observed; nominal: number; problem?: Outcome }> {
  const s = await ctx.sessionWith({ params: { heartbeat_ms: 1000 } });
  if (!s.ok) return { nominal: 0, problem: s.outcome };
  const peer = s.value.peer;
  const nominal = Number(peer.state.params?.heartbeat_ms);
  if (!(nominal <= 20_000))
    return { nominal, problem: skipped(`heartbeat_ms is ${nominal}; waiting for a ping that far off is left out of a conformance run`) };
  // Silence starts when the agent received our last message, the ready: between its sending and
  // the arrival of handshake.go.
  const go = s.value.hs.go!;
  const readySent = ctx.transcript.entries.filter((e) => e.dir === 'out' && e.type === 'handshake.ready').pop()?.t ?? go.at;
  const w = timingWindow(nominal, ctx.env.timeScale);
  const ping = await peer.poll((r) => r.msg.type === 'ping', w.latestMs + 200);
  const now = ctx.transcript.now();
  return { at: ping ? between(now - go.at, now - readySent) : undefined, nominal };
}

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.heartbeat-stable',
    title: "The agent's own heartbeat_ms is the same in every session: the same proposal gets the same final value",
    profile: 'core',
    requirements: ['TAP-LIM-043', 'TAP-HS-009'],
    run: async (ctx) => {
      const finals: number[] = [];
      for (let i = 0; i < 2; i++) {
        const { peer, hs } = need(await ctx.sessionWith({ params: { heartbeat_ms: 1000 } }));
        finals.push(Number(hs.ack.msg.payload.params?.heartbeat_ms));
        await peer.close();
      }
      // Proposing the agent's value, now known, yields exactly that value.
      const { hs } = need(await ctx.sessionWith({ params: { heartbeat_ms: finals[0] } }));
      const exact = Number(hs.ack.msg.payload.params?.heartbeat_ms);
      return verdictOf(
        `heartbeat_ms ${finals[0]} each time`,
        check(
          finals[0] === finals[1],
          'two sessions proposing 1000 ms got different heartbeat_ms',
          `${finals[0]} twice`,
          finals.join(' and '),
        ),
        check(exact === finals[0], `proposing ${finals[0]} ms gave ${exact} ms`, String(finals[0]), String(exact)),
      );
    },
  }),
  ...timedCases({
    profile: 'core',
    budgetMs: 70_000,
    key: 'heartbeat',
    observe: heartbeatScenario,
    nominalMs: (r) => r.nominal,
    at: (r) => r.at,
    what: (r) => `the agent's ping after ${r.nominal} ms of silence`,
    occurrence: {
      id: 'core.limits.heartbeat-ping',
      title: 'Having heard nothing for heartbeat_ms, the agent pings, and not earlier',
      requirements: ['TAP-LIM-006'],
    },
    punctuality: { id: 'core.limits.heartbeat-punctual', title: 'The heartbeat ping comes punctually', requirements: ['TAP-LIM-007'] },
  }),
  defineCase({
    id: 'core.limits.pong',
    title: 'The agent answers every ping with a pong carrying its message_id',
    profile: 'core',
    requirements: ['TAP-LIM-008'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const pings = [await peer.post('ping', {}), await peer.post('ping', {}), await peer.post('ping', {})];
      for (const p of pings) {
        const r = need(await peer.reply(p));
        require(check(r.msg.type === 'pong', `a ping was answered ${describeMessage(r.msg)}`, 'pong', describeMessage(r.msg)));
      }
      return pass('three pongs');
    },
  }),
  defineCase({
    id: 'core.limits.peer-gone',
    title: 'A peer that leaves three pings in a row unanswered is considered gone, and not before',
    profile: 'core',
    requirements: ['TAP-LIM-009'],
    needs: { capabilities: ['tap.test.sleep'] },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      const o = judgeOccurrence(
        timingWindow(r.heartbeat * 4, ctx.env.timeScale),
        r.goneAt,
        'the loss of the transport after three unanswered pings',
      );
      if (o.verdict !== 'PASS') return o;
      return verdictOf(
        o.detail,
        check(r.pings >= 3, `the agent gave up after ${r.pings} unanswered pings`, 'three unanswered pings first', `${r.pings}`),
      );
    },
  }),
];
