/** The stdio profile: framing, standard output, process lifecycle, signals, broken pipes (spec: bindings-stdio). */
import { count } from '../report/model.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import type { ChildStdioTransport } from '../../reference/transports/stdio-child.ts';
import { describeMessage, initPayload, startTask } from '../steps.ts';
import { fail, pass, timingWindow, type Outcome } from '../verdict.ts';
import { check, checkError, expectAlive, need, require, runTask, verdictOf } from './kit.ts';
import { checkSequence } from './shutdown.ts';
import { launcherOf } from '../target.ts';

const STDIO = { binding: 'stdio' as const };

/** PASS when the agent exited with status 0; FAIL with what it did instead. */
function exitedZero(exit: { code: number | null; signal?: string | null } | undefined, when: string): Outcome {
  return verdictOf(
    'exit 0',
    check(
      exit?.code === 0,
      `the agent did not exit with status 0 ${when}`,
      'exit status 0',
      exit ? String(exit.signal ?? exit.code) : 'still running',
    ),
  );
}

/** The child process behind a stdio peer. */
function childOf(ctx: CaseContext, peer: Peer) {
  const t = ctx.connectionOf(peer)?.transport as ChildStdioTransport | undefined;
  return t?.child;
}

/** Writes raw bytes to the agent's stdin, outside the line framing. */
function writeStdin(ctx: CaseContext, peer: Peer, data: string | Uint8Array, note: string): void {
  ctx.transcript.add({
    conn: peer.conn,
    dir: 'out',
    text: typeof data === 'string' ? data : Buffer.from(data).toString('latin1'),
    flags: [`deliberate: ${note}`],
  });
  childOf(ctx, peer)?.stdin?.write(data);
}

/** Ends the agent's standard input (and nothing else: the agent is not killed after a grace period). */
function endInput(ctx: CaseContext, peer: Peer): void {
  ctx.note("closing the agent's standard input");
  childOf(ctx, peer)?.stdin?.end();
}

/** Ends the session by `how` and checks: hand-off and result for the task, farewell, exit 0. */
/** When a signal killed a launcher (npx, a shell) rather than the agent, how to test the agent itself. */
function launcherHint(ctx: CaseContext, signal: string | null | undefined): string {
  const launcher = signal ? launcherOf(ctx.env.target) : null;
  return launcher
    ? ` (the command is ${launcher}, which took the signal itself instead of passing it on: give tap-conform the agent's own executable, for an installed package node_modules/.bin/<name>)`
    : '';
}

async function orderlyExit(ctx: CaseContext, how: 'eof' | 'SIGTERM' | 'SIGINT' | 'twice'): Promise<Outcome> {
  const peer = need(await ctx.session());
  const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
  const conn = ctx.connectionOf(peer)!;
  if (how === 'eof') endInput(ctx, peer);
  else if (how === 'twice') {
    conn.kill!('SIGTERM');
    await ctx.sleep(30);
    conn.kill!('SIGTERM');
  } else conn.kill!(how);
  const allowance = timingWindow(10_000, ctx.env.timeScale).latestMs;
  const exit = await peer.waitExit(allowance);
  const farewell = peer.received.find((r) => r.msg.type === 'session.farewell');
  if (!exit)
    return fail(
      `the agent did not exit within ${Math.round(allowance)} ms after ${how === 'eof' ? 'the end of its input' : how}`,
      'exit status 0',
      'still running',
    );
  return verdictOf(
    `exited ${exit.code ?? exit.signal} after hand-off and farewell`,
    check(
      exit.code === 0,
      `the agent exited with ${exit.signal ? `signal ${exit.signal}` : `status ${exit.code}`}${launcherHint(ctx, exit.signal)}`,
      'exit status 0',
      `${exit.signal ?? exit.code}`,
    ),
    farewell
      ? checkSequence(peer, [t.taskId], farewell)
      : fail(
          'the agent exited without session.farewell',
          'task.handoff, result, session.farewell',
          peer.received
            .slice(-3)
            .map((r) => describeMessage(r.msg))
            .join(', '),
        ),
    how === 'twice'
      ? check(
          peer.received.filter((r) => r.msg.type === 'session.farewell').length === 1,
          'a second signal started a second shutdown',
          'one farewell',
          'more',
        )
      : null,
  );
}

