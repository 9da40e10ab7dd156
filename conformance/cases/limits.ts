/**
 * Core profile: message size, heartbeats, repeated bad input, versions, reserved names, and the
 * order of checks (spec: limits, versioning, errors#order-of-checks).
 */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Received } from '../peer.ts';
import { describeMessage, grant, initPayload, request, startTask, collectUntilResult } from '../steps.ts';
import { between, judgeOccurrence, judgePunctuality, pass, skipped, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import { check, checkError, expectAlive, expectNoTask, need, require, show, verdictOf } from './kit.ts';

const P = 'core' as const;
const TEST_CAPABILITIES = [
  'tap.test.echo',
  'tap.test.stream',
  'tap.test.sleep',
  'tap.test.fail',
  'tap.test.plan',
  'tap.test.counter',
  'tap.test.guarded',
];

/** The heartbeat scenario: stay silent after the handshake; when does the agent ping? */
async function heartbeatScenario(ctx: CaseContext): Promise<{ at?: Observed; nominal: number; problem?: Outcome }> {
  const s = await ctx.sessionWith({ params: { heartbeat_ms: 1000 } });
  if (!s.ok) return { nominal: 0, problem: s.outcome };
  const peer = s.value.peer;
  const nominal = Number(peer.state.params?.heartbeat_ms);
  if (!(nominal <= 20_000))
    return { nominal, problem: skipped(`heartbeat_ms is ${nominal}; waiting for a ping that far off is left out of a conformance run`) };
  // Silence starts when the agent received our last message, the ready: between its sending and
  // the arrival of handshake.go.
  const go = s.value.hs.go!;
  const readySent = ctx.transcript.entries.filter((e) => e.dir === 'out' && e.type === 'handshake.ready').pop()?.t ?? go.at;
  const w = timingWindow(nominal, ctx.env.timeScale);
  const ping = await peer.poll((r) => r.msg.type === 'ping', w.latestMs + 200);
  const now = ctx.transcript.now();
  return { at: ping ? between(now - go.at, now - readySent) : undefined, nominal };
}

/** Sends a message of one kind of bad input and returns the reply (or nothing). */
async function refusedCount(ctx: CaseContext, n: number): Promise<Outcome | null> {
  const peer = need(await ctx.session());
  for (let i = 0; i < n; i++) await peer.sendText(`{"bad": ${i}`, `bad input ${i + 1} of ${n}`);
  await ctx.sleep(100);
  return expectAlive(peer, `${n} malformed messages`);
}

export const limitCases: Case[] = [
  defineCase({
    id: 'core.limits.message-too-large',
    title: 'A message larger than max_message_bytes gets MESSAGE_TOO_LARGE, has no effect, and the session stays open',
    profile: P,
    requirements: ['TAP-LIM-001'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const taskId = peer.ids.task();
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(5000) }, { task_id: taskId });
      await peer.send(m, { deliberate: 'a 5 KB request over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized message'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a request over max_message_bytes'));
      require(await expectNoTask(peer, taskId, 'the oversized request was refused'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
  defineCase({
    id: 'core.limits.size-first',
    title: 'Size is checked first: an oversized frame that is not even JSON gets MESSAGE_TOO_LARGE',
    profile: P,
    requirements: ['TAP-ERR-010', 'TAP-LIM-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 2048 } }));
      const mark = peer.mark();
      await peer.sendText('{' + 'not json '.repeat(1000), 'an oversized frame that is not JSON');
      const r = need(await peer.waitFor((x) => x.index >= mark && x.msg.type === 'error', 'an error for the oversized frame'));
      return verdictOf('MESSAGE_TOO_LARGE', checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'an oversized non-JSON frame'));
    },
  }),
  defineCase({
    id: 'core.limits.agent-sizes',
    title: 'The agent never sends a message larger than max_message_bytes: large output is split across events',
    profile: P,
    requirements: ['TAP-LIM-002', 'TAP-LIM-040'],
    needs: { capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const t = need(await startTask(peer, 'tap.test.stream', { count: 3, chunk: 'c'.repeat(1000) }));
      need(await collectUntilResult(peer, t.taskId));
      // The ack is read under the requester's card limit, not the final one (spec: limits#message-size).
      const big = peer.received.find((r) => r.msg.type !== 'handshake.ack' && Buffer.byteLength(r.text) > 4096);
      return verdictOf(
        'all within 4096 bytes',
        check(
          !big,
          `the agent sent a ${big ? Buffer.byteLength(big.text) : 0}-byte ${big?.msg.type}`,
          '≤ 4096 bytes',
          `${big ? Buffer.byteLength(big.text) : 0} bytes`,
        ),
      );
    },
  }),
  defineCase({
    id: 'core.limits.heartbeat-ping',
    title: 'Having heard nothing for heartbeat_ms, the agent pings, and not earlier',
    profile: P,
    requirements: ['TAP-LIM-006'],
    budgetMs: 70_000,
    run: async (ctx) => {
      const r = await ctx.shared('heartbeat', heartbeatScenario);
      if (r.problem) return r.problem;
      return judgeOccurrence(timingWindow(r.nominal, ctx.env.timeScale), r.at, `the agent's ping after ${r.nominal} ms of silence`);
    },
  }),
  defineCase({
    id: 'core.limits.heartbeat-punctual',
    title: 'The heartbeat ping comes punctually',
    profile: P,
    requirements: ['TAP-LIM-007'],
    budgetMs: 70_000,
    run: async (ctx) => {
      const r = await ctx.shared('heartbeat', heartbeatScenario);
      if (r.problem) return r.problem;
      return judgePunctuality(timingWindow(r.nominal, ctx.env.timeScale), r.at, `the agent's ping after ${r.nominal} ms of silence`);
    },
  }),
  defineCase({
    id: 'core.limits.pong',
    title: 'The agent answers every ping with a pong carrying its message_id',
    profile: P,
    requirements: ['TAP-LIM-008'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const pings = [await peer.post('ping', {}), await peer.post('ping', {}), await peer.post('ping', {})];
      for (const p of pings) {
        const r = need(await peer.reply(p));
        require(check(r.msg.type === 'pong', `a ping was answered ${describeMessage(r.msg)}`, 'pong', describeMessage(r.msg)));
      }
      return pass('three pongs');
    },
  }),
  defineCase({
    id: 'core.limits.bad-input-tolerance',
    title: 'The agent does not end a session for bad input before refusing at least 32 messages',
    profile: P,
    requirements: ['TAP-LIM-012'],
    run: async (ctx) => verdictOf('the session survived 31 malformed messages', await refusedCount(ctx, 31)),
  }),
  defineCase({
    id: 'core.version.minor-accepted',
    title: 'A handshake.init in any minor of a major the agent speaks is accepted',
    profile: P,
    requirements: ['TAP-VER-001'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('handshake.init', { ...initPayload(peer, {}), versions: ['1.0', '1.7'] }, { protocol: 'tap/1.7' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      return verdictOf(
        'accepted',
        check(
          r.msg.type === 'handshake.ack' && r.msg.payload.version === '1.0',
          'an init written in tap/1.7 was not acknowledged with version 1.0',
          'handshake.ack, version 1.0',
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.version.major-refused',
    title: 'A message of a major version the agent does not speak gets UNSUPPORTED_VERSION listing the supported versions, fatal',
    profile: P,
    requirements: ['TAP-VER-002'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('handshake.init', { ...initPayload(peer, {}), versions: ['2.0'] }, { protocol: 'tap/2.0' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'an init in tap/2.0'));
      return verdictOf(
        'refused',
        check(
          Array.isArray(r.msg.payload.details?.supported),
          'details.supported is missing',
          'details.supported',
          show(r.msg.payload.details),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.version.after-ack',
    title: 'After the ack, a message in another minor version gets UNSUPPORTED_VERSION, not fatal, and the session goes on',
    profile: P,
    requirements: ['TAP-VER-040', 'TAP-VER-002', 'TAP-ENV-005'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {}, { protocol: 'tap/1.3' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION' }, 'a ping in tap/1.3 in a 1.0 session'));
      require(
        check(
          r.msg.payload.fatal !== true,
          'one message in another minor version ended the session',
          'fatal absent or false',
          show(r.msg.payload.fatal),
        ),
      );
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a message in tap/1.3'));
    },
  }),
  defineCase({
    id: 'core.version.major-after-ack',
    title: 'After the ack, a message of another major version gets a fatal UNSUPPORTED_VERSION, and nothing follows it',
    profile: P,
    spec: 'errors#fatal-errors',
    reason:
      "the case checks that the UNSUPPORTED_VERSION after the ack is fatal (Fatal errors); the rule that calls for it is the version check's (TAP-VER-002)",
    requirements: ['TAP-VER-002', 'TAP-ERR-042'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // A running task: its hand-off, result or a farewell would be the messages that must not follow.
      need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const m = peer.envelope('ping', {}, { protocol: 'tap/2.0' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'a ping in tap/2.0 in a 1.0 session'));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      require(check(closed, 'the transport stayed open after the fatal UNSUPPORTED_VERSION', 'closed', 'open'));
      const after = peer.received.find((x) => x.index > r.index);
      return verdictOf(
        'refused, nothing more, closed',
        check(
          !after,
          `the agent sent ${describeMessage(after?.msg)} after its fatal error`,
          'nothing after the fatal error',
          describeMessage(after?.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.limits.ack-size',
    title: "The handshake.ack fits the requester's card limit, or the init gets MESSAGE_TOO_LARGE and no session",
    profile: P,
    requirements: ['TAP-LIM-041', 'TAP-LIM-042'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const card = { ...(initPayload(peer, {}).agent as Record<string, unknown>) };
      card.limits = { max_concurrent_tasks: 1, max_task_seconds: 60, max_message_bytes: 1024 };
      const init = await peer.post('handshake.init', { ...initPayload(peer, {}), agent: card });
      const r = need(await peer.reply(init));
      if (r.msg.type === 'handshake.ack') {
        const bytes = Buffer.byteLength(r.text);
        return verdictOf(
          `an ack of ${bytes} bytes`,
          check(
            bytes <= 1024,
            `the agent sent a ${bytes}-byte handshake.ack to a requester whose card accepts 1024`,
            '≤ 1024 bytes',
            `${bytes} bytes`,
          ),
        );
      }
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE', replyTo: init.message_id }, 'an init whose card accepts 1024 bytes'));
      const d = r.msg.payload.details ?? {};
      require(
        check(
          d.max_message_bytes === 1024 && Number.isInteger(d.byte_length) && d.byte_length > 1024,
          'MESSAGE_TOO_LARGE does not give the card limit and the size of the ack in details',
          '{ max_message_bytes: 1024, byte_length: > 1024 }',
          show(d),
        ),
      );
      require(check(r.msg.payload.fatal !== true, 'the refusal is marked fatal', 'fatal absent or false', show(r.msg.payload.fatal)));
      // No session was created: a handshake with an ordinary card follows on the same transport (spec: handshake#failures).
      const again = await peer.post('handshake.init', initPayload(peer, {}));
      const ack = need(await peer.reply(again));
      return verdictOf(
        'refused without a session; a new init succeeded',
        check(
          ack.msg.type === 'handshake.ack',
          'a new init after the refusal was not acknowledged',
          'handshake.ack',
          describeMessage(ack.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.version.reserved-names',
    title: 'The card declares no capability under tap. that the specification does not define',
    profile: P,
    requirements: ['TAP-VER-005'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const names: string[] = (hs.ack.msg.payload.agent?.capabilities ?? []).map((c: { name: string }) => c.name);
      const bad = names.filter((n) => n.startsWith('tap.') && !TEST_CAPABILITIES.includes(n));
      return verdictOf(
        'none reserved',
        check(bad.length === 0, `the card declares reserved names ${bad.join(', ')}`, 'no undefined tap.* capability', bad.join(', ')),
      );
    },
  }),
  ...orderCases(),
];

/** Order of checks: each case breaks two rules at once and expects the earlier check's error (spec: errors#order-of-checks). */
function orderCases(): Case[] {
  const one = (
    id: string,
    title: string,
    caps: string[],
    body: (ctx: CaseContext) => Promise<Outcome>,
    also: string[] = [],
    tasks?: number,
  ): Case =>
    defineCase({
      id: `core.order.${id}`,
      title,
      profile: P,
      requirements: ['TAP-ERR-010', ...also],
      needs: caps.length ? { capabilities: caps } : undefined,
      ...(tasks !== undefined ? { tasks } : {}),
      run: body,
    });
  const expectCode = (r: Received, code: string, why: string) => checkError(r.msg, { code }, why);
  return [
    one(
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
    one(
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
    one('type-before-phase', 'An unknown type before the handshake gets UNKNOWN_MESSAGE_TYPE, not HANDSHAKE_REQUIRED', [], async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('task.nonsense', {});
      await peer.send(m, { deliberate: 'an unknown type before the handshake' });
      return verdictOf(
        'UNKNOWN_MESSAGE_TYPE',
        expectCode(need(await peer.reply(m)), 'UNKNOWN_MESSAGE_TYPE', 'an unknown type before the handshake'),
      );
    }),
    one(
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
    one(
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
    one(
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
    one(
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
    one(
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
    one(
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
    one(
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
    one(
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
    one(
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
  ];
}
