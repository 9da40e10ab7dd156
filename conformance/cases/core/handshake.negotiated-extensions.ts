/** core profile, Negotiated extensions of TAP 1.1 (spec: handshake#negotiated-extensions). */
import { type Case, defineCase } from '../../case.ts';
import { harnessCard, handshake, initPayload } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { ECHO } from './kit.ts';
import { check, checkError, firstFailure, need, require, runTask, show, verdictOf } from '../kit.ts';

/** The extension of the conformance chapter, whose stamp the cases look for (spec: conformance#conformance-extension). */
const STAMP_URI = 'urn:tap:test:stamp';
const STAMP = 'tap-test-stamp';

/** A URI no agent supports: an extension of this run only. */
function unknownUri(tag: string): string {
  return `urn:x-tap-conform:absent:${tag}:${Math.random().toString(36).slice(2, 10)}`;
}

type Ext = { uri: string; required?: boolean };

/** The extensions the agent's card lists in the ack of a plain handshake of 1.1. */
function cardExtensions(ack: { msg: { payload?: Record<string, unknown> } }): Ext[] {
  const card = ack.msg.payload?.agent as { extensions?: unknown } | undefined;
  return Array.isArray(card?.extensions) ? (card.extensions as Ext[]) : [];
}

export const cases: Case[] = [
  defineCase({
    id: 'core.extensions.required-missing',
    title: 'An init that requires an extension the agent does not support gets a non-fatal EXTENSION_REQUIRED naming it, and no session',
    profile: 'core',
    requirements: ['TAP-EXT-104', 'TAP-HS-021'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const absent = unknownUri('required');
      const card = { ...harnessCard(peer.state.selfId), extensions: [{ uri: absent, required: true }] };
      const init = await peer.post('handshake.init', initPayload(peer, { versions: ['1.1', '1.0'], card }));
      const reply = need(await peer.reply(init));
      require(
        checkError(reply.msg, { code: 'EXTENSION_REQUIRED', replyTo: init.message_id }, 'an init requiring an unsupported extension'),
      );
      const details = (reply.msg.payload?.details ?? {}) as { missing?: unknown; extensions?: unknown };
      require(
        firstFailure(
          check(
            Array.isArray(details.missing) && details.missing.length === 1 && details.missing[0] === absent,
            `EXTENSION_REQUIRED does not name exactly the missing extension ${absent} in details.missing`,
            `details.missing [${JSON.stringify(absent)}]`,
            show(details.missing),
          ),
          check(
            Array.isArray(details.extensions),
            'EXTENSION_REQUIRED has no details.extensions list of the extensions the agent supports',
            'details.extensions, a list',
            show(details.extensions),
          ),
          check(reply.msg.payload?.fatal !== true, 'EXTENSION_REQUIRED was marked fatal', 'not fatal', 'fatal: true'),
        ),
      );
      // Not fatal and no state left: an init without the requirement opens a session on the same transport.
      const again = need(await handshake(peer, { versions: ['1.1', '1.0'] }));
      return verdictOf(
        `EXTENSION_REQUIRED naming ${absent}; a new init opened a session`,
        check(again.go !== undefined, 'no session after the refused init', 'handshake.go', 'nothing'),
      );
    },
  }),
  defineCase({
    id: 'core.extensions.unknown-optional-ignored',
    title: 'An extension offered without required that the agent does not support is left out of the ack, and the handshake completes',
    profile: 'core',
    requirements: ['TAP-EXT-103', 'TAP-EXT-101'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const absent = unknownUri('optional');
      const card = { ...harnessCard(peer.state.selfId), extensions: [{ uri: absent }] };
      const hs = need(await handshake(peer, { versions: ['1.1', '1.0'], card }));
      const listed = hs.ack.msg.payload?.extensions;
      return verdictOf(
        'the handshake completed and the ack lists no unsupported extension',
        check(hs.go !== undefined, 'the handshake did not complete', 'handshake.go', 'nothing'),
        check(
          Array.isArray(listed) && !listed.includes(absent),
          `the ack of 1.1 does not list the session's extensions without ${absent}`,
          'extensions, a list without the unknown URI',
          show(listed),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.extensions.accepted-listed',
    title: "An extension of the agent's card that the requester offers is listed in the ack's extensions, and is used in the session",
    profile: 'core',
    requirements: ['TAP-EXT-101', 'TAP-EXT-102'],
    needs: ECHO,
    run: async (ctx) => {
      const first = need(await ctx.sessionWith({ versions: ['1.1', '1.0'] }));
      const supported = cardExtensions(first.hs.ack);
      const ackList = first.hs.ack.msg.payload?.extensions;
      require(
        check(
          Array.isArray(ackList) && ackList.length === 0,
          'offered no extension, the agent lists some in the ack',
          'extensions []',
          show(ackList),
        ),
      );
      const offer = supported.find((e) => e.required !== true) ?? supported[0];
      if (!offer) return unimplemented("the agent's card lists no extension, so none can be offered and accepted");
      const peer = need(await ctx.connect());
      const card = { ...harnessCard(peer.state.selfId), extensions: [{ uri: offer.uri }] };
      const hs = need(await handshake(peer, { versions: ['1.1', '1.0'], card }));
      const listed = hs.ack.msg.payload?.extensions;
      const cardUris = cardExtensions(hs.ack).map((e) => e.uri);
      require(
        firstFailure(
          check(
            Array.isArray(listed) && listed.length === 1 && listed[0] === offer.uri,
            `offered ${offer.uri}, which the agent's card lists, the ack's extensions do not list exactly it`,
            `extensions [${JSON.stringify(offer.uri)}]`,
            show(listed),
          ),
          check(
            cardUris.includes(offer.uri),
            `the card of the ack does not list ${offer.uri}, which the session uses`,
            `the card's extensions with ${offer.uri}`,
            show(cardUris),
          ),
        ),
      );
      if (offer.uri !== STAMP_URI) return verdictOf(`the ack lists ${offer.uri}`);
      const t = need(await runTask(peer, 'tap.test.echo', 'stamped'));
      const unstamped = [t.accepted, ...t.stream].find((r) => r.msg.metadata?.[STAMP] !== STAMP_URI);
      return verdictOf(
        `the ack lists ${STAMP_URI}, and the task's stream carries its stamp`,
        check(
          !unstamped,
          `in a session that uses ${STAMP_URI}, the agent's ${unstamped?.msg.type} lacks metadata.${STAMP}`,
          `metadata.${STAMP} ${STAMP_URI}`,
          show(unstamped?.msg.metadata),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.extensions.unused-not-used',
    title: 'An extension the requester did not offer is never used in the session: its members are not sent',
    profile: 'core',
    requirements: ['TAP-EXT-105'],
    needs: ECHO,
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.1', '1.0'] }));
      const supported = cardExtensions(s.hs.ack).map((e) => e.uri);
      if (!supported.includes(STAMP_URI))
        return unimplemented(`the agent's card does not list ${STAMP_URI}, whose members the case can recognise`);
      // The harness sends the stamp itself: an unused extension's member is ignored, never echoed or acted on.
      const t = need(await runTask(s.peer, 'tap.test.echo', 'plain', { extra: { metadata: { [STAMP]: STAMP_URI } } }));
      const stamped = [t.accepted, ...t.stream].find((r) => r.msg.metadata?.[STAMP] !== undefined);
      return verdictOf(
        `no message of the task carries metadata.${STAMP}`,
        check(
          !stamped,
          `in a session that does not use ${STAMP_URI}, the agent's ${stamped?.msg.type} carries metadata.${STAMP}`,
          `no metadata.${STAMP}`,
          show(stamped?.msg.metadata),
        ),
      );
    },
  }),
];