export const stdioCases: Case[] = [
  defineCase({
    id: 'stdio.stdout.protocol-only',
    title: 'The agent writes nothing but TAP messages on stdout while it works',
    profile: 'stdio',
    requirements: ['TAP-STDIO-003', 'TAP-STDIO-001'],
    needs: { capabilities: ['tap.test.stream', 'tap.test.fail'], ...STDIO },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      await peer.sendText('{oops', 'malformed input, to provoke logging');
      await peer.barrier();
      endInput(ctx, peer);
      await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return verdictOf(
        'stdout clean',
        check(
          ctx.findings.nonProtocol === 0,
          `${count(ctx.findings.nonProtocol, 'non-protocol line')} on stdout`,
          'only TAP messages',
          count(ctx.findings.nonProtocol, 'other line'),
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.eof.orderly',
    title: 'At end of input the agent hands off its task, ends it SHUTTING_DOWN, says farewell and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-016', 'TAP-STDIO-006', 'TAP-SHUT-040'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'eof'),
  }),
  defineCase({
    id: 'stdio.eof.before-handshake',
    title: 'An agent whose input ends before any handshake exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-006'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      endInput(ctx, peer);
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return verdictOf(
        'exit 0',
        check(
          exit?.code === 0,
          'the agent did not exit 0 at the end of its input',
          'exit status 0',
          exit ? String(exit.signal ?? exit.code) : 'still running',
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.signal.sigterm',
    title: 'On SIGTERM the agent hands off, ends its task, says farewell and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-014'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'SIGTERM'),
  }),
  defineCase({
    id: 'stdio.signal.sigint',
    title: 'On SIGINT the agent shuts down as on SIGTERM and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-014'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'SIGINT'),
  }),
  defineCase({
    id: 'stdio.signal.twice',
    title: 'A second SIGTERM during shutdown starts no second shutdown; the agent still exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-015'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'twice'),
  }),
  defineCase({
    id: 'stdio.shutdown-request.exit',
    title: 'After an approved shutdown.request a stdio agent exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-006'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 500 });
      const r = need(await peer.reply(sent));
      if (r.msg.type === 'shutdown.response' && r.msg.payload.approve !== true)
        return { verdict: 'UNIMPLEMENTED', detail: 'the agent declined the shutdown, which it may do' };
      const exit = await peer.waitExit(timingWindow(500, ctx.env.timeScale).latestMs);
      return verdictOf(
        'exit 0',
        check(
          exit?.code === 0,
          'the agent did not exit 0 after its session ended',
          'exit status 0',
          exit ? String(exit.signal ?? exit.code) : 'still running',
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.framing.blank-lines',
    title: 'Lines holding only white space are ignored',
    profile: 'stdio',
    requirements: ['TAP-STDIO-002'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      writeStdin(ctx, peer, '\n   \n\t\n\r\n', 'blank lines');
      await peer.barrier();
      const err = peer.since(mark).find((r) => r.msg.type === 'error');
      return verdictOf('ignored', check(!err, 'a blank line was answered with an error', 'nothing', describeMessage(err?.msg)));
    },
  }),
  defineCase({
    id: 'stdio.framing.crlf',
    title: 'A carriage return before the line feed is stripped',
    profile: 'stdio',
    requirements: ['TAP-STDIO-002'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {});
      writeStdin(ctx, peer, `${JSON.stringify(m)}\r\n`, 'a line ending in CR LF');
      const r = need(await peer.reply(m));
      return verdictOf(
        'answered',
        check(r.msg.type === 'pong', 'a ping ending in CR LF was not answered with pong', 'pong', describeMessage(r.msg)),
      );
    },
  }),
  defineCase({
    id: 'stdio.framing.split-and-joined',
    title: 'A message split across writes, and two messages in one write, are each read as one message',
    profile: 'stdio',
    requirements: ['TAP-STDIO-001'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = JSON.stringify(peer.envelope('ping', {}));
      const ida = JSON.parse(a).message_id;
      writeStdin(ctx, peer, a.slice(0, 10), 'first piece');
      await ctx.sleep(50);
      writeStdin(ctx, peer, a.slice(10, 40), 'second piece');
      await ctx.sleep(50);
      writeStdin(ctx, peer, `${a.slice(40)}\n`, 'last piece');
      need(await peer.reply(ida));
      const b = peer.envelope('ping', {});
      const c = peer.envelope('ping', {});
      writeStdin(ctx, peer, `${JSON.stringify(b)}\n${JSON.stringify(c)}\n`, 'two messages in one write');
      need(await peer.reply(b));
      need(await peer.reply(c));
      return pass('each read as one message');
    },
  }),
  defineCase({
    id: 'stdio.framing.oversized-line',
    title: 'A line longer than max_message_bytes gets MESSAGE_TOO_LARGE and the session goes on',
    profile: 'stdio',
    requirements: ['TAP-LIM-003', 'TAP-LIM-001'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('ping', { 'x-padding': 'p'.repeat(2_000_000) });
      await peer.send(m, { deliberate: 'a 2 MB line over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized line', ctx.scaled(10_000)));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a 2 MB line'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
  defineCase({
    id: 'stdio.epipe',
    title: 'When nobody reads its stdout any more (EPIPE) the agent treats it as a lost transport and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-017'],
    needs: { capabilities: ['tap.test.stream'], ...STDIO },
    budgetMs: 45_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await startTask(peer, 'tap.test.stream', { count: 100000, interval_ms: 1 }));
      ctx.note("closing the read end of the agent's stdout");
      childOf(ctx, peer)?.stdout?.destroy();
      await ctx.sleep(200);
      endInput(ctx, peer);
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return verdictOf(
        'exit 0',
        check(
          exit?.code === 0,
          'the agent did not exit 0 after its output broke',
          'exit status 0',
          exit ? String(exit.signal ?? exit.code) : 'still running',
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.exit.after-fatal',
    title: 'A stdio agent whose handshake ended with a fatal error exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-040'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const init = await peer.post('handshake.init', { ...initPayload(peer, {}), versions: ['999.0'] });
      const r = need(await peer.reply(init));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'an init offering only version 999.0'));
      const exit = await peer.waitExit(timingWindow(0, ctx.env.timeScale).latestMs + 5000);
      return exitedZero(exit, 'after its fatal UNSUPPORTED_VERSION');
    },
  }),
  defineCase({
    id: 'stdio.exit.handshake-timeout',
    title: 'A stdio agent whose handshake timed out exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-040'],
    needs: STDIO,
    budgetMs: 45_000,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs + 5000);
      return exitedZero(exit, 'after the handshake step timed out');
    },
  }),
];
