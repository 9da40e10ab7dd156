/**
 * Core profile: the error rules, bad input, and the task-level answers every agent gives
 * (spec: errors, envelope#encoding, tasks#status).
 */
import { defineCase, type Case } from '../case.ts';
import type { Peer } from '../peer.ts';
import { describeMessage, startTask } from '../steps.ts';
import { fail, pass } from '../verdict.ts';
import {
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

/** Sends one frame (text, or raw bytes) and stops the case unless it is answered MALFORMED_MESSAGE. */
async function expectMalformed(peer: Peer, frame: string | Uint8Array, why: string): Promise<void> {
  const mark = peer.mark();
  if (typeof frame === 'string') await peer.sendText(frame, why);
  else await peer.sendRaw(frame, why);
  const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', `an error for ${why}`));
  require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, why));
}

export const errorCases: Case[] = [
  defineCase({
    id: 'core.errors.correlation',
    title: 'An error carries the reply_to and task_id of the message it answers',
    profile: P,
    requirements: ['TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task('absent');
      const sent = await peer.post('task.cancel', {}, { task_id: taskId });
      return verdictOf('correlated', await expectError(peer, sent, { code: 'UNKNOWN_TASK', taskId }, 'task.cancel of an unknown task'));
    },
  }),
  defineCase({
    id: 'core.errors.never-answered',
    title: 'An error message from the requester is never answered, not even a malformed one',
    profile: P,
    requirements: ['TAP-ERR-004'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      const good = await peer.post('error', { code: 'INTERNAL_ERROR', message: 'the requester failed', retryable: true });
      const bad = await peer.post('error', { code: 'lowercase-code', retryable: 'maybe' }, {}, { deliberate: 'a malformed error' });
      const unknown = await peer.post('error', { code: 'SOME_FUTURE_CODE', message: 'a code from a later minor', retryable: false });
      const ids = new Set([good.message_id, bad.message_id, unknown.message_id]);
      require(
        await expectNothing(peer, mark, (r) => r.msg.reply_to !== undefined && ids.has(r.msg.reply_to), 'nothing may answer an error'),
      );
      return verdictOf('no reply; the session goes on', await expectAlive(peer, 'errors from the requester'));
    },
  }),
  defineCase({
    id: 'core.errors.unknown-code-accepted',
    title: 'An error with a code the agent does not know does not end the session',
    profile: P,
    requirements: ['TAP-ERR-002', 'TAP-ERR-006'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      await peer.post('error', { code: 'A_CODE_FROM_TAP_1_9', message: 'future', retryable: true, fatal: false });
      return verdictOf('the session goes on', await expectAlive(peer, 'an error with an unknown code'));
    },
  }),
  defineCase({
    id: 'core.errors.registry-retryable',
    title: "Errors carry the registry's retryable value for their code",
    profile: P,
    // A request the agent must refuse; until it does, it may have become a task.
    tasks: 1,
    requirements: ['TAP-ERR-001'],
    run: async (ctx) => {
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
    },
  }),
  defineCase({
    id: 'core.errors.fatal-flag',
    title: 'Non-fatal errors are not marked fatal and do not end the session',
    profile: P,
    requirements: ['TAP-ERR-006', 'TAP-ERR-007'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.status', {}, { task_id: peer.ids.task('absent') });
      const r = need(await peer.reply(sent));
      require(
        check(
          r.msg.type === 'error' && r.msg.payload.fatal !== true,
          `an ${r.msg.payload?.code} error is marked fatal`,
          'fatal absent or false',
          show(r.msg.payload?.fatal),
        ),
      );
      return verdictOf('not fatal; the session goes on', await expectAlive(peer, 'a non-fatal error'));
    },
  }),
  defineCase({
    id: 'core.errors.no-effect',
    title: 'A refused task.request creates no task: CAPABILITY_NOT_SUPPORTED then UNKNOWN_TASK',
    profile: P,
    // A request the agent must refuse; until it does, it may have become a task.
    tasks: 1,
    requirements: ['TAP-TASK-002', 'TAP-ERR-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { capability: 'zz.not.offered', input: 1 }, { task_id: taskId });
      require(await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'a capability the agent does not offer'));
      return verdictOf('refused, no task', await expectNoTask(peer, taskId, 'the request was refused'));
    },
  }),
  defineCase({
    id: 'core.bad-input.malformed-json',
    title: 'A frame that is not JSON gets MALFORMED_MESSAGE and the session goes on',
    profile: P,
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
    id: 'core.bad-input.nested-error-type',
    title: 'A malformed frame with "type":"error" only inside its payload is still answered',
    profile: P,
    requirements: ['TAP-ERR-030'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const id = peer.ids.message();
      for (const [text, why] of [
        [
          `{"protocol":"tap/1.0","message_id":"${id}-a","type":"task.request","payload":{"type":"error"},`,
          'truncated JSON whose payload says "type":"error"',
        ],
        [`{"payload":{"kind":"x","type":"error"},"message_id":"${id}-b",`, 'truncated JSON with "type":"error" only in its payload'],
        [`{"note":"\\"type\\":\\"error\\"","message_id":"${id}-c",`, 'truncated JSON with "type":"error" inside a string'],
      ] as const)
        await expectMalformed(peer, text, why);
      return verdictOf('each answered MALFORMED_MESSAGE; the session goes on', await expectAlive(peer, 'malformed frames'));
    },
  }),
  defineCase({
    id: 'core.bad-input.invalid-utf8',
    title: 'A frame with invalid UTF-8 or a byte order mark gets MALFORMED_MESSAGE',
    profile: P,
    requirements: ['TAP-ENV-001'],
    run: async (ctx) => {
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
      ] as const)
        await expectMalformed(peer, bytes, why);
      return verdictOf('each refused; the session goes on', await expectAlive(peer, 'invalid UTF-8'));
    },
  }),
  defineCase({
    id: 'core.bad-input.i-json',
    title: 'Integers beyond ±(2^53−1) and lone surrogates get INVALID_MESSAGE',
    profile: P,
    requirements: ['TAP-ENV-002'],
    needs: ECHO,
    run: async (ctx) => {
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
        check(
          jsonEqual(edge.result.msg.payload.output, { max: 9007199254740991, min: -9007199254740991 }),
          'the edge values ±(2^53−1) did not round-trip',
          '{ max: 2^53−1, min: −(2^53−1) }',
          show(edge.result.msg.payload.output),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.bad-input.duplicate-members',
    title: 'A message with duplicate member names may be refused, and then only with MALFORMED_MESSAGE',
    profile: P,
    requirements: ['TAP-ENV-004'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {});
      const text = JSON.stringify(m).replace('"payload":{}', '"payload":{},"payload":{}');
      await peer.sendText(text, 'duplicate member "payload"');
      const r = need(await peer.reply(m));
      if (r.msg.type === 'pong')
        return { verdict: 'UNIMPLEMENTED', detail: 'the agent accepts duplicate member names (allowed without integrity)' };
      return verdictOf('refused with MALFORMED_MESSAGE', checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'duplicate member names'));
    },
  }),
  defineCase({
    id: 'core.bad-input.robust',
    title: 'A burst of hostile input never crashes the agent or silences it',
    profile: P,
    requirements: ['TAP-ERR-008'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const hostile = [
        '{}',
        '{"type":null}',
        '{"protocol":"tap/1.0","message_id":"x","type":"task.request","payload":[]}',
        JSON.stringify({
          ...peer.envelope('task.request', {}),
          payload: { capability: 'a.b', input: { deep: JSON.parse('['.repeat(200) + ']'.repeat(200)) } },
        }).replace(/"task_id":"[^"]*",?/, ''),
        '{"protocol":"tap/1.0","message_id":"' + 'y'.repeat(500) + '"}',
        '\u0000\u0001\u0002',
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
        JSON.stringify(peer.envelope('task.cancel', {}, { task_id: '../../etc/passwd' })),
        JSON.stringify(peer.envelope('plan.decision', { plan_id: 'p', decision: 'approved' }, { task_id: 'nope' })),
      ];
      for (const [i, text] of hostile.entries()) await peer.sendText(text, `hostile input ${i + 1}`);
      await ctx.sleep(200);
      return verdictOf('still answering', await expectAlive(peer, 'hostile input'));
    },
  }),
  defineCase({
    id: 'core.bad-input.reply-to-readable',
    title: 'An error answering an invalid message carries its message_id when readable',
    profile: P,
    requirements: ['TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.cancel', { reason: 7 }, { task_id: peer.ids.task() });
      await peer.send(m, { deliberate: 'reason is a number' });
      const r = need(await peer.reply(m));
      return verdictOf(
        'correlated',
        checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: m.message_id, taskId: m.task_id }, 'task.cancel with a numeric reason'),
      );
    },
  }),
  defineCase({
    id: 'core.tasks.status-unknown',
    title: 'task.status, task.cancel, task.resume and plan.decision for an unknown task get UNKNOWN_TASK',
    profile: P,
    requirements: ['TAP-TASK-013'],
    run: async (ctx) => {
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
    },
  }),
  defineCase({
    id: 'core.tasks.capability-unknown',
    title: 'A capability the agent does not offer gets CAPABILITY_NOT_SUPPORTED',
    profile: P,
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
    id: 'core.tasks.accept-echo',
    title: 'A task.request is answered with task.accepted naming the capability and the effective deadline',
    profile: P,
    requirements: ['TAP-TASK-003', 'TAP-EVT-003'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.echo', { hello: 'world' }, { timeoutMs: 60_000 }));
      const p = t.accepted.msg.payload;
      const deadline = Date.parse(p.deadline);
      const sentAt = Date.parse(t.sent.timestamp);
      return verdictOf(
        `accepted with deadline ${p.deadline}`,
        check(p.capability === 'tap.test.echo', 'task.accepted does not name the capability', 'tap.test.echo', show(p.capability)),
        check(typeof p.deadline === 'string', 'task.accepted gives no effective deadline', 'a deadline', 'none'),
        check(
          !Number.isNaN(deadline) && deadline <= sentAt + 60_000 + 60_000 && deadline >= sentAt + 60_000 - 60_000,
          'the effective deadline is not about receipt + timeout_ms (60 s)',
          `about ${new Date(sentAt + 60_000).toISOString()}`,
          String(p.deadline),
        ),
        check(t.accepted.msg.sequence === 1, 'task.accepted is not sequence 1', '1', show(t.accepted.msg.sequence)),
      );
    },
  }),
  defineCase({
    id: 'core.tasks.status-snapshot',
    title: 'task.status returns a snapshot with state, capability, last_sequence, timestamps and the result once terminal',
    profile: P,
    requirements: ['TAP-TASK-012', 'TAP-TASK-011'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'snap'));
      const r = need(await status(peer, t.taskId));
      if (r.msg.type !== 'task.snapshot')
        return fail(`task.status was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const p = r.msg.payload;
      return verdictOf(
        'a complete snapshot',
        check(p.state === 'completed', 'the snapshot state is not the terminal state', 'completed', show(p.state)),
        check(
          p.last_sequence === t.result.msg.sequence,
          'last_sequence is not the sequence of the last message sent',
          show(t.result.msg.sequence),
          show(p.last_sequence),
        ),
        check(
          p.result !== undefined && jsonEqual(p.result.output, 'snap'),
          'the snapshot of a terminal task lacks its result',
          'result with the output',
          show(p.result),
        ),
        check(p.capability === 'tap.test.echo', 'the snapshot does not name the capability', 'tap.test.echo', show(p.capability)),
      );
    },
  }),
  defineCase({
    id: 'core.errors.correlation-ill-formed',
    title: 'An error leaves out a reply_to or task_id that is not well-formed, and still answers',
    profile: P,
    requirements: ['TAP-ERR-040', 'TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // An ill-formed task_id: the envelope fails, the message_id is still echoed.
      const badTask = peer.envelope('task.status', {}, { task_id: 'Not A Task Id!' });
      await peer.send(badTask, { deliberate: 'an ill-formed task_id' });
      const r1 = need(await peer.reply(badTask));
      require(checkError(r1.msg, { code: 'INVALID_MESSAGE' }, 'a task.status with an ill-formed task_id'));
      require(check(r1.msg.task_id === undefined, 'the error echoes the ill-formed task_id', 'no task_id', show(r1.msg.task_id)));
      // An ill-formed message_id: the error answers it without reply_to.
      const mark = peer.mark();
      const badId = peer.envelope('ping', {}, { message_id: 'not a message id!' });
      await peer.send(badId, { deliberate: 'an ill-formed message_id' });
      const r2 = need(
        await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a ping with an ill-formed message_id'),
      );
      require(checkError(r2.msg, { code: 'INVALID_MESSAGE' }, 'a ping with an ill-formed message_id'));
      return verdictOf(
        'both refused, neither echoed',
        check(r2.msg.reply_to === undefined, 'the error echoes the ill-formed message_id', 'no reply_to', show(r2.msg.reply_to)),
      );
    },
  }),
  defineCase({
    id: 'core.errors.target-before-session',
    title: "Before the ack an error is addressed to the offending message's source, or to unknown when it has none",
    profile: P,
    requirements: ['TAP-ERR-041'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      let mark = peer.mark();
      await peer.sendText('this is not JSON', 'a frame with no source to read');
      const r1 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a frame that is not JSON'));
      require(
        check(
          r1.msg.target === 'unknown',
          'the error for a frame without a source is not addressed to unknown',
          'target unknown',
          show(r1.msg.target),
        ),
      );
      mark = peer.mark();
      const { timestamp: _t, ...noTime } = peer.envelope('ping', {});
      await peer.send(noTime as typeof noTime & { timestamp: string }, { deliberate: 'a ping without timestamp' });
      const r2 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a ping without timestamp'));
      return verdictOf(
        'addressed as required',
        check(
          r2.msg.target === peer.state.selfId,
          'the error for a message with a readable source is not addressed to that source',
          `target ${peer.state.selfId}`,
          show(r2.msg.target),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.envelope.signature-shape',
    title: 'A signature member of the wrong shape fails the envelope schema: INVALID_MESSAGE, not INVALID_SIGNATURE',
    profile: P,
    requirements: ['TAP-INT-040'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'ping',
        {},
        { signature: { alg: 'hmac-sha256', key_id: 'tap-conform.k1', value: 'too-short' } },
        { deliberate: 'a signature value that is not 43 base64url characters' },
      );
      require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, 'a ping whose signature has the wrong shape'));
      return verdictOf('INVALID_MESSAGE; the session goes on', await expectAlive(peer, 'a malformed signature'));
    },
  }),
];
