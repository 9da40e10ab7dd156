/** Steps that several case files of the tasks profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer, Received } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { describeMessage, startTask, streamOf, waitStream } from '../../steps.ts';
import { fail, got, miss, type Got, type Outcome } from '../../verdict.ts';
import { check, need, show, status } from '../kit.ts';

export const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });

/** The max_message_bytes of the result-size cases: small enough that an echo can pass it. */
const SMALL_MAX = 8192;

/** Runs `probe` in a session whose max_message_bytes is 8 192 bytes; a FAIL when the agent does not accept that limit. */
export async function withSmallMessages(ctx: CaseContext, probe: (peer: Peer, max: number) => Promise<Outcome>): Promise<Outcome> {
  const peer = need(await ctx.session({ params: { max_message_bytes: SMALL_MAX } }));
  if (peer.state.params?.max_message_bytes !== SMALL_MAX)
    return fail(`the agent did not accept max_message_bytes ${SMALL_MAX}`, String(SMALL_MAX), show(peer.state.params?.max_message_bytes));
  return probe(peer, SMALL_MAX);
}

/** Sends a quiet task.request (`quiet: true`) and returns it; a quiet task has no direct reply when it is created. */
export async function quietRequest(peer: Peer, capability: string, input: unknown, extra: Partial<Wire> = {}): Promise<Wire> {
  return peer.post('task.request', { capability, input, quiet: true }, { task_id: peer.ids.task('quiet'), ...extra });
}

/** Waits for the quiet task's result, unless the request was refused first; returns the result. */
export async function quietResult(peer: Peer, sent: Wire): Promise<Got<Received>> {
  return peer.waitFor(
    (r) => (r.msg.type === 'task.result' && r.msg.task_id === sent.task_id) || r.msg.reply_to === sent.message_id,
    `the task.result of the quiet task ${sent.task_id}`,
  );
}

/** The stream messages of a task, described as "type@sequence" for a verdict. */
export function described(stream: readonly Received[]): string {
  return stream.map((r) => `${r.msg.type}@${r.msg.sequence}`).join(', ') || 'nothing';
}

/**
 * Checks that a quiet task's stream is exactly `types`, numbered from 2 (spec: tasks#quiet-tasks,
 * tasks#quiet-sequences), and that its request got no direct reply.
 */
export function checkQuietStream(peer: Peer, sent: Wire, types: readonly string[]): Outcome | null {
  const stream = streamOf(peer, sent.task_id!);
  const expected = types.map((t, i) => `${t}@${i + 2}`).join(', ');
  const reply = peer.since(0).find((r) => r.msg.reply_to === sent.message_id);
  return (
    check(
      described(stream) === expected,
      `the quiet task's stream is not ${types.join(' then ')} alone, numbered from 2`,
      expected,
      described(stream),
    ) ??
    check(!reply, `the quiet request got a direct reply, ${describeMessage(reply?.msg)}`, 'no direct reply', describeMessage(reply?.msg))
  );
}

/** Asks task.status until the task leaves `accepted`; returns the snapshot that shows it running. */
export async function untilRunning(peer: Peer, taskId: string): Promise<Got<Received>> {
  for (let i = 0; i < 50; i++) {
    const r = need(await status(peer, taskId));
    if (r.msg.type !== 'task.snapshot')
      return miss(fail(`task.status of the quiet task was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg)));
    if (r.msg.payload?.state !== 'accepted') return got(r);
  }
  return miss(fail('the quiet task stayed accepted through 50 status requests', 'running', 'accepted'));
}

/** The schema tap.test.ask asks its answers to match in the input-required cases (spec: tasks#input-required). */
export const ASK_SCHEMA = {
  type: 'object',
  properties: { colour: { enum: ['red', 'green'] } },
  required: ['colour'],
  additionalProperties: false,
};
export const ASK_PROMPT = 'Which colour, red or green?';

/** Starts a tap.test.ask task and waits for its input.request. */
export async function asked(peer: Peer, o: { timeoutMs?: number } = {}): Promise<{ taskId: string; request: Received }> {
  const t = need(await startTask(peer, 'tap.test.ask', { schema: ASK_SCHEMA, prompt: ASK_PROMPT }, o));
  const request = need(await waitStream(peer, t.taskId, (m) => m.type === 'input.request', 'input.request'));
  return { taskId: t.taskId, request };
}

/** Sends input.response and returns it with the agent's direct reply. */
export async function answer(peer: Peer, taskId: string, requestId: unknown, value: unknown): Promise<{ sent: Wire; reply: Received }> {
  const sent = await peer.post('input.response', { request_id: requestId, answer: value }, { task_id: taskId });
  return { sent, reply: need(await peer.reply(sent)) };
}
