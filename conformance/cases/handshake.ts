/** Core profile: the four-step handshake, negotiation, and what may flow before it (spec: handshake). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { jcs } from '../mac.ts';
import { handshake, harnessCard, initPayload, DEFAULT_PARAMS } from '../steps.ts';
import { between, fail, judgeOccurrence, judgePunctuality, pass, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import { check, checkError, expectAlive, expectError, expectNoTask, need, require, show, verdictOf, wrongReply } from './kit.ts';

const P = 'core' as const;

/** Opens a connection and sends one handshake.init; returns the peer and the reply. */
async function initOnly(ctx: CaseContext, payload?: (peer: Peer) => Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const peer = need(await ctx.connect());
  const sent = await peer.post('handshake.init', payload ? payload(peer) : initPayload(peer, {}), extra);
  const reply = need(await peer.reply(sent));
  return { peer, sent, reply };
}

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

export const handshakeCases: Case[] = [
  defineCase({
    id: 'core.handshake.complete',
    title: 'The agent completes the four-step handshake: init → ack → ready → go',
    profile: P,
    spec: 'handshake#overview',
    reason: 'the case walks the whole handshake of the Overview; the rules it checks are those of handshake.go and the session id',
    requirements: ['TAP-HS-012', 'TAP-ENV-012', 'TAP-ENV-011'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const ack = hs.ack.msg;
      const p = ack.payload;
      return verdictOf(
        'init → ack → ready → go completed',
        check(
          ack.reply_to === hs.init.message_id,
          'handshake.ack does not answer the init',
          `reply_to ${hs.init.message_id}`,
          `reply_to ${ack.reply_to}`,
        ),
        check(p.resumed === false, 'a fresh session is acknowledged with resumed: true', 'resumed: false', show(p.resumed)),
        check(
          hs.go?.msg.session_id === p.session_id,
          'handshake.go does not carry the session id of the ack',
          p.session_id,
          show(hs.go?.msg.session_id),
        ),
        check(
          ack.session_id === undefined || ack.session_id === p.session_id,
          'the envelope session_id of handshake.ack differs from its payload',
          `session_id ${p.session_id}`,
          `session_id ${ack.session_id}`,
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.ack-card',
    title: "The ack's card names the agent as its source and lists each capability once",
    profile: P,
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
  defineCase({
    id: 'core.handshake.version-choice',
    title: 'The agent chooses the highest version it shares with the requester',
    profile: P,
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
    profile: P,
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
  defineCase({
    id: 'core.handshake.requester-lists-versions',
    title: 'A requester listing an older version too is served in the version they share',
    profile: P,
    spec: 'handshake#init',
    reason: "the case varies the versions of handshake.init (Init); the rule it checks is version negotiation's (TAP-HS-004)",
    requirements: ['TAP-HS-004', 'TAP-HS-002'],
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0', '1.1'] }));
      const v = s.hs.ack.msg.payload.version;
      return verdictOf(
        `chose ${v}`,
        check(v === '1.0' || v === '1.1', `the agent chose ${v}, which the requester did not offer`, '1.0 or 1.1', String(v)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.identity-source',
    title: "A handshake.init whose source differs from its card's agent_id gets IDENTITY_MISMATCH and no session",
    profile: P,
    requirements: ['TAP-HS-003', 'TAP-HS-021'],
    run: async (ctx) => {
      const { peer, sent, reply } = await initOnly(ctx, (p) => ({ ...initPayload(p, {}), agent: harnessCard('somebody-else') }));
      require(
        checkError(
          reply.msg,
          { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id, registryRetryable: true },
          'init with source ≠ agent.agent_id',
        ),
      );
      if (peer.closed) return pass('refused (and the connection closed)');
      const again = await handshake(peer);
      return verdictOf(
        'refused without creating a session',
        again.ok
          ? null
          : fail(`a correct handshake after the refused one failed: ${again.outcome.detail}`, 'a session', again.outcome.observed),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.identity-target',
    title: 'A handshake.init whose target is neither "*" nor the agent gets IDENTITY_MISMATCH',
    profile: P,
    requirements: ['TAP-HS-003'],
    run: async (ctx) => {
      const { sent, reply } = await initOnly(ctx, undefined, { target: 'not-this-agent' });
      return verdictOf(
        'refused',
        checkError(reply.msg, { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id }, 'init with target "not-this-agent"'),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.target-own-id',
    title: "A handshake.init may name the agent's own id as target",
    profile: P,
    spec: 'envelope#source-and-target',
    reason:
      "the case proves that Source and target lets handshake.init name the agent's own id (TAP-ENV-008); the rule it checks first is handshake.init's (TAP-HS-003)",
    requirements: ['TAP-HS-003', 'TAP-ENV-008'],
    run: async (ctx) => {
      const id = ctx.env.probe.agentId;
      if (!id) return fail('the agent never told its id (the first handshake failed)', 'an agent id', 'none');
      need(await ctx.sessionWith({ target: id }));
      return pass(`target ${id} accepted`);
    },
  }),
  defineCase({
    id: 'core.handshake.session-id',
    title: 'Each session gets a fresh session_id of at least 128 bits and its own resume_token',
    profile: P,
    requirements: ['TAP-HS-006'],
    run: async (ctx) => {
      const a = need(await ctx.sessionWith()).hs.ack.msg.payload;
      const b = need(await ctx.sessionWith()).hs.ack.msg.payload;
      const short = [a.session_id, b.session_id].find((s: string) => typeof s !== 'string' || s.length < 22);
      return verdictOf(
        'two sessions, two ids, two tokens',
        check(
          short === undefined,
          'a session_id shorter than 22 base64url characters cannot hold 128 random bits',
          '≥ 22 characters',
          show(short),
        ),
        check(a.session_id !== b.session_id, 'two sessions got the same session_id', 'different session ids', a.session_id),
        check(a.resume_token !== b.resume_token, 'two sessions got the same resume_token', 'different resume tokens', a.resume_token),
        check(
          typeof a.resume_token === 'string' && a.resume_token.length >= 22,
          'a resume_token this short cannot hold 128 random bits',
          '≥ 22 characters',
          show(a.resume_token),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.granted-missing',
    title: 'Every required capability is in exactly one of granted and missing, and the handshake completes anyway',
    profile: P,
    requirements: ['TAP-HS-007', 'TAP-HS-008'],
    run: async (ctx) => {
      const offered: string[] = (ctx.card?.capabilities ?? []).map((c: { name: string }) => c.name);
      const requires = [...offered.slice(0, 2), 'x-conformance.not-a-capability', 'zz.nothing.here'];
      const s = need(await ctx.sessionWith({ requires }));
      const { granted, missing } = s.hs.ack.msg.payload;
      const problems: string[] = [];
      for (const name of requires) {
        const n = Number(granted.includes(name)) + Number(missing.includes(name));
        if (n !== 1) problems.push(`${name} appears ${n} times`);
      }
      for (const name of offered.slice(0, 2)) if (!granted.includes(name)) problems.push(`${name} is offered in the card but not granted`);
      for (const name of ['x-conformance.not-a-capability', 'zz.nothing.here'])
        if (!missing.includes(name)) problems.push(`${name} is not in missing`);
      return verdictOf(
        'granted and missing partition requires',
        check(
          problems.length === 0,
          problems.join('; '),
          'each name in exactly one list',
          `granted ${show(granted)}, missing ${show(missing)}`,
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.params-limits',
    title: "Final max_message_bytes and max_concurrent_tasks are the smaller of proposed and the agent's own",
    profile: P,
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const low = need(await ctx.sessionWith({ params: { max_message_bytes: 4096, max_concurrent_tasks: 1 } })).hs.ack.msg.payload;
      const high = need(await ctx.sessionWith({ params: { max_message_bytes: 2 ** 40, max_concurrent_tasks: 1_000_000 } })).hs.ack.msg
        .payload;
      const cardMax = high.agent?.limits?.max_message_bytes;
      return verdictOf(
        'the smaller value wins both ways',
        check(
          low.params.max_message_bytes === 4096,
          'a lower proposed max_message_bytes was not kept',
          '4096',
          show(low.params.max_message_bytes),
        ),
        check(
          low.params.max_concurrent_tasks === 1,
          'a lower proposed max_concurrent_tasks was not kept',
          '1',
          show(low.params.max_concurrent_tasks),
        ),
        check(
          high.params.max_message_bytes === cardMax,
          "a huge proposed max_message_bytes did not fall to the card's limit",
          show(cardMax),
          show(high.params.max_message_bytes),
        ),
        check(
          high.params.max_concurrent_tasks < 1_000_000,
          'a huge proposed max_concurrent_tasks was accepted unchanged',
          "the agent's own limit",
          show(high.params.max_concurrent_tasks),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.params-heartbeat',
    title: 'Final heartbeat_ms is the larger of both sides, clamped to [1000, 60000]',
    profile: P,
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const low = need(await ctx.sessionWith({ params: { heartbeat_ms: 10 } })).hs.ack.msg.payload.params.heartbeat_ms;
      const high = need(await ctx.sessionWith({ params: { heartbeat_ms: 3_600_000 } })).hs.ack.msg.payload.params.heartbeat_ms;
      const mid = need(await ctx.sessionWith({ params: { heartbeat_ms: 59_000 } })).hs.ack.msg.payload.params.heartbeat_ms;
      return verdictOf(
        `heartbeat 10 → ${low}, 3 600 000 → ${high}, 59 000 → ${mid}`,
        check(low >= 1000 && low <= 60000, 'a proposal of 10 ms was not clamped into [1000, 60000]', 'a value in [1000, 60000]', show(low)),
        check(high === 60000, 'a proposal of one hour was not clamped to 60000', '60000', show(high)),
        check(mid === 59000, 'a proposal of 59 000 ms (larger than any agent value within range) was not kept', '59000', show(mid)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.params-request-timeout',
    title: "Final request_timeout_ms is the requester's proposal",
    profile: P,
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const v = need(await ctx.sessionWith({ params: { request_timeout_ms: 12345 } })).hs.ack.msg.payload.params.request_timeout_ms;
      return verdictOf('kept', check(v === 12345, 'the proposed request_timeout_ms was changed', '12345', show(v)));
    },
  }),
  defineCase({
    id: 'core.handshake.params-streaming',
    title: 'A requester that proposes streaming: false gets streaming: false',
    profile: P,
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const v = need(await ctx.sessionWith({ params: { streaming: false } })).hs.ack.msg.payload.params.streaming;
      return verdictOf('kept', check(v === false, 'streaming: false was not kept', 'false', show(v)));
    },
  }),
  defineCase({
    id: 'core.handshake.params-omitted',
    title: "Omitted proposals take the agent's values and still yield complete params",
    profile: P,
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const payload = { ...initPayload(peer, {}), params: {} };
      const sent = await peer.post('handshake.init', payload);
      const ack = need(await peer.reply(sent));
      if (ack.msg.type !== 'handshake.ack') return wrongReply('init with empty params', 'handshake.ack', ack.msg);
      const p = ack.msg.payload.params ?? {};
      return verdictOf(
        'complete params',
        check(p.integrity === 'none', 'no integrity proposal must mean "none"', '"none"', show(p.integrity)),
        check(
          typeof p.request_timeout_ms === 'number',
          'no request_timeout_ms in the final params',
          'a number',
          show(p.request_timeout_ms),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.ready-mismatch',
    title: 'handshake.ready with params other than the final ones: fatal PROTOCOL_VIOLATION and the transport closes',
    profile: P,
    requirements: ['TAP-HS-011', 'TAP-ERR-007'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const r = await handshake(peer, { readyParams: (p) => ({ ...p, max_concurrent_tasks: Number(p.max_concurrent_tasks) + 7 }) });
      if (r.ok)
        return fail(
          'the agent answered handshake.go to a ready whose params differ from the ack',
          'error PROTOCOL_VIOLATION (fatal)',
          'handshake.go',
        );
      const err = peer.received.find((m) => m.msg.type === 'error');
      require(checkError(err?.msg, { code: 'PROTOCOL_VIOLATION', fatal: true }, 'handshake.ready with changed params'));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      return verdictOf('refused and closed', check(closed, 'the transport stayed open after the fatal error', 'closed', 'open after 5 s'));
    },
  }),
  defineCase({
    id: 'core.handshake.ready-canonical',
    title: 'handshake.ready params are compared in canonical form: reordered members are equal',
    profile: P,
    requirements: ['TAP-HS-010', 'TAP-HS-012'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const r = await handshake(peer, {
        readyParams: (p) => Object.fromEntries(Object.entries(p).reverse()),
      });
      if (!r.ok)
        return fail(
          `the agent refused a ready whose params equal the ack's in another member order: ${r.outcome.detail}`,
          'handshake.go',
          r.outcome.observed,
        );
      return pass(`params ${jcs(peer.state.params)} accepted in reverse member order`);
    },
  }),
  defineCase({
    id: 'core.handshake.required-before-go',
    title: 'A task.request before the handshake gets HANDSHAKE_REQUIRED, has no effect, and the transport stays open',
    profile: P,
    requirements: ['TAP-HS-014', 'TAP-ERR-009'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const taskId = peer.ids.task('early');
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 1 },
        { task_id: taskId, session_id: 'AAAAAAAAAAAAAAAAAAAAAA' },
        { deliberate: 'sent before the handshake' },
      );
      require(await expectError(peer, sent, { code: 'HANDSHAKE_REQUIRED' }, 'task.request before handshake.init'));
      require(await expectAlive(peer, 'HANDSHAKE_REQUIRED'));
      need(await handshake(peer));
      return verdictOf('refused, no task, session still possible', await expectNoTask(peer, taskId, 'the early request was refused'));
    },
  }),
  defineCase({
    id: 'core.handshake.required-after-ack',
    title: 'Between ack and go the session is not established: a task.request gets HANDSHAKE_REQUIRED',
    profile: P,
    requirements: ['TAP-HS-014', 'TAP-HS-013'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      need(await handshake(peer, { stopAfterAck: true }));
      const taskId = peer.ids.task('early');
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 1 },
        { task_id: taskId },
        { deliberate: 'sent before handshake.go' },
      );
      require(await expectError(peer, sent, { code: 'HANDSHAKE_REQUIRED' }, 'task.request between ack and ready'));
      const ready = await peer.post('handshake.ready', { params: peer.state.params! });
      const go = need(await peer.reply(ready));
      if (go.msg.type !== 'handshake.go') return wrongReply('handshake.ready after the refused request', 'handshake.go', go.msg);
      peer.state.established = true;
      return verdictOf('refused without effect', await expectNoTask(peer, taskId, 'the request before go was refused'));
    },
  }),
  defineCase({
    id: 'core.handshake.ping-before-init',
    title: 'A ping before the handshake is answered with pong',
    profile: P,
    spec: 'handshake#before-go',
    reason: "a ping is what may come Before go; the rules it checks are handshake.init's (TAP-HS-001) and the heartbeats' (TAP-LIM-008)",
    requirements: ['TAP-HS-001', 'TAP-LIM-008'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      need(await peer.ping());
      need(await handshake(peer));
      return pass('pong before the handshake, then a normal session');
    },
  }),
  defineCase({
    id: 'core.handshake.ready-out-of-order',
    title: 'A handshake.ready before any ack gets PROTOCOL_VIOLATION',
    profile: P,
    requirements: ['TAP-HS-015'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const sent = await peer.post(
        'handshake.ready',
        { params: { ...DEFAULT_PARAMS, integrity: 'none' } },
        { session_id: 'AAAAAAAAAAAAAAAAAAAAAA' },
      );
      require(
        await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION', registryRetryable: true }, 'handshake.ready with no handshake.init'),
      );
      if (peer.closed) return pass('refused (and closed)');
      need(await handshake(peer));
      return pass('refused; a proper handshake followed');
    },
  }),
  defineCase({
    id: 'core.handshake.second-init',
    title: 'A second handshake.init on an established session gets PROTOCOL_VIOLATION and leaves the session as it was',
    profile: P,
    requirements: ['TAP-HS-015'],
    run: async (ctx) => {
      const { peer } = need(await ctx.sessionWith());
      const sessionId = peer.state.sessionId;
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      require(await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init'));
      require(await expectAlive(peer, 'the second init'));
      return verdictOf(
        'refused; the session goes on',
        check(peer.state.sessionId === sessionId, 'the session changed', sessionId!, String(peer.state.sessionId)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.fresh-after-error',
    title: 'After a non-fatal error answering handshake.init the requester can start again on the same transport',
    profile: P,
    requirements: ['TAP-HS-021'],
    run: async (ctx) => {
      const { peer, reply } = await initOnly(ctx, (p) => ({ ...initPayload(p, {}), agent: harnessCard('somebody-else') }));
      if (reply.msg.type !== 'error') return wrongReply('init with a mismatched card', 'error IDENTITY_MISMATCH', reply.msg);
      if (reply.msg.payload.fatal === true) {
        const closed = await peer.waitClosed(ctx.scaled(5000));
        return verdictOf(
          'the error was fatal and the transport closed',
          check(closed, 'a fatal error did not close the transport', 'closed', 'open'),
        );
      }
      need(await handshake(peer));
      return pass('a new handshake.init succeeded after the error');
    },
  }),
  defineCase({
    id: 'core.handshake.ready-extra-member',
    title: 'handshake.ready params holding members the final params lack are not refused: unknown members are ignored',
    profile: P,
    requirements: ['TAP-HS-040', 'TAP-HS-010'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      // A parameter of a later minor version and an extension member, beside the final params.
      need(await handshake(peer, { readyParams: (p) => ({ ...p, keepalive_policy: 'lazy', 'x-conform-note': { n: 1 } }) }));
      return verdictOf('handshake.go', await expectAlive(peer, 'a ready with extra params members'));
    },
  }),
  defineCase({
    id: 'core.handshake.later-init-star',
    title: 'A later handshake.init naming "*" and no session gets PROTOCOL_VIOLATION; one from a stranger gets IDENTITY_MISMATCH',
    profile: P,
    requirements: ['TAP-HS-041'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { session_id: _s, ...later } = peer.envelope('handshake.init', { ...initPayload(peer, {}), requires: ['x.other'] });
      const sent = await peer.send({ ...later, target: '*' });
      require(await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION' }, 'a later init with target "*" and no session_id'));
      const strangerId = `${peer.state.selfId}.stranger`;
      const { session_id: _t, ...other } = peer.envelope('handshake.init', { ...initPayload(peer, {}), agent: harnessCard(strangerId) });
      const stranger = await peer.send({ ...other, source: strangerId, target: '*' });
      require(await expectError(peer, stranger, { code: 'IDENTITY_MISMATCH' }, 'a later init from another source'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'two later inits'));
    },
  }),
  defineCase({
    id: 'core.handshake.later-init-integrity',
    title: 'A later handshake.init proposing integrity gets PROTOCOL_VIOLATION, not fatal, and the session goes on',
    profile: P,
    requirements: ['TAP-INT-041', 'TAP-HS-015'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const payload = initPayload(peer, { params: { integrity: { alg: 'hmac-sha256', key_id: 'tap-conform.no-such-key' } } });
      const sent = await peer.post('handshake.init', payload);
      const r = need(await peer.reply(sent));
      require(checkError(r.msg, { code: 'PROTOCOL_VIOLATION', replyTo: sent.message_id }, 'a later init proposing integrity'));
      require(
        check(r.msg.payload.fatal !== true, 'the PROTOCOL_VIOLATION is marked fatal', 'fatal absent or false', show(r.msg.payload.fatal)),
      );
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a later init proposing integrity'));
    },
  }),
  defineCase({
    id: 'core.handshake.heartbeat-stable',
    title: "The agent's own heartbeat_ms is the same in every session: the same proposal gets the same final value",
    profile: P,
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
];

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

handshakeCases.push(...stallCases(false), ...stallCases(true));
