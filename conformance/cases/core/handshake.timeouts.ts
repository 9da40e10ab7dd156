/** core profile, Step timeouts (spec: handshake#timeouts): a stalled handshake is closed after 10 s. */
import type { CaseContext } from '../../context.ts';
import { between, fail, type Observed, type Outcome, timingWindow } from '../../verdict.ts';
import { handshake } from '../../steps.ts';
import type { Case } from '../../case.ts';
import { timedCases } from '../timing.ts';

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

/** The timed rule of one handshake step: the close of a handshake stalled before `step`'s message. */
function stallCases(step: 'init' | 'ready'): Case[] {
  const afterAck = step === 'ready';
  return timedCases({
    profile: 'core',
    budgetMs: 40_000,
    key: `handshake-stall-${step}`,
    observe: (ctx) => stallScenario(ctx, afterAck),
    nominalMs: 10_000,
    at: (r) => r.closedAt,
    what: afterAck ? 'the close after an ack with no handshake.ready' : 'the close of a transport that never sends handshake.init',
    occurrence: {
      id: `core.handshake.timeout-${step}`,
      title: `A handshake stalled before handshake.${step} is closed after the 10 s step timeout, not before, without farewell`,
      requirements: ['TAP-HS-016'],
      also: (r) =>
        r.farewell
          ? fail('the agent sent session.farewell when closing a stalled handshake', 'a close without farewell', 'session.farewell')
          : null,
    },
    punctuality: {
      id: `core.handshake.timeout-${step}-punctual`,
      title: `A handshake stalled before handshake.${step} is closed punctually after 10 s`,
      requirements: ['TAP-HS-017'],
    },
  });
}

export const cases: Case[] = [...stallCases('init'), ...stallCases('ready')];
