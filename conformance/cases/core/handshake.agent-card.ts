/** core profile, Agent card (spec: handshake#agent-card). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.ack-card',
    title: "The ack's card names the agent as its source and lists each capability once",
    profile: 'core',
    requirements: ['TAP-HS-018', 'TAP-HS-019'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const card = hs.ack.msg.payload.agent;
      const names: string[] = (card?.capabilities ?? []).map((c: { name: string }) => c.name);
      const dup = names.find((n, i) => names.indexOf(n) !== i);
      return verdictOf(
        `card ${card?.agent_id} with ${names.length} capabilities`,
        check(
          card?.agent_id === hs.ack.msg.source,
          "the ack's card agent_id differs from the ack's source",
          `agent_id ${hs.ack.msg.source}`,
          `agent_id ${card?.agent_id}`,
        ),
        check(dup === undefined, `the card lists capability ${dup} twice`, 'each capability once', `${dup} twice`),
      );
    },
  }),
];
