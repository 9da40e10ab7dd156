/** Steps that several case files of the streaming-resume profile share, and the stdio case of a finished task's retention. */
import type { CaseContext } from '../../context.ts';
import type { Peer, Received } from '../../peer.ts';
import { fail, type Outcome, skipped } from '../../verdict.ts';
import { type check, need } from '../kit.ts';
import { collectUntilResult, handshake, startTask, streamOf } from '../../steps.ts';

export const STREAM = { capabilities: ['tap.test.stream'] };

/** Opens a second connection of the same session: handshake.init with resume. */
export async function reconnect(ctx: CaseContext, old: Peer, tasks: { task_id: string; last_sequence: number }[], token?: string) {
  const state = old.state;
  // A resume with a wrong token starts a session of its own: it must not share the old one's state.
  const peer = need(await ctx.connect(token === undefined ? { state } : {}));
  const hs = need(await handshake(peer, { resume: { session_id: state.sessionId!, resume_token: token ?? state.resumeToken!, tasks } }));
  return { peer, ack: hs.ack };
}

/** Sends task.resume and returns the snapshot and the mark after which replays arrive. */
export async function resume(peer: Peer, taskId: string, last: number): Promise<{ snapshot: Received; mark: number }> {
  const mark = peer.mark();
  const sent = await peer.post('task.resume', { last_sequence: last }, { task_id: taskId });
  return { snapshot: need(await peer.reply(sent)), mark };
}

/** The replayed copies of a task's stream received since `mark`, in arrival order. */
export function replaysSince(peer: Peer, taskId: string, mark: number): Received[] {
  return peer.since(mark).filter((r) => r.msg.task_id === taskId && r.msg.sequence !== undefined);
}

/** Checks replayed messages are byte-identical copies of the originals, in order, from `from`. */
export function checkReplay(peer: Peer, taskId: string, replays: Received[], from: number, to: number): ReturnType<typeof check> {
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

/**
 * SKIPPED when the agent announced a resume_window_ms of 0: it keeps no finished task's stream
 * (TAP-RES-001), so a resume after the task's end owes no replay; null otherwise.
 */
export function retainsNothing(resumeWindowMs: unknown): Outcome | null {
  return resumeWindowMs === 0
    ? skipped(
        "the agent announced resume_window_ms 0, so it keeps no finished task's stream (TAP-RES-001) and a task.resume after the task's end owes no replay; an agent that announces a window above 0 gets this case",
      )
    : null;
}

/**
 * Runs a two-output stream task to its end, then asks for its whole stream with task.resume from 0:
 * the reply, the last sequence, and `replayed`, which waits for that sequence to come again and
 * checks the replay (in order, byte for byte).
 */
export async function resumeFinished(
  peer: Peer,
): Promise<{ snapshot: Received; last: number; replayed: () => Promise<ReturnType<typeof check>> }> {
  const t = need(await startTask(peer, 'tap.test.stream', { count: 2 }));
  const r = need(await collectUntilResult(peer, t.taskId));
  const last = r.result.msg.sequence!;
  const { snapshot, mark } = await resume(peer, t.taskId, 0);
  const replayed = async () => {
    need(await peer.waitFor((m) => m.index >= mark && m.msg.task_id === t.taskId && m.msg.sequence === last, 'the full replay'));
    await peer.barrier();
    return checkReplay(peer, t.taskId, replaysSince(peer, t.taskId, mark), 1, last);
  };
  return { snapshot, last, replayed };
}
