/** core profile, TAP 1.1 (spec: versioning#tap-1-1). */
import { type Case, defineCase } from '../../case.ts';
import { describeMessage } from '../../steps.ts';
import { laterThan } from '../../versions.ts';
import { ECHO } from './kit.ts';
import { check, need, require, runTask, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.version.speaks-1-0',
    title: 'An agent that speaks 1.1 completes a session with a requester that offers only 1.0, in 1.0 and with nothing of 1.1',
    profile: 'core',
    requirements: ['TAP-VER-101', 'TAP-VER-102', 'TAP-HS-004'],
    needs: ECHO,
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const chosen = s.hs.ack.msg.payload.version;
      require(check(chosen === '1.0', `offered only 1.0, the agent chose ${show(chosen)}`, 'version 1.0', show(chosen)));
      // A traceparent is an unknown metadata member in 1.0: the agent carries nothing of 1.1's trace context (spec: envelope#trace-context).
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      need(await runTask(s.peer, 'tap.test.echo', { said: 'in 1.0' }, { extra: { metadata: { traceparent } } }));
      const stamped = s.peer.received.find((r) => r.msg.protocol !== 'tap/1.0');
      require(
        check(
          !stamped,
          `in a session of 1.0 the agent's ${describeMessage(stamped?.msg)} says ${show(stamped?.msg.protocol)}`,
          'tap/1.0 on every message',
          show(stamped?.msg.protocol),
        ),
      );
      const newer = s.peer.received.map((r) => ({ r, what: laterThan(r.msg, '1.0') })).find((x) => x.what !== null);
      return verdictOf(
        'a session of 1.0, every message in tap/1.0 and of 1.0',
        check(
          !newer,
          `in a session of 1.0 the agent sent ${newer?.what} (its ${describeMessage(newer?.r.msg)})`,
          'only what 1.0 defines',
          String(newer?.what),
        ),
      );
    },
  }),
];
