/** Steps that several case files of the tasks profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer, Received } from '../../peer.ts';
import { startTask, waitStream } from '../../steps.ts';
import type { Wire } from '../../session-state.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { need, show } from '../kit.ts';

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
