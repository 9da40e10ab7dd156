/** streaming-resume profile, Retention (spec: resume#retention). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.retention.minimum',
    title: 'The agent offers max_retained_messages of at least 256',
    level: 'SHOULD',
    profile: 'streaming-resume',
    reason:
      "the spec recommends a max_retained_messages of at least 256 (a SHOULD in Retention's prose), beside the MUST of TAP-RES-001 it cites",
    requirements: ['TAP-RES-001'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const n = hs.ack.msg.payload.max_retained_messages;
      return verdictOf(`max_retained_messages ${n}`, check(n >= 256, 'max_retained_messages is below 256', '≥ 256', show(n)));
    },
  }),
];
