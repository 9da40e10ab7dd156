/** Streaming and resume profile: task.resume, replay, retention, reconnecting (spec: resume). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer, Received } from '../peer.ts';
import { collectUntilResult, handshake, startTask, streamOf, waitStream } from '../steps.ts';
import { fail, pass, skipped } from '../verdict.ts';
import { check, checkError, expectNothing, need, require, show, verdictOf, wrongReply } from './kit.ts';

const P = 'streaming-resume' as const;
const STREAM = { capabilities: ['tap.test.stream'] };

/** Sends task.resume and returns the snapshot and the mark after which replays arrive. */
async function resume(peer: Peer, taskId: string, last: number): Promise<{ snapshot: Received; mark: number }> {
  const mark = peer.mark();
  const sent = await peer.post('task.resume', { last_sequence: last }, { task_id: taskId });
  return { snapshot: need(await peer.reply(sent)), mark };
}

/** The replayed copies of a task's stream received since `mark`, in arrival order. */
function replaysSince(peer: Peer, taskId: string, mark: number): Received[] {
  return peer.since(mark).filter((r) => r.msg.task_id === taskId && r.msg.sequence !== undefined);
}

/** Checks replayed messages are byte-identical copies of the originals, in order, from `from`. */
function checkReplay(peer: Peer, taskId: string, replays: Received[], from: number, to: number): ReturnType<typeof check> {
  const seqs = replays.map((r) => r.msg.sequence!);
  const want = Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
  if (seqs.join(',') !== want.join(','))
    return fail(
      `task.resume replayed sequences [${seqs.join(', ')}], not ${from}..${to} in order`,
      `[${want.join(', ')}]`,
      `[${seqs.join(', ')}]`,
    );
  const originals = new Map(streamOf(peer, taskId).map((r) => [r.msg.sequence!, r.text]));
  const changed = replays.find((r) => originals.get(r.msg.sequence!) !== r.text);
  return changed
    ? fail(`the replay of sequence ${changed.msg.sequence} is not byte-identical to the original`, 'the original bytes', changed.text)
    : null;
}

/** Opens a second connection of the same session: handshake.init with resume. */
async function reconnect(ctx: CaseContext, old: Peer, tasks: { task_id: string; last_sequence: number }[], token?: string) {
  const state = old.state;
  // A resume with a wrong token starts a session of its own: it must not share the old one's state.
  const peer = need(await ctx.connect(token === undefined ? { state } : {}));
  const hs = need(await handshake(peer, { resume: { session_id: state.sessionId!, resume_token: token ?? state.resumeToken!, tasks } }));
  return { peer, ack: hs.ack };
}

