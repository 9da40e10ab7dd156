/**
 * Core profile: the envelope, the message catalogue, and what every agent message must be
 * (spec: envelope, messages).
 */
import { defineCase, type Case } from '../case.ts';
import { describeMessage } from '../steps.ts';
import { check, checkError, expectAlive, expectError, expectNoTask, jsonEqual, need, require, runTask, show, verdictOf } from './kit.ts';

const P = 'core' as const;
const ECHO = { capabilities: ['tap.test.echo'] };

export const envelopeCases: Case[] = [
  defineCase({
    id: 'core.envelope.unknown-members-ignored',
    title: 'Unknown envelope and payload members are ignored, not refused',
    profile: P,
    requirements: ['TAP-ENV-015', 'TAP-VER-004'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const input = { a: 1 };
      const t = need(
        await runTask(peer, 'tap.test.echo', input, {
          extra: { x_future_member: { nested: true }, priority: 7, metadata: { trace_id: 'tc-trace', vendor_hint: 'x' } } as never,
        }),
      );
      const snap = await peer.post('task.status', { 'x-extension': 'ignored', unknown: [1, 2] }, {
        task_id: t.taskId,
        extra_envelope: 'ignored',
      } as never);
      const reply = need(await peer.reply(snap));
      return verdictOf(
        'unknown members made no difference',
        check(
          jsonEqual(t.result.msg.payload.output, input),
          'the echo output differs from the input',
          show(input),
          show(t.result.msg.payload.output),
        ),
        check(
          reply.msg.type === 'task.snapshot',
          `task.status with unknown members was refused: ${describeMessage(reply.msg)}`,
          'task.snapshot',
          describeMessage(reply.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.envelope.target-star-elsewhere',
    title: 'A target of "*" outside handshake.init is INVALID_MESSAGE',
    profile: P,
    requirements: ['TAP-ENV-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.status',
        {},
        { task_id: peer.ids.task(), target: '*' },
        { deliberate: 'target "*" outside handshake.init' },
      );
      require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, 'task.status with target "*"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'INVALID_MESSAGE'));
    },
  }),
  defineCase({
    id: 'core.envelope.deadline-ignored-elsewhere',
    title: 'deadline and idempotency_key on a type other than task.request are ignored',
    profile: P,
    requirements: ['TAP-ENV-014'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'x'));
      const past = new Date(Date.now() - 3600_000).toISOString();
      const sent = await peer.post('task.status', {}, { task_id: t.taskId, deadline: past, idempotency_key: 'ignored-key' });
      const r = need(await peer.reply(sent));
      return verdictOf(
        'ignored',
        check(
          r.msg.type === 'task.snapshot',
          `task.status with a past deadline was answered ${describeMessage(r.msg)}`,
          'task.snapshot',
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.envelope.metadata-no-effect',
    title: 'metadata (trace ids, attempt, extension members) does not change behaviour',
    profile: P,
    spec: 'envelope#metadata',
    reason:
      'metadata is the envelope member under test, described in Metadata; the rule it checks is the one for unknown members (TAP-ENV-015)',
    requirements: ['TAP-ENV-015', 'TAP-VER-003'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(
        await runTask(peer, 'tap.test.echo', [1], {
          extra: { metadata: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7', attempt: 3, 'x-route': 'blue' } },
        }),
      );
      return verdictOf(
        'the task ran as without metadata',
        check(
          t.result.msg.payload.status === 'completed',
          'a task with metadata did not complete',
          'completed',
          describeMessage(t.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.envelope.protocol-version',
    title: 'Every agent message after the ack carries "tap/" and the negotiated version',
    profile: P,
    requirements: ['TAP-ENV-005', 'TAP-ENV-010'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.echo', {}));
      const bad = peer.received.find((r) => r.msg.type !== 'handshake.ack' && r.msg.protocol !== `tap/${peer.state.version}`);
      return verdictOf(
        `every message says tap/${peer.state.version}`,
        check(!bad, `the agent's ${bad?.msg.type} says ${bad?.msg.protocol}`, `tap/${peer.state.version}`, String(bad?.msg.protocol)),
      );
    },
  }),
  defineCase({
    id: 'core.message.unknown-type',
    title: 'An unknown message type gets UNKNOWN_MESSAGE_TYPE, has no effect, and the session goes on',
    profile: P,
    requirements: ['TAP-MSG-002'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.frobnicate',
        { x: 1 },
        { task_id: peer.ids.task() },
        { deliberate: 'a type not in the catalogue' },
      );
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'type "task.frobnicate"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    },
  }),
  defineCase({
    id: 'core.message.wrong-direction',
    title: 'A message sent in the wrong direction (task.result from the requester) gets UNKNOWN_MESSAGE_TYPE',
    profile: P,
    requirements: ['TAP-MSG-002', 'TAP-MSG-001'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.result',
        { status: 'completed', output: 1 },
        { task_id: peer.ids.task(), sequence: 2 },
        { deliberate: 'an agent-to-requester type sent by the requester' },
      );
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'task.result sent to the agent'));
      const ack = await peer.post(
        'handshake.go',
        {},
        { reply_to: 'x' },
        { deliberate: 'an agent-to-requester type sent by the requester' },
      );
      require(await expectError(peer, ack, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'handshake.go sent to the agent'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    },
  }),
  defineCase({
    id: 'core.message.one-reply-each',
    title: 'Every request gets exactly one direct reply carrying its message_id, and its task_id',
    profile: P,
    requirements: ['TAP-MSG-003', 'TAP-MSG-005'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'one'));
      const sent = [
        await peer.post('ping', {}),
        await peer.post('task.status', {}, { task_id: t.taskId }),
        await peer.post('task.status', {}, { task_id: peer.ids.task('absent') }),
        await peer.post('task.cancel', {}, { task_id: t.taskId }),
        await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId }),
      ];
      for (const s of sent) need(await peer.reply(s));
      await peer.barrier();
      const problems: string[] = [];
      for (const s of sent) {
        const replies = peer.received.filter((r) => !r.resent && r.msg.reply_to === s.message_id);
        if (replies.length !== 1) problems.push(`${s.type} got ${replies.length} replies`);
        const r = replies[0];
        if (r && s.task_id !== undefined && r.msg.task_id !== s.task_id)
          problems.push(`the reply to ${s.type} carries task_id ${r.msg.task_id}, not ${s.task_id}`);
      }
      return verdictOf(
        'one reply each, with the task_id',
        check(problems.length === 0, problems.join('; '), 'exactly one reply per request, same task_id', problems.join('; ')),
      );
    },
  }),
  defineCase({
    id: 'core.message.reply-before-effects',
    title: 'The direct reply comes before the messages the request causes',
    profile: P,
    requirements: ['TAP-MSG-004'],
    needs: { capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const mark = peer.mark();
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      need(await peer.reply(sent));
      await peer.barrier();
      const after = peer.since(mark).filter((r) => r.msg.task_id === t.taskId);
      const first = after[0];
      return verdictOf(
        'the snapshot came first',
        check(
          first?.msg.reply_to === sent.message_id,
          'a replayed message came before the direct reply to task.resume',
          'task.snapshot first',
          describeMessage(first?.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.message.invalid-payload',
    title: 'A payload failing its schema gets INVALID_MESSAGE with details.issues, and has no effect',
    profile: P,
    requirements: ['TAP-MSG-006', 'TAP-ERR-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post(
        'task.request',
        { input: { no: 'capability' } },
        { task_id: taskId },
        { deliberate: 'payload without capability' },
      );
      const r = need(await peer.reply(sent));
      require(checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: sent.message_id, taskId }, 'task.request without capability'));
      const issues = r.msg.payload.details?.issues;
      const ok =
        Array.isArray(issues) &&
        issues.length > 0 &&
        issues.every(
          (i: Record<string, unknown>) => typeof i?.path === 'string' && typeof i?.keyword === 'string' && typeof i?.message === 'string',
        );
      require(
        check(
          ok,
          'INVALID_MESSAGE does not carry details.issues as [{ path, keyword, message }]',
          'details.issues: [{ path, keyword, message }, …]',
          show(r.msg.payload.details),
        ),
      );
      return verdictOf('refused with issues, no task', await expectNoTask(peer, taskId, 'the invalid request was refused'));
    },
  }),
];

envelopeCases.push(
  defineCase({
    id: 'core.wire.agent-messages',
    title: 'Every message the agent sends is one valid JSON object naming the right peers, with fresh ids and no stray members',
    profile: P,
    spec: 'envelope#fields',
    reason:
      'the case checks every field of every message the agent sends, so it cites the Fields section that lists them; its requirements span the envelope',
    requirements: ['TAP-ENV-003', 'TAP-ENV-006', 'TAP-ENV-007', 'TAP-ENV-010', 'TAP-ENV-013', 'TAP-MSG-001', 'TAP-WS-004', 'TAP-CONF-004'],
    needs: { capabilities: ['tap.test.stream', 'tap.test.fail', 'tap.test.echo'] },
    run: async (ctx) => {
      // Every frame of every case is checked this way; this case names the rules and gives them a
      // varied workload of their own.
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.stream', { count: 3, chunk: { nested: { a: [1, { b: 2 }] } } }));
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', message: 'x' }));
      need(await runTask(peer, 'tap.test.echo', { a: { b: { c: [null, true, 1.5, 'é€'] } } }));
      const s = await peer.post('task.status', {}, { task_id: peer.ids.task('absent') });
      need(await peer.reply(s));
      need(await peer.ping());
      const stamps = peer.received.filter((r) => !/Z$/.test(String(r.msg.timestamp)));
      return verdictOf(
        `${peer.received.length} messages checked`,
        check(
          stamps.length === 0,
          `the agent's ${stamps[0]?.msg.type} has timestamp ${stamps[0]?.msg.timestamp}, not RFC 3339 UTC`,
          'RFC 3339 with a trailing Z',
          String(stamps[0]?.msg.timestamp),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.security.no-secrets',
    title: 'The agent writes no key or resume token into its messages or logs',
    profile: P,
    requirements: ['TAP-SEC-003'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const token = String(hs.ack.msg.payload.resume_token);
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      await peer.sendText('{"broken":', 'bad input, to provoke logging');
      await peer.barrier();
      const secrets = [token, ...(ctx.env.key ? [Buffer.from(ctx.env.key.key).toString('base64url')] : [])];
      const leaks = ctx.transcript.entries.filter(
        (e) => (e.dir === 'in' || e.dir === 'stderr') && e.type !== 'handshake.ack' && secrets.some((sec) => e.text.includes(sec)),
      );
      return verdictOf(
        'no secret leaked',
        check(
          leaks.length === 0,
          `a secret appears in the agent's ${leaks[0]?.dir === 'stderr' ? 'standard error' : leaks[0]?.type}`,
          'no key or resume token outside the ack',
          leaks[0]?.text.slice(0, 200),
        ),
      );
    },
  }),
);
