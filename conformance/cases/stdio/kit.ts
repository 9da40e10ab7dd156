/** Steps that several case files of the stdio profile share. */
import { defineCase, type Case, type CaseHead } from '../../case.ts';
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import type { ChildStdioTransport } from '../../../reference/transports/stdio-child.ts';
import { launcherOf } from '../../target.ts';
import { fail, type Outcome, timingWindow } from '../../verdict.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { checkSequence } from '../farewell.ts';

export const STDIO = { binding: 'stdio' as const };

/** The child process behind a stdio peer. */
export function childOf(ctx: CaseContext, peer: Peer) {
  const t = ctx.connectionOf(peer)?.transport as ChildStdioTransport | undefined;
  return t?.child;
}

/** Ends the agent's standard input (and nothing else: the agent is not killed after a grace period). */
export function endInput(ctx: CaseContext, peer: Peer): void {
  ctx.note("closing the agent's standard input");
  childOf(ctx, peer)?.stdin?.end();
}

/** When a signal killed a launcher (npx, a shell) rather than the agent, how to test the agent itself. */
export function launcherHint(ctx: CaseContext, signal: string | null | undefined): string {
  const launcher = signal ? launcherOf(ctx.env.target) : null;
  return launcher
    ? ` (the command is ${launcher}, which took the signal itself instead of passing it on: give tap-conform the agent's own executable, for an installed package node_modules/.bin/<name>)`
    : '';
}

/** How a case ends a stdio agent's session: end of input, SIGTERM, SIGINT, or SIGTERM twice. */
export type Ending = 'eof' | 'SIGTERM' | 'SIGINT' | 'twice';

/** Ends the session by `how` and checks: hand-off and result for the task, farewell, exit 0. */
export async function orderlyExit(ctx: CaseContext, how: Ending): Promise<Outcome> {
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

/** The case of an orderly end of a stdio agent by `how`, with a sleep task running (spec: shutdown#signals). */
export function orderlyExitCase(how: Ending, head: CaseHead): Case {
  return defineCase({
    ...head,
    profile: 'stdio',
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, how),
  });
}

/** PASS when the agent exited with status 0; else FAIL with `failure` and what it did instead. */
export function exitedZero(exit: { code: number | null; signal?: string | null } | undefined, failure: string): Outcome {
  return verdictOf('exit 0', check(exit?.code === 0, failure, 'exit status 0', exit ? String(exit.signal ?? exit.code) : 'still running'));
}