export const resumeCases: Case[] = [
  defineCase({
    id: 'resume.task-resume.replay',
    title: 'task.resume: a snapshot, then every later message of the stream, byte for byte and in order',
    profile: P,
    requirements: ['TAP-RES-002', 'TAP-RES-005'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 5, chunk: 'c' }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const last = r.result.msg.sequence!;
      const { snapshot, mark } = await resume(peer, t.taskId, 2);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume', 'task.snapshot', snapshot.msg);
      need(
        await peer.waitFor(
          (m) => m.index >= mark && m.msg.task_id === t.taskId && m.msg.sequence === last,
          `the replay up to sequence ${last}`,
        ),
      );
      await peer.barrier();
      return verdictOf(`replayed 3..${last}`, checkReplay(peer, t.taskId, replaysSince(peer, t.taskId, mark), 3, last));
    },
  }),
  defineCase({
    id: 'resume.task-resume.from-zero',
    title: 'task.resume with last_sequence 0 replays the whole stream from task.accepted',
    profile: P,
    requirements: ['TAP-RES-002'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 2 }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const last = r.result.msg.sequence!;
      const { mark } = await resume(peer, t.taskId, 0);
      need(await peer.waitFor((m) => m.index >= mark && m.msg.task_id === t.taskId && m.msg.sequence === last, 'the full replay'));
      await peer.barrier();
      return verdictOf(`replayed 1..${last}`, checkReplay(peer, t.taskId, replaysSince(peer, t.taskId, mark), 1, last));
    },
  }),
  defineCase({
    id: 'resume.task-resume.nothing-new',
    title: 'task.resume at the last sequence sent gets a snapshot and replays nothing',
    profile: P,
    requirements: ['TAP-RES-002'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 1 }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const { snapshot, mark } = await resume(peer, t.taskId, r.result.msg.sequence!);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume', 'task.snapshot', snapshot.msg);
      const { mark: mark2 } = await resume(peer, t.taskId, r.result.msg.sequence! + 10);
      return verdictOf(
        'nothing replayed',
        await expectNothing(
          peer,
          Math.min(mark, mark2),
          (m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined,
          'a resume at or past the last sequence replays nothing',
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.task-resume.live',
    title: 'task.resume mid-stream replays the missed messages before the next live one, then continues live without gaps',
    profile: P,
    requirements: ['TAP-RES-003'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 30, interval_ms: 40 }));
      need(await waitStream(peer, t.taskId, (m) => m.payload?.kind === 'output' && m.payload.data?.index >= 4, 'the fifth output event'));
      const { snapshot, mark } = await resume(peer, t.taskId, 1);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume mid-stream', 'task.snapshot', snapshot.msg);
      const at = snapshot.msg.payload.last_sequence as number;
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(15_000)));
      const after = peer.since(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined && m.index > snapshot.index);
      const seqs = after.map((m) => m.msg.sequence!);
      // Replays 2..at must come first, in order; then at+1.. live, in order.
      const replayed = seqs.slice(0, at - 1);
      const wantReplay = Array.from({ length: at - 1 }, (_, i) => i + 2);
      const live = seqs.slice(at - 1);
      const wantLive = Array.from({ length: r.result.msg.sequence! - at }, (_, i) => at + 1 + i);
      return verdictOf(
        `replayed 2..${at}, then live ${at + 1}..${r.result.msg.sequence}`,
        check(
          replayed.join(',') === wantReplay.join(','),
          'the replay did not come first and in order',
          `[${wantReplay.join(', ')}] first`,
          `[${seqs.join(', ')}]`,
        ),
        check(
          live.join(',') === wantLive.join(','),
          'the live stream after the replay has gaps, repeats or disorder',
          `[${wantLive.join(', ')}]`,
          `[${live.join(', ')}]`,
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.retention.minimum',
    title: 'The agent offers max_retained_messages of at least 256',
    level: 'SHOULD',
    profile: P,
    reason:
      "the spec recommends a max_retained_messages of at least 256 (a SHOULD in Retention's prose), beside the MUST of TAP-RES-001 it cites",
    requirements: ['TAP-RES-001'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const n = hs.ack.msg.payload.max_retained_messages;
      return verdictOf(`max_retained_messages ${n}`, check(n >= 256, 'max_retained_messages is below 256', '≥ 256', show(n)));
    },
  }),
  defineCase({
    id: 'resume.retention.unavailable',
    title: 'Asking for messages no longer retained gets RESUME_UNAVAILABLE with details.earliest_sequence, and no replay',
    profile: P,
    requirements: ['TAP-RES-004', 'TAP-RES-001'],
    needs: STREAM,
    budgetMs: 40_000,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const keep = hs.ack.msg.payload.max_retained_messages as number;
      if (!(keep <= 5000))
        return skipped(`max_retained_messages is ${keep}; a stream longer than that is too long to send in a conformance run`);
      const count = keep + 5;
      const t = need(await startTask(peer, 'tap.test.stream', { count }));
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(30_000)));
      const last = r.result.msg.sequence!;
      const { snapshot, mark } = await resume(peer, t.taskId, 0);
      require(
        checkError(
          snapshot.msg,
          { code: 'RESUME_UNAVAILABLE', taskId: t.taskId },
          `task.resume from 0 of a ${last}-message stream with ${keep} retained`,
        ),
      );
      const earliest = snapshot.msg.payload.details?.earliest_sequence;
      require(
        check(
          Number.isInteger(earliest) && earliest > 1 && earliest <= last - keep + 1,
          'details.earliest_sequence does not name the first retained sequence',
          `an integer ≤ ${last - keep + 1}`,
          show(earliest),
        ),
      );
      require(
        await expectNothing(
          peer,
          mark,
          (m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined,
          'RESUME_UNAVAILABLE replays nothing',
        ),
      );
      const again = await resume(peer, t.taskId, earliest - 1);
      if (again.snapshot.msg.type !== 'task.snapshot')
        return wrongReply(`task.resume from earliest_sequence - 1 (${earliest - 1})`, 'task.snapshot', again.snapshot.msg);
      need(
        await peer.waitFor(
          (m) => m.index >= again.mark && m.msg.task_id === t.taskId && m.msg.sequence === last,
          'the replay of the retained messages',
          ctx.scaled(20_000),
        ),
      );
      return pass(`RESUME_UNAVAILABLE (earliest ${earliest}); the retained ${last - earliest + 1} replayed`);
    },
  }),
  defineCase({
    id: 'resume.reconnect.replay',
    title: 'After a dropped connection, handshake.init with resume gets the same session and the missed messages, then live',
    profile: P,
    requirements: ['TAP-RES-008', 'TAP-RES-009', 'TAP-RES-010', 'TAP-RES-013'],
    needs: { ...STREAM, binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const t = need(await startTask(old, 'tap.test.stream', { count: 25, interval_ms: 40 }));
      need(await waitStream(old, t.taskId, (m) => m.payload?.kind === 'output' && m.payload.data?.index >= 3, 'the fourth output event'));
      const seen = old.state.lastSequence(t.taskId);
      (ctx.connectionOf(old)?.transport as { terminate?: () => void } | undefined)?.terminate?.();
      await old.waitClosed(ctx.scaled(3000));
      const sessionId = old.state.sessionId;
      const token = old.state.resumeToken;
      const { peer, ack } = await reconnect(ctx, old, [{ task_id: t.taskId, last_sequence: seen }]);
      const p = ack.msg.payload;
      require(
        check(
          p.resumed === true && p.session_id === sessionId && p.resume_token === token,
          'the resume was not granted with the same session_id and resume_token',
          `resumed true, session ${sessionId}`,
          `resumed ${p.resumed}, session ${p.session_id}`,
        ),
      );
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(15_000)));
      const seqs = streamOf(peer, t.taskId).map((m) => m.msg.sequence);
      const want = Array.from({ length: r.result.msg.sequence! }, (_, i) => i + 1);
      return verdictOf(
        `resumed after sequence ${seen}; stream complete`,
        check(
          seqs.join(',') === want.join(','),
          'the stream seen across both connections has gaps or disorder',
          `1..${r.result.msg.sequence}`,
          seqs.join(','),
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.reconnect.closes-old',
    title: 'A successful resume closes the transport the session used before',
    profile: P,
    requirements: ['TAP-RES-011', 'TAP-WS-010'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const { ack } = await reconnect(ctx, old, []);
      if (ack.msg.payload.resumed !== true)
        return fail('a resume with the right token over a still-open session was declined', 'resumed: true', show(ack.msg.payload.resumed));
      const closed = await old.waitClosed(ctx.scaled(5000));
      return verdictOf(
        'the old connection closed',
        check(closed, 'the previous connection stayed open after the resume', 'closed', 'open after 5 s'),
      );
    },
  }),
  defineCase({
    id: 'resume.declined',
    title: 'A resume with a wrong token is declined: a new session_id, resumed false, and nothing revealed',
    profile: P,
    requirements: ['TAP-RES-012'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const fake = need(
        await handshake(peer, {
          resume: {
            session_id: 'AAAAAAAAAAAAAAAAAAAAAAAA',
            resume_token: 'not-the-token-0000',
            tasks: [{ task_id: 'nothing-here', last_sequence: 0 }],
          },
        }),
      );
      const p = fake.ack.msg.payload;
      return verdictOf(
        'declined with a fresh session',
        check(p.resumed === false, 'a resume of a session that does not exist was granted', 'resumed false', show(p.resumed)),
        check(
          p.session_id !== 'AAAAAAAAAAAAAAAAAAAAAAAA',
          'the declined resume reused the named session_id',
          'a new session_id',
          p.session_id,
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.declined.indistinguishable',
    title: 'A declined resume looks the same whether the session exists with another token or does not exist',
    profile: P,
    requirements: ['TAP-RES-012', 'TAP-RES-008'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const wrong = await reconnect(ctx, old, [], 'wrong-token-0123456789');
      const ghost = need(await ctx.connect());
      const g = need(
        await handshake(ghost, { resume: { session_id: 'BBBBBBBBBBBBBBBBBBBBBBBB', resume_token: 'wrong-token-0123456789', tasks: [] } }),
      );
      const a = wrong.ack.msg.payload;
      const b = g.ack.msg.payload;
      const shape = (p: Record<string, unknown>) => JSON.stringify(Object.keys(p).sort()) + String(p.resumed);
      require(check(a.resumed === false, 'a resume with a wrong token was granted', 'resumed false', show(a.resumed)));
      require(
        await (async () =>
          old.closed
            ? fail("a declined resume closed the session's existing connection", 'the old connection untouched', 'closed')
            : null)(),
      );
      return verdictOf(
        'indistinguishable',
        check(shape(a) === shape(b), 'the declined acks differ in shape between an existing and a missing session', shape(b), shape(a)),
      );
    },
  }),
  defineCase({
    id: 'resume.reconnect.unknown-task',
    title: 'A granted resume listing a task the principal does not have answers UNKNOWN_TASK for it',
    profile: P,
    requirements: ['TAP-RES-010'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const { peer, ack } = await reconnect(ctx, old, [{ task_id: 'never-created', last_sequence: 0 }]);
      if (ack.msg.payload.resumed !== true) return fail('the resume was declined', 'resumed: true', show(ack.msg.payload.resumed));
      const e = need(
        await peer.waitFor((m) => m.msg.type === 'error' && m.msg.task_id === 'never-created', 'UNKNOWN_TASK for the listed task'),
      );
      return verdictOf('UNKNOWN_TASK', checkError(e.msg, { code: 'UNKNOWN_TASK' }, 'a listed task that does not exist'));
    },
  }),
  defineCase({
    id: 'resume.duplicates-span-connections',
    title: 'Duplicate detection spans the connections of a session: a request repeated after a resume is answered with the original reply',
    profile: P,
    requirements: ['TAP-IDEM-002'],
    needs: { capabilities: ['tap.test.counter'], binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const key = `dup-${old.ids.task()}`;
      const req = old.envelope('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: old.ids.task() });
      await old.send(req);
      const first = need(await old.reply(req));
      need(await collectUntilResult(old, req.task_id!));
      const { peer } = await reconnect(ctx, old, []);
      const mark = peer.mark();
      await peer.send({ ...req, session_id: peer.state.sessionId });
      const again = need(await peer.waitFor((m) => m.index >= mark && m.msg.reply_to === req.message_id, 'the original reply re-sent'));
      const probe = need(await startTask(peer, 'tap.test.counter', { key }));
      const r = need(await collectUntilResult(peer, probe.taskId));
      return verdictOf(
        'the duplicate had no second effect',
        check(
          again.text === first.text,
          'the reply to the repeated request is not the original, byte for byte',
          first.text.slice(0, 200),
          again.text.slice(0, 200),
        ),
        check(
          r.result.msg.payload.output?.count === 2,
          'the counter shows the repeated request ran again',
          'count 2 (two distinct requests)',
          show(r.result.msg.payload.output),
        ),
      );
    },
  }),
];

resumeCases.push(
  defineCase({
    id: 'resume.attachment.same-principal',
    title:
      "A task's live stream goes only to the session that created it; a task.resume from another session of the same principal gets PROTOCOL_VIOLATION",
    profile: P,
    requirements: ['TAP-RES-006', 'TAP-RES-007'],
    needs: { ...STREAM, binding: 'websocket', integrity: true },
    run: async (ctx) => {
      const a = need(await ctx.session({ signed: true }));
      const b = need(await ctx.session({ signed: true }));
      const t = need(await startTask(a, 'tap.test.stream', { count: 10, interval_ms: 40 }));
      const mark = b.mark();
      const sent = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const r = need(await b.reply(sent));
      need(await collectUntilResult(a, t.taskId, ctx.scaled(10_000)));
      await b.barrier();
      const leaked = b.sinceHere(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined);
      return verdictOf(
        'the stream stayed with its session',
        checkError(r.msg, { code: 'PROTOCOL_VIOLATION', taskId: t.taskId }, 'task.resume from another session of the same principal'),
        check(leaked.length === 0, `${leaked.length} stream messages of the task reached the other session`, 'none', `${leaked.length}`),
      );
    },
  }),
);
