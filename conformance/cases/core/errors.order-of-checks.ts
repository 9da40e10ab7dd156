/** core profile, Order of checks (spec: errors#order-of-checks). */
import { type Case, defineCase } from '../../case.ts';
import type { CaseContext } from '../../context.ts';
import type { Outcome } from '../../verdict.ts';
import type { Received } from '../../peer.ts';
import { check, checkError, expectAlive, expectError, need, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, grant, request, startTask } from '../../steps.ts';
import { expectMalformed } from './kit.ts';
import { fixtureCase, REQUESTER_TYPES } from './fixture-replay.ts';

/**
 * A case of the order of checks: it breaks two rules at once and expects the error of the earlier
 * check (TAP-ERR-010, with `also` the rules it touches besides).
 */
function orderCase(
  id: string,
  title: string,
  caps: string[],
  body: (ctx: CaseContext) => Promise<Outcome>,
  also: string[] = [],
  tasks?: number,
): Case {
  return defineCase({
    id: `core.order.${id}`,
    title,
    profile: 'core',
    requirements: ['TAP-ERR-010', ...also],
    needs: caps.length ? { capabilities: caps } : undefined,
    ...(tasks !== undefined ? { tasks } : {}),
    run: body,
  });
}

/** The reply is error `code`. */
const expectCode = (r: Received, code: string, why: string) => checkError(r.msg, { code }, why);

