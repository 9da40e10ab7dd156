/** core profile, Version negotiation (spec: handshake#version-negotiation). */
import type { CaseContext } from '../../context.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { initOnly } from './kit.ts';
import { initPayload } from '../../steps.ts';
import { check, checkError, need, require, show, verdictOf } from '../kit.ts';
import { type Case, defineCase } from '../../case.ts';

/** The versions the agent says it speaks, from the UNSUPPORTED_VERSION details of a hopeless init. */
async function supportedVersions(ctx: CaseContext): Promise<string[] | Outcome> {
  const { reply } = await initOnly(ctx, (peer) => ({ ...initPayload(peer, {}), versions: ['999.0'] }));
  const bad = checkError(reply.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'a handshake.init offering only version 999.0');
  if (bad) return bad;
  const supported = reply.msg.payload.details?.supported;
  if (!Array.isArray(supported) || supported.length === 0 || !supported.every((v) => typeof v === 'string')) {
    return fail(
      'UNSUPPORTED_VERSION does not list the supported versions in details.supported',
      'details.supported: ["1.0", …]',
      show(reply.msg.payload.details),
    );
  }
  return supported as string[];
}

function versionKey(v: string): number {
  const [maj, min] = v.split('.').map(Number);
  return maj! * 10000 + min!;
}

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.version-choice',
    title: 'The agent chooses the highest version it shares with the requester',
    profile: 'core',
    requirements: ['TAP-HS-004'],
    run: async (ctx) => {
      const supported = await supportedVersions(ctx);
      if (!Array.isArray(supported)) return supported;
      const ones = supported.filter((v) => v.startsWith('1.'));
      if (!ones.includes('1.0'))
        return fail('a TAP 1.0 agent does not list "1.0" among its supported versions', '"1.0" supported', show(supported));
      // Offer an older major, 1.0 and every 1.x the agent speaks, plus one it cannot speak.
      const offered = ['0.9', ...new Set([...ones, '1.0']), '1.999'];
      const best = [...ones].sort((a, b) => versionKey(b) - versionKey(a))[0]!;
      const s = need(await ctx.sessionWith({ versions: offered }));
      const chosen = s.hs.ack.msg.payload.version;
      return verdictOf(
        `chose ${chosen} from ${offered.join(', ')}`,
        check(chosen === best, `the agent chose ${chosen}, not the highest common version ${best}`, best, String(chosen)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.version-unsupported',
    title: 'No common version: UNSUPPORTED_VERSION listing the supported ones, fatal, and the transport closes',
    profile: 'core',
    requirements: ['TAP-HS-005', 'TAP-ERR-005'],
    run: async (ctx) => {
      const { peer, sent, reply } = await initOnly(ctx, (p) => ({ ...initPayload(p, {}), versions: ['2.0', '3.1'] }));
      require(checkError(reply.msg, { code: 'UNSUPPORTED_VERSION', replyTo: sent.message_id, fatal: true }, 'versions ["2.0", "3.1"]'));
      const supported = reply.msg.payload.details?.supported;
      require(
        check(
          Array.isArray(supported) && supported.includes('1.0'),
          'details.supported does not list "1.0"',
          'details.supported containing "1.0"',
          show(reply.msg.payload.details),
        ),
      );
      const closed = await peer.waitClosed(ctx.scaled(5000));
      return verdictOf(
        'refused and closed',
        check(
          closed,
          'the agent did not close the transport after the fatal UNSUPPORTED_VERSION',
          'the transport closed',
          'still open after 5 s',
        ),
      );
    },
  }),
];
