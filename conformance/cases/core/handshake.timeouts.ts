/** Steps that several case files of the core profile share. */
import type { CaseContext } from '../../context.ts';
import { between, fail, judgeOccurrence, judgePunctuality, type Observed, type Outcome, timingWindow } from '../../verdict.ts';
import { handshake } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';

const P = 'core' as const;

/** The handshake step timeout scenario: connect, send nothing, time the close (spec: handshake#timeouts). */
async function stallScenario(ctx: CaseContext, afterAck: boolean): Promise<{ closedAt?: Observed; farewell: boolean; problem?: Outcome }> {
  const opened = Date.now();
  const c = await ctx.connect();
  if (!c.ok) return { farewell: false, problem: c.outcome };
  const peer = c.value;
  // The agent's step clock starts somewhere between two of our observations: for the init step
  // between the connection opening and the pong to a ping (a ping is not the awaited init, so it
  // does not end the step); for the ready step between sending the init and receiving the ack.
  let from = opened;
  if (afterAck) {
    from = Date.now();
    const hs = await handshake(peer, { stopAfterAck: true });
    if (!hs.ok) return { farewell: false, problem: hs.outcome };
  } else {
    const alive = await peer.ping();
    if (!alive.ok) return { farewell: false, problem: alive.outcome };
  }
  const to = Date.now();
  const w = timingWindow(10_000, ctx.env.timeScale);
  const closed = await peer.waitClosed(w.latestMs + 500);
  const farewell = peer.received.some((r) => r.msg.type === 'session.farewell');
  const now = Date.now();
  return { closedAt: closed ? between(now - to, now - from) : undefined, farewell };
}

function stallCases(afterAck: boolean): Case[] {
  const step = afterAck ? 'ready' : 'init';
  const key = `handshake-stall-${step}`;
  const what = afterAck ? 'the close after an ack with no handshake.ready' : 'the close of a transport that never sends handshake.init';
  return [
    defineCase({
      id: `core.handshake.timeout-${step}`,
      title: `A handshake stalled before ${afterAck ? 'handshake.ready' : 'handshake.init'} is closed after the 10 s step timeout, not before, without farewell`,
      profile: P,
      requirements: ['TAP-HS-016'],
      budgetMs: 40_000,
      run: async (ctx) => {
        const r = await ctx.shared(key, (c) => stallScenario(c, afterAck));
        if (r.problem) return r.problem;
        const o = judgeOccurrence(timingWindow(10_000, ctx.env.timeScale), r.closedAt, what);
        if (o.verdict !== 'PASS') return o;
        return r.farewell
          ? fail('the agent sent session.farewell when closing a stalled handshake', 'a close without farewell', 'session.farewell')
          : o;
      },
    }),
    defineCase({
      id: `core.handshake.timeout-${step}-punctual`,
      title: `A handshake stalled before ${afterAck ? 'handshake.ready' : 'handshake.init'} is closed punctually after 10 s`,
      profile: P,
      requirements: ['TAP-HS-017'],
      budgetMs: 40_000,
      run: async (ctx) => {
        const r = await ctx.shared(key, (c) => stallScenario(c, afterAck));
        if (r.problem) return r.problem;
        return judgePunctuality(timingWindow(10_000, ctx.env.timeScale), r.closedAt, what);
      },
    }),
  ];
}

export const cases: Case[] = [...stallCases(false), ...stallCases(true)];
