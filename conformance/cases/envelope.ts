/**
 * Core profile: the envelope, the catalogue, bad input and the error rules
 * (spec: envelope, messages, errors).
 */
import { defineCase, type Case } from '../case.ts';
import { describeMessage, startTask } from '../steps.ts';
import { fail, pass } from '../verdict.ts';
import {
  attempt,
  check,
  checkError,
  expectAlive,
  expectError,
  expectNoTask,
  expectNothing,
  jsonEqual,
  need,
  require,
  runTask,
  show,
  status,
  verdictOf,
} from './kit.ts';

const P = 'core' as const;
const ECHO = { capabilities: ['tap.test.echo'] };
const enc = new TextEncoder();

export const envelopeCases: Case[] = [
  defineCase({
    id: 'core.envelope.unknown-members-ignored',
    title: 'Unknown envelope and payload members are ignored, not refused',
    level: 'MUST',
    profile: P,
    spec: 'envelope#extensibility',
    requirements: ['TAP-ENV-015', 'TAP-VER-004'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const input = { a: 1 };
      const t = need(
        await runTask(peer, 'tap.test.echo', input, {
          extra: { x_future_member: { nested: true }, priority: 7, metadata: { trace_id: 'tc-trace', vendor_hint: 'x' } } as never,
        }),
      );
      const snap = await peer.post('task.status', { 'x-extension': 'ignored', unknown: [1, 2] }, { task_id: t.taskId, extra_envelope: 'ignored' } as never);
      const reply = need(await peer.reply(snap));
      return verdictOf(
        'unknown members made no difference',
        check(jsonEqual(t.result.msg.payload.output, input), 'the echo output differs from the input', show(input), show(t.result.msg.payload.output)),
        check(reply.msg.type === 'task.snapshot', `task.status with unknown members was refused: ${describeMessage(reply.msg)}`, 'task.snapshot', describeMessage(reply.msg)),
      );
    }),
  }),
  defineCase({
    id: 'core.envelope.target-star-elsewhere',
    title: 'A target of "*" outside handshake.init is INVALID_MESSAGE',
    level: 'MUST',
    profile: P,
    spec: 'envelope#source-and-target',
    requirements: ['TAP-ENV-009'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.status', {}, { task_id: peer.ids.task(), target: '*' }, { deliberate: 'target "*" outside handshake.init' });
      require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, 'task.status with target "*"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'INVALID_MESSAGE'));
    }),
  }),
  defineCase({
    id: 'core.envelope.deadline-ignored-elsewhere',
    title: 'deadline and idempotency_key on a type other than task.request are ignored',
    level: 'MUST',
    profile: P,
    spec: 'envelope#deadline-and-idempotency-key',
    requirements: ['TAP-ENV-014'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'x'));
      const past = new Date(Date.now() - 3600_000).toISOString();
      const sent = await peer.post('task.status', {}, { task_id: t.taskId, deadline: past, idempotency_key: 'ignored-key' });
      const r = need(await peer.reply(sent));
      return verdictOf('ignored', check(r.msg.type === 'task.snapshot', `task.status with a past deadline was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg)));
    }),
  }),
  defineCase({
    id: 'core.envelope.metadata-no-effect',
    title: 'metadata (trace ids, attempt, extension members) does not change behaviour',
    level: 'MUST',
    profile: P,
    spec: 'envelope#metadata',
    requirements: ['TAP-ENV-015', 'TAP-VER-003'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', [1], { extra: { metadata: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7', attempt: 3, 'x-route': 'blue' } } }));
      return verdictOf('the task ran as without metadata', check(t.result.msg.payload.status === 'completed', 'a task with metadata did not complete', 'completed', describeMessage(t.result.msg)));
    }),
  }),
  defineCase({
    id: 'core.envelope.protocol-version',
    title: 'Every agent message after the ack carries "tap/" and the negotiated version',
    level: 'MUST',
    profile: P,
    spec: 'envelope#protocol',
    requirements: ['TAP-ENV-005', 'TAP-ENV-010'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.echo', {}));
      const bad = peer.received.find((r) => r.msg.type !== 'handshake.ack' && r.msg.protocol !== `tap/${peer.state.version}`);
      return verdictOf(`every message says tap/${peer.state.version}`, check(!bad, `the agent's ${bad?.msg.type} says ${bad?.msg.protocol}`, `tap/${peer.state.version}`, String(bad?.msg.protocol)));
    }),
  }),
  defineCase({
    id: 'core.message.unknown-type',
    title: 'An unknown message type gets UNKNOWN_MESSAGE_TYPE, has no effect, and the session goes on',
    level: 'MUST',
    profile: P,
    spec: 'messages#direction',
    requirements: ['TAP-MSG-002'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.frobnicate', { x: 1 }, { task_id: peer.ids.task() }, { deliberate: 'a type not in the catalogue' });
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'type "task.frobnicate"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    }),
  }),
  defineCase({
    id: 'core.message.wrong-direction',
    title: 'A message sent in the wrong direction (task.result from the requester) gets UNKNOWN_MESSAGE_TYPE',
    level: 'MUST',
    profile: P,
    spec: 'messages#direction',
    requirements: ['TAP-MSG-002', 'TAP-MSG-001'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.result', { status: 'completed', output: 1 }, { task_id: peer.ids.task(), sequence: 2 }, { deliberate: 'an agent-to-requester type sent by the requester' });
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'task.result sent to the agent'));
      const ack = await peer.post('handshake.go', {}, { reply_to: 'x' }, { deliberate: 'an agent-to-requester type sent by the requester' });
      require(await expectError(peer, ack, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'handshake.go sent to the agent'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    }),
  }),
  defineCase({
    id: 'core.message.one-reply-each',
    title: 'Every request gets exactly one direct reply carrying its message_id, and its task_id',
    level: 'MUST',
    profile: P,
    spec: 'messages#requests-and-replies',
    requirements: ['TAP-MSG-003', 'TAP-MSG-005'],
    needs: ECHO,
    run: attempt(async (ctx) => {
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
        if (r && s.task_id !== undefined && r.msg.task_id !== s.task_id) problems.push(`the reply to ${s.type} carries task_id ${r.msg.task_id}, not ${s.task_id}`);
      }
      return verdictOf('one reply each, with the task_id', check(problems.length === 0, problems.join('; '), 'exactly one reply per request, same task_id', problems.join('; ')));
    }),
  }),
  defineCase({
    id: 'core.message.reply-before-effects',
    title: 'The direct reply comes before the messages the request causes',
    level: 'MUST',
    profile: P,
    spec: 'messages#requests-and-replies',
    requirements: ['TAP-MSG-004'],
    needs: { capabilities: ['tap.test.stream'] },
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const mark = peer.mark();
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      need(await peer.reply(sent));
      await peer.barrier();
      const after = peer.since(mark).filter((r) => r.msg.task_id === t.taskId);
      const first = after[0];
      return verdictOf('the snapshot came first', check(first?.msg.reply_to === sent.message_id, 'a replayed message came before the direct reply to task.resume', 'task.snapshot first', describeMessage(first?.msg)));
    }),
  }),
  defineCase({
    id: 'core.message.invalid-payload',
    title: 'A payload failing its schema gets INVALID_MESSAGE with details.issues, and has no effect',
    level: 'MUST',
    profile: P,
    spec: 'messages#payload-validation',
    requirements: ['TAP-MSG-006', 'TAP-ERR-009'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { input: { no: 'capability' } }, { task_id: taskId }, { deliberate: 'payload without capability' });
      const r = need(await peer.reply(sent));
      require(checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: sent.message_id, taskId }, 'task.request without capability'));
      const issues = r.msg.payload.details?.issues;
      const ok = Array.isArray(issues) && issues.length > 0 && issues.every((i: Record<string, unknown>) => typeof i?.path === 'string' && typeof i?.keyword === 'string' && typeof i?.message === 'string');
      require(check(ok, 'INVALID_MESSAGE does not carry details.issues as [{ path, keyword, message }]', 'details.issues: [{ path, keyword, message }, …]', show(r.msg.payload.details)));
      return verdictOf('refused with issues, no task', await expectNoTask(peer, taskId, 'the invalid request was refused'));
    }),
  }),
  defineCase({
    id: 'core.errors.correlation',
    title: 'An error carries the reply_to and task_id of the message it answers',
    level: 'MUST',
    profile: P,
    spec: 'errors#correlation',
    requirements: ['TAP-ERR-003'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task('absent');
      const sent = await peer.post('task.cancel', {}, { task_id: taskId });
      return verdictOf('correlated', await expectError(peer, sent, { code: 'UNKNOWN_TASK', taskId }, 'task.cancel of an unknown task'));
    }),
  }),
  defineCase({
    id: 'core.errors.never-answered',
    title: 'An error message from the requester is never answered, not even a malformed one',
    level: 'MUST',
    profile: P,
    spec: 'errors#no-replies-to-errors',
    requirements: ['TAP-ERR-004'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      const good = await peer.post('error', { code: 'INTERNAL_ERROR', message: 'the requester failed', retryable: true });
      const bad = await peer.post('error', { code: 'lowercase-code', retryable: 'maybe' }, {}, { deliberate: 'a malformed error' });
      const unknown = await peer.post('error', { code: 'SOME_FUTURE_CODE', message: 'a code from a later minor', retryable: false });
      const ids = new Set([good.message_id, bad.message_id, unknown.message_id]);
      require(await expectNothing(peer, mark, (r) => r.msg.reply_to !== undefined && ids.has(r.msg.reply_to), 'nothing may answer an error'));
      return verdictOf('no reply; the session goes on', await expectAlive(peer, 'errors from the requester'));
    }),
  }),
  defineCase({
    id: 'core.errors.unknown-code-accepted',
    title: 'An error with a code the agent does not know does not end the session',
    level: 'MUST',
    profile: P,
    spec: 'errors#registry',
    requirements: ['TAP-ERR-002', 'TAP-ERR-006'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      await peer.post('error', { code: 'A_CODE_FROM_TAP_1_9', message: 'future', retryable: true, fatal: false });
      return verdictOf('the session goes on', await expectAlive(peer, 'an error with an unknown code'));
    }),
  }),
  defineCase({
    id: 'core.errors.registry-retryable',
    title: "Errors carry the registry's retryable value for their code",
    level: 'MUST',
    profile: P,
    spec: 'errors#error-payload',
    requirements: ['TAP-ERR-001'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const probes = [
        await peer.post('task.status', {}, { task_id: peer.ids.task('absent') }),
        await peer.post('task.bogus', {}, {}, { deliberate: 'unknown type' }),
        await peer.post('task.request', { capability: 'zz.not.offered', input: null }, { task_id: peer.ids.task() }),
      ];
      for (const s of probes) {
        const r = need(await peer.reply(s));
        require(checkError(r.msg, { code: ['UNKNOWN_TASK', 'UNKNOWN_MESSAGE_TYPE', 'CAPABILITY_NOT_SUPPORTED'] }, `${s.type}`));
      }
      return pass('UNKNOWN_TASK, UNKNOWN_MESSAGE_TYPE and CAPABILITY_NOT_SUPPORTED carry their registry retryable');
    }),
  }),
  defineCase({
    id: 'core.errors.fatal-flag',
    title: 'Non-fatal errors are not marked fatal and do not end the session',
    level: 'MUST',
    profile: P,
    spec: 'errors#fatal-errors',
    requirements: ['TAP-ERR-006', 'TAP-ERR-007'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.status', {}, { task_id: peer.ids.task('absent') });
      const r = need(await peer.reply(sent));
      require(check(r.msg.type === 'error' && r.msg.payload.fatal !== true, `an ${r.msg.payload?.code} error is marked fatal`, 'fatal absent or false', show(r.msg.payload?.fatal)));
      return verdictOf('not fatal; the session goes on', await expectAlive(peer, 'a non-fatal error'));
    }),
  }),
  defineCase({
    id: 'core.errors.no-effect',
    title: 'A refused task.request creates no task: CAPABILITY_NOT_SUPPORTED then UNKNOWN_TASK',
    level: 'MUST',
    profile: P,
    spec: 'tasks#acceptance',
    requirements: ['TAP-TASK-002', 'TAP-ERR-009'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { capability: 'zz.not.offered', input: 1 }, { task_id: taskId });
      require(await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'a capability the agent does not offer'));
      return verdictOf('refused, no task', await expectNoTask(peer, taskId, 'the request was refused'));
    }),
  }),
  defineCase({
    id: 'core.bad-input.malformed-json',
    title: 'A frame that is not JSON gets MALFORMED_MESSAGE and the session goes on',
    level: 'MUST',
    profile: P,
    spec: 'errors#order-of-checks',
    requirements: ['TAP-ENV-001', 'TAP-ERR-008'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      for (const [text, why] of [
        ['{"protocol":"tap/1.0",', 'truncated JSON'],
        ['not json at all', 'plain text'],
        ['[1,2,3]', 'a top-level array'],
        ['"a string"', 'a top-level string'],
        ['42', 'a top-level number'],
        ['{"a":1}{"b":2}', 'two objects on one line'],
      ] as const) {
        const mark = peer.mark();
        await peer.sendText(text, why);
        const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', `an error for ${why}`));
        require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, why));
      }
      return verdictOf('each refused; the session goes on', await expectAlive(peer, 'malformed frames'));
    }),
  }),
  defineCase({
    id: 'core.bad-input.invalid-utf8',
    title: 'A frame with invalid UTF-8 or a byte order mark gets MALFORMED_MESSAGE',
    level: 'MUST',
    profile: P,
    spec: 'envelope#encoding',
    requirements: ['TAP-ENV-001'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const valid = enc.encode(JSON.stringify(peer.envelope('ping', {})));
      const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...valid]);
      const text = JSON.stringify(peer.envelope('ping', { x: 'AB' }));
      const at = text.indexOf('"AB"') + 1;
      const invalid = new Uint8Array([...enc.encode(text.slice(0, at)), 0xc3, 0x28, ...enc.encode(text.slice(at + 2))]);
      for (const [bytes, why] of [
        [bom, 'a byte order mark'],
        [invalid, 'invalid UTF-8 (0xC3 0x28)'],
        [new Uint8Array([0x7b, 0xed, 0xa0, 0x80, 0x7d]), 'a UTF-8 encoded surrogate'],
      ] as const) {
        const mark = peer.mark();
        await peer.sendRaw(bytes, why);
        const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', `an error for ${why}`));
        require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, why));
      }
      return verdictOf('each refused; the session goes on', await expectAlive(peer, 'invalid UTF-8'));
    }),
  }),
  defineCase({
    id: 'core.bad-input.i-json',
    title: 'Integers beyond ±(2^53−1) and lone surrogates get INVALID_MESSAGE',
    level: 'MUST',
    profile: P,
    spec: 'envelope#encoding',
    requirements: ['TAP-ENV-002'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const cases: [string, string][] = [];
      const base = (input: string) => {
        const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: '__INPUT__' }, { task_id: peer.ids.task() });
        return { text: JSON.stringify(m).replace('"__INPUT__"', input), m };
      };
      const big = base('{"n":9007199254740992}');
      const neg = base('{"n":-9007199254740993}');
      const lone = base('"\\ud800 alone"');
      cases.push([big.text, '2^53'], [neg.text, '−(2^53+1)'], [lone.text, 'a lone surrogate']);
      for (const [i, [text, why]] of cases.entries()) {
        await peer.sendText(text, why);
        const id = [big, neg, lone][i]!.m;
        const r = need(await peer.reply(id));
        require(checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: id.message_id }, why));
        require(await expectNoTask(peer, id.task_id!, `the ${why} request was refused`));
      }
      const edge = need(await runTask(peer, 'tap.test.echo', { max: 9007199254740991, min: -9007199254740991 }));
      return verdictOf(
        'refused; the edge values ±(2^53−1) pass',
        check(jsonEqual(edge.result.msg.payload.output, { max: 9007199254740991, min: -9007199254740991 }), 'the edge values ±(2^53−1) did not round-trip', '{ max: 2^53−1, min: −(2^53−1) }', show(edge.result.msg.payload.output)),
      );
    }),
  }),
  defineCase({
    id: 'core.bad-input.duplicate-members',
    title: 'A message with duplicate member names may be refused, and then only with MALFORMED_MESSAGE',
    level: 'MAY',
    profile: P,
    spec: 'envelope#encoding',
    requirements: ['TAP-ENV-004'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {});
      const text = JSON.stringify(m).replace('"payload":{}', '"payload":{},"payload":{}');
      await peer.sendText(text, 'duplicate member "payload"');
      const r = need(await peer.reply(m));
      if (r.msg.type === 'pong') return { verdict: 'UNIMPLEMENTED', detail: 'the agent accepts duplicate member names (allowed without integrity)' };
      return verdictOf('refused with MALFORMED_MESSAGE', checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'duplicate member names'));
    }),
  }),
  defineCase({
    id: 'core.bad-input.robust',
    title: 'A burst of hostile input never crashes the agent or silences it',
    level: 'MUST',
    profile: P,
    spec: 'errors#robustness',
    requirements: ['TAP-ERR-008'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const hostile = [
        '{}',
        '{"type":null}',
        '{"protocol":"tap/1.0","message_id":"x","type":"task.request","payload":[]}',
        JSON.stringify({ ...peer.envelope('task.request', {}), payload: { capability: 'a.b', input: { deep: JSON.parse('['.repeat(200) + ']'.repeat(200)) } } }).replace(/"task_id":"[^"]*",?/, ''),
        '{"protocol":"tap/1.0","message_id":"' + 'y'.repeat(500) + '"}',
        '\u0000\u0001\u0002',
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
        JSON.stringify(peer.envelope('task.cancel', {}, { task_id: '../../etc/passwd' })),
        JSON.stringify(peer.envelope('plan.decision', { plan_id: 'p', decision: 'approved' }, { task_id: 'nope' })),
      ];
      for (const [i, text] of hostile.entries()) await peer.sendText(text, `hostile input ${i + 1}`);
      await ctx.sleep(200);
      return verdictOf('still answering', await expectAlive(peer, 'hostile input'));
    }),
  }),
  defineCase({
    id: 'core.bad-input.reply-to-readable',
    title: 'An error answering an invalid message carries its message_id when readable',
    level: 'MUST',
    profile: P,
    spec: 'errors#correlation',
    requirements: ['TAP-ERR-003'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.cancel', { reason: 7 }, { task_id: peer.ids.task() });
      await peer.send(m, { deliberate: 'reason is a number' });
      const r = need(await peer.reply(m));
      return verdictOf('correlated', checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: m.message_id, taskId: m.task_id }, 'task.cancel with a numeric reason'));
    }),
  }),
  defineCase({
    id: 'core.tasks.status-unknown',
    title: 'task.status, task.cancel, task.resume and plan.decision for an unknown task get UNKNOWN_TASK',
    level: 'MUST',
    profile: P,
    spec: 'tasks#status',
    requirements: ['TAP-TASK-013'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const id = peer.ids.task('never');
      for (const [type, payload] of [
        ['task.status', {}],
        ['task.cancel', {}],
        ['task.resume', { last_sequence: 0 }],
        ['plan.decision', { plan_id: 'plan-1', decision: 'approved', feedback: 'ok' }],
      ] as const) {
        const sent = await peer.post(type, payload, { task_id: id });
        require(await expectError(peer, sent, { code: 'UNKNOWN_TASK', taskId: id }, `${type} for an unknown task`));
      }
      return pass('UNKNOWN_TASK for each');
    }),
  }),
  defineCase({
    id: 'core.tasks.capability-unknown',
    title: 'A capability the agent does not offer gets CAPABILITY_NOT_SUPPORTED',
    level: 'MUST',
    profile: P,
    spec: 'errors#order-of-checks',
    requirements: ['TAP-ERR-010', 'TAP-TASK-002'],
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.request', { capability: 'zz.surely.not.offered', input: {} }, { task_id: peer.ids.task() });
      return verdictOf('refused', await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'an unoffered capability'));
    }),
  }),
  defineCase({
    id: 'core.tasks.accept-echo',
    title: 'A task.request is answered with task.accepted naming the capability and the effective deadline',
    level: 'MUST',
    profile: P,
    spec: 'tasks#acceptance',
    requirements: ['TAP-TASK-003', 'TAP-EVT-003'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.echo', { hello: 'world' }, { timeoutMs: 60_000 }));
      const p = t.accepted.msg.payload;
      const deadline = Date.parse(p.deadline);
      const sentAt = Date.parse(t.sent.timestamp);
      return verdictOf(
        `accepted with deadline ${p.deadline}`,
        check(p.capability === 'tap.test.echo', 'task.accepted does not name the capability', 'tap.test.echo', show(p.capability)),
        check(typeof p.deadline === 'string', 'task.accepted gives no effective deadline', 'a deadline', 'none'),
        check(!Number.isNaN(deadline) && deadline <= sentAt + 60_000 + 60_000 && deadline >= sentAt + 60_000 - 60_000, 'the effective deadline is not about receipt + timeout_ms (60 s)', `about ${new Date(sentAt + 60_000).toISOString()}`, String(p.deadline)),
        check(t.accepted.msg.sequence === 1, 'task.accepted is not sequence 1', '1', show(t.accepted.msg.sequence)),
      );
    }),
  }),
  defineCase({
    id: 'core.tasks.status-snapshot',
    title: 'task.status returns a snapshot with state, capability, last_sequence, timestamps and the result once terminal',
    level: 'MUST',
    profile: P,
    spec: 'tasks#status',
    requirements: ['TAP-TASK-012', 'TAP-TASK-011'],
    needs: ECHO,
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'snap'));
      const r = need(await status(peer, t.taskId));
      if (r.msg.type !== 'task.snapshot') return fail(`task.status was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const p = r.msg.payload;
      return verdictOf(
        'a complete snapshot',
        check(p.state === 'completed', 'the snapshot state is not the terminal state', 'completed', show(p.state)),
        check(p.last_sequence === t.result.msg.sequence, 'last_sequence is not the sequence of the last message sent', show(t.result.msg.sequence), show(p.last_sequence)),
        check(p.result !== undefined && jsonEqual(p.result.output, 'snap'), 'the snapshot of a terminal task lacks its result', 'result with the output', show(p.result)),
        check(p.capability === 'tap.test.echo', 'the snapshot does not name the capability', 'tap.test.echo', show(p.capability)),
      );
    }),
  }),
];

envelopeCases.push(
  defineCase({
    id: 'core.wire.agent-messages',
    title: "Every message the agent sends is one valid JSON object naming the right peers, with fresh ids and no stray members",
    level: 'MUST',
    profile: P,
    spec: 'envelope#fields',
    requirements: ['TAP-ENV-003', 'TAP-ENV-006', 'TAP-ENV-007', 'TAP-ENV-010', 'TAP-ENV-013', 'TAP-MSG-001', 'TAP-WS-004', 'TAP-CONF-004'],
    needs: { capabilities: ['tap.test.stream', 'tap.test.fail', 'tap.test.echo'] },
    run: attempt(async (ctx) => {
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
        check(stamps.length === 0, `the agent's ${stamps[0]?.msg.type} has timestamp ${stamps[0]?.msg.timestamp}, not RFC 3339 UTC`, 'RFC 3339 with a trailing Z', String(stamps[0]?.msg.timestamp)),
      );
    }),
  }),
  defineCase({
    id: 'core.security.no-secrets',
    title: 'The agent writes no key or resume token into its messages or logs',
    level: 'MUST',
    profile: P,
    spec: 'security#secrets',
    requirements: ['TAP-SEC-003'],
    needs: { capabilities: ['tap.test.fail'] },
    run: attempt(async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const token = String(hs.ack.msg.payload.resume_token);
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      await peer.sendText('{"broken":', 'bad input, to provoke logging');
      await peer.barrier();
      const secrets = [token, ...(ctx.env.key ? [Buffer.from(ctx.env.key.key).toString('base64url')] : [])];
      const leaks = ctx.transcript.entries.filter((e) => (e.dir === 'in' || e.dir === 'stderr') && e.type !== 'handshake.ack' && secrets.some((sec) => e.text.includes(sec)));
      return verdictOf('no secret leaked', check(leaks.length === 0, `a secret appears in the agent's ${leaks[0]?.dir === 'stderr' ? 'standard error' : leaks[0]?.type}`, 'no key or resume token outside the ack', leaks[0]?.text.slice(0, 200)));
    }),
  }),
);

export { expectNoTask, status };