export const cases: Case[] = [
  defineCase({
    id: 'core.bad-input.malformed-json',
    title: 'A frame that is not JSON gets MALFORMED_MESSAGE and the session goes on',
    profile: 'core',
    spec: 'errors#order-of-checks',
    reason: "a malformed frame is the first step of the Order of checks; the rule it checks is the encoding's (TAP-ENV-001)",
    requirements: ['TAP-ENV-001', 'TAP-ERR-008'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      for (const [text, why] of [
        ['{"protocol":"tap/1.0",', 'truncated JSON'],
        ['not json at all', 'plain text'],
        ['[1,2,3]', 'a top-level array'],
        ['"a string"', 'a top-level string'],
        ['42', 'a top-level number'],
        ['{"a":1}{"b":2}', 'two objects on one line'],
      ] as const)
        await expectMalformed(peer, text, why);
      return verdictOf('each refused; the session goes on', await expectAlive(peer, 'malformed frames'));
    },
  }),
  defineCase({
    id: 'core.tasks.capability-unknown',
    title: 'A capability the agent does not offer gets CAPABILITY_NOT_SUPPORTED',
    profile: 'core',
    // A request the agent must refuse; until it does, it may have become a task.
    tasks: 1,
    requirements: ['TAP-ERR-010', 'TAP-TASK-002'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.request', { capability: 'zz.surely.not.offered', input: {} }, { task_id: peer.ids.task() });
      return verdictOf('refused', await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'an unoffered capability'));
    },
  }),
  defineCase({
    id: 'core.limits.size-first',
    title: 'Size is checked first: an oversized frame that is not even JSON gets MESSAGE_TOO_LARGE',
    profile: 'core',
    requirements: ['TAP-ERR-010', 'TAP-LIM-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 2048 } }));
      const mark = peer.mark();
      await peer.sendText('{' + 'not json '.repeat(1000), 'an oversized frame that is not JSON');
      const r = need(await peer.waitFor((x) => x.index >= mark && x.msg.type === 'error', 'an error for the oversized frame'));
      return verdictOf('MESSAGE_TOO_LARGE', checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'an oversized non-JSON frame'));
    },
  }),
  orderCase(
    'envelope-before-identity',
    'An invalid envelope from a forged source gets INVALID_MESSAGE, not IDENTITY_MISMATCH',
    [],
    async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.status', {}, { task_id: 'UPPER', source: 'mallory' });
      await peer.send(m, { deliberate: 'an invalid task_id and a forged source' });
      return verdictOf(
        'INVALID_MESSAGE',
        expectCode(need(await peer.reply(m)), 'INVALID_MESSAGE', 'an invalid envelope from a forged source'),
      );
    },
  ),
  orderCase(
    'envelope-before-version',
    'An invalid envelope in another major version gets INVALID_MESSAGE, not UNSUPPORTED_VERSION',
    [],
    async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.status', {}, { task_id: 'UPPER', protocol: 'tap/2.0' });
      await peer.send(m, { deliberate: 'an invalid task_id in tap/2.0' });
      return verdictOf('INVALID_MESSAGE', expectCode(need(await peer.reply(m)), 'INVALID_MESSAGE', 'an invalid envelope in tap/2.0'));
    },
  ),
  orderCase(
    'identity-before-type',
    'An unknown type from a forged source gets IDENTITY_MISMATCH, not UNKNOWN_MESSAGE_TYPE',
    [],
    async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.nonsense', {}, { source: 'mallory' });
      await peer.send(m, { deliberate: 'an unknown type from a forged source' });
      return verdictOf(
        'IDENTITY_MISMATCH',
        expectCode(need(await peer.reply(m)), 'IDENTITY_MISMATCH', 'an unknown type from a forged source'),
      );
    },
  ),
  orderCase(
    'type-before-phase',
    'An unknown type before the handshake gets UNKNOWN_MESSAGE_TYPE, not HANDSHAKE_REQUIRED',
    [],
    async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('task.nonsense', {});
      await peer.send(m, { deliberate: 'an unknown type before the handshake' });
      return verdictOf(
        'UNKNOWN_MESSAGE_TYPE',
        expectCode(need(await peer.reply(m)), 'UNKNOWN_MESSAGE_TYPE', 'an unknown type before the handshake'),
      );
    },
  ),
  orderCase(
    'phase-before-payload',
    'A task.request with an invalid payload before the handshake gets HANDSHAKE_REQUIRED',
    [],
    async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('task.request', { input: 1 }, { task_id: 't1', session_id: 'AAAAAAAAAAAAAAAAAAAAAA' });
      await peer.send(m, { deliberate: 'an invalid payload before the handshake' });
      return verdictOf(
        'HANDSHAKE_REQUIRED',
        expectCode(need(await peer.reply(m)), 'HANDSHAKE_REQUIRED', 'an invalid task.request before the handshake'),
      );
    },
    ['TAP-HS-014'],
  ),
  orderCase(
    'payload-before-task',
    'An invalid payload reusing an existing task_id gets INVALID_MESSAGE, not TASK_EXISTS',
    ['tap.test.echo'],
    async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.echo', 1));
      need(await collectUntilResult(peer, t.taskId));
      const m = peer.envelope('task.request', { capability: 'tap.test.echo' }, { task_id: t.taskId });
      await peer.send(m, { deliberate: 'no input, and an existing task_id' });
      return verdictOf(
        'INVALID_MESSAGE',
        expectCode(need(await peer.reply(m)), 'INVALID_MESSAGE', 'an invalid payload with a used task_id'),
      );
    },
  ),
  orderCase(
    'task-before-deadline',
    'A used task_id with a past deadline gets TASK_EXISTS, not DEADLINE_EXCEEDED',
    ['tap.test.echo'],
    async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.echo', 1));
      need(await collectUntilResult(peer, t.taskId));
      const { reply } = await request(peer, 'tap.test.echo', 2, {
        taskId: t.taskId,
        deadline: new Date(Date.now() - 60_000).toISOString(),
      });
      return verdictOf('TASK_EXISTS', expectCode(need(reply), 'TASK_EXISTS', 'a used task_id with a past deadline'));
    },
  ),
  orderCase(
    'deadline-before-capability',
    'An unoffered capability past its deadline gets DEADLINE_EXCEEDED, not CAPABILITY_NOT_SUPPORTED',
    [],
    async (ctx) => {
      const peer = need(await ctx.session());
      const { reply } = await request(peer, 'zz.not.offered', 1, { deadline: new Date(Date.now() - 60_000).toISOString() });
      return verdictOf('DEADLINE_EXCEEDED', expectCode(need(reply), 'DEADLINE_EXCEEDED', 'an unoffered capability past its deadline'));
    },
    [],
    1,
  ),
  orderCase(
    'capability-before-authorization',
    'An unoffered capability with an expired grant gets CAPABILITY_NOT_SUPPORTED',
    [],
    async (ctx) => {
      const peer = need(await ctx.session());
      const { reply } = await request(peer, 'zz.not.offered', 1, {
        authorization: { permissions: [], resources: [], expires_at: new Date(Date.now() - 60_000).toISOString() },
      });
      return verdictOf(
        'CAPABILITY_NOT_SUPPORTED',
        expectCode(need(reply), 'CAPABILITY_NOT_SUPPORTED', 'an unoffered capability with an expired grant'),
      );
    },
    [],
    1,
  ),
  orderCase(
    'authorization-before-busy',
    'At the task limit, a request lacking its permission gets PERMISSION_DENIED, not BUSY',
    ['tap.test.sleep', 'tap.test.guarded'],
    async (ctx) => {
      const peer = need(await ctx.session({ params: { max_concurrent_tasks: 1 } }));
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }));
      const { reply } = await request(peer, 'tap.test.guarded', {});
      const r = need(reply);
      const c = await peer.post('task.cancel', {}, { task_id: t.taskId });
      need(await peer.reply(c));
      need(await collectUntilResult(peer, t.taskId));
      return verdictOf('PERMISSION_DENIED', expectCode(r, 'PERMISSION_DENIED', 'a guarded request without permission at the task limit'));
    },
    ['TAP-LIM-004'],
    2,
  ),
  orderCase(
    'expired-before-permission',
    'An expired grant lacking the permission gets AUTHORIZATION_EXPIRED, not PERMISSION_DENIED',
    ['tap.test.guarded'],
    async (ctx) => {
      const peer = need(await ctx.session());
      const { reply } = await request(
        peer,
        'tap.test.guarded',
        {},
        { authorization: { permissions: ['x.y'], resources: [], expires_at: new Date(Date.now() - 60_000).toISOString() } },
      );
      return verdictOf(
        'AUTHORIZATION_EXPIRED',
        expectCode(need(reply), 'AUTHORIZATION_EXPIRED', 'an expired grant without the permission'),
      );
    },
    ['TAP-AUTH-007'],
  ),
  orderCase(
    'duplicate-before-type',
    'A duplicate of an answered request is answered with the original reply even when resent as another type',
    ['tap.test.echo'],
    async (ctx) => {
      const peer = need(await ctx.session());
      const ping = await peer.post('ping', {});
      const first = need(await peer.reply(ping));
      const mark = peer.mark();
      await peer.send({ ...ping, type: 'task.nonsense' }, { deliberate: 'the same message_id with an unknown type' });
      const r = need(
        await peer.waitFor((m) => m.index >= mark && m.msg.reply_to === ping.message_id, 'the reply to the repeated message_id'),
      );
      return verdictOf(
        'the original pong',
        check(
          r.text === first.text,
          'a repeated message_id was not answered with the original reply',
          'the original pong',
          describeMessage(r.msg),
        ),
      );
    },
    ['TAP-IDEM-001'],
  ),
  orderCase(
    'grant-checked-on-accept',
    'A guarded request with a valid grant and the permission is accepted (the checks pass in order)',
    ['tap.test.guarded'],
    async (ctx) => {
      const peer = need(await ctx.session());
      const { reply, sent } = await request(peer, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
      const r = need(reply);
      if (r.msg.type === 'task.accepted') need(await collectUntilResult(peer, sent.task_id!));
      return verdictOf(
        'accepted',
        check(r.msg.type === 'task.accepted', 'a correct guarded request was refused', 'task.accepted', describeMessage(r.msg)),
      );
    },
    ['TAP-AUTH-008'],
  ),
  fixtureCase('malformed', 'Every malformed-frame fixture gets MALFORMED_MESSAGE in a live session', ['malformed'], 'session', [
    'TAP-ENV-001',
    'TAP-ERR-008',
  ]),
  fixtureCase('i-json', 'Every non-I-JSON fixture gets INVALID_MESSAGE in a live session', ['i-json'], 'session', ['TAP-ENV-002']),
  fixtureCase('envelope', 'Every invalid-envelope fixture gets INVALID_MESSAGE in a live session', ['envelope'], 'session', [
    'TAP-MSG-006',
    'TAP-ENV-009',
  ]),
  fixtureCase(
    'payloads',
    'Every invalid requester payload fixture gets its error (and invalid errors get no answer)',
    REQUESTER_TYPES,
    'session',
    ['TAP-MSG-006', 'TAP-ERR-004'],
  ),
  fixtureCase(
    'handshake-init',
    'Every invalid handshake.init fixture gets its error before a session exists',
    ['handshake.init'],
    'fresh',
    ['TAP-MSG-006', 'TAP-HS-021'],
  ),
  fixtureCase('handshake-ready', 'Every invalid handshake.ready fixture gets its error after the ack', ['handshake.ready'], 'acked', [
    'TAP-MSG-006',
  ]),
];
