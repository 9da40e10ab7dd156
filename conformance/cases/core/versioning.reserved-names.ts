/** core profile, Reserved names (spec: versioning#reserved-names). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, verdictOf } from '../kit.ts';

const TEST_CAPABILITIES = [
  'tap.test.echo',
  'tap.test.stream',
  'tap.test.sleep',
  'tap.test.fail',
  'tap.test.plan',
  'tap.test.counter',
  'tap.test.guarded',
];
/** The conformance capabilities TAP 1.1 adds (spec: conformance#test-capabilities-1-1). */
const TEST_CAPABILITIES_1_1 = ['tap.test.ask'];

export const cases: Case[] = [
  defineCase({
    id: 'core.version.reserved-names',
    title: 'The card declares no capability under tap. that the specification does not define',
    profile: 'core',
    requirements: ['TAP-VER-005'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const names: string[] = (hs.ack.msg.payload.agent?.capabilities ?? []).map((c: { name: string }) => c.name);
      const defined = hs.ack.msg.payload.version === '1.1' ? [...TEST_CAPABILITIES, ...TEST_CAPABILITIES_1_1] : TEST_CAPABILITIES;
      const bad = names.filter((n) => n.startsWith('tap.') && !defined.includes(n));
      return verdictOf(
        'none reserved',
        check(bad.length === 0, `the card declares reserved names ${bad.join(', ')}`, 'no undefined tap.* capability', bad.join(', ')),
      );
    },
  }),
];
