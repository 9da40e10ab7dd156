/**
 * The bare floor's protocol: newline-delimited JSON with no envelope, no schema and no state.
 * A request `{ id, payload }` is answered `{ id, payload }`; a request `{ id, stream: n, template }`
 * is answered by n copies of the template (its `index` set each time), then `{ id, done: n }`.
 * Every message is parsed and stringified once on each side: the cost any JSON protocol pays.
 *
 * TAP's message pattern: a line `{ id, templates: [accepted, event, result] }` stores three
 * messages; after it, a request carrying `four: true` (a TAP task.request in size) is answered with
 * copies of the three, their `id` set and `n` counting 1 to 3, the last one carrying the payload.
 * That is the floor of any protocol that, like TAP, sends four messages a task. A `templates` line
 * of one message (a quiet task.result) makes the floor of TAP 1.1's quiet task, two messages a
 * task (spec: tasks#quiet-tasks).
 */

/** Where a bare server writes a line (no terminator); a promise means "wait before writing more". */
export type SendLine = (text: string) => void | Promise<void>;

interface Request {
  id: number;
  payload?: unknown;
  stream?: number;
  template?: { index?: number } & Record<string, unknown>;
  templates?: Record<string, unknown>[];
  four?: boolean;
}

/** What one connection of the floor keeps: the answers of a task, once a `templates` line has set them. */
export interface BareSession {
  replies: Record<string, unknown>[];
}

/** The session of a process that serves one connection. */
const shared: BareSession = { replies: [] };

/** Answers one request line. */
export async function answer(line: string, send: SendLine, session: BareSession = shared): Promise<void> {
  const req = JSON.parse(line) as Request;
  const { replies } = session;
  if (req.templates !== undefined) {
    session.replies = req.templates;
    await send(JSON.stringify({ id: req.id }));
    return;
  }
  if (req.four === true) {
    for (let n = 1; n <= replies.length; n++) {
      const reply =
        n === replies.length ? { ...replies[n - 1], id: req.id, n, payload: req.payload } : { ...replies[n - 1], id: req.id, n };
      await send(JSON.stringify(reply));
    }
    return;
  }
  if (req.stream === undefined) {
    await send(JSON.stringify({ id: req.id, payload: req.payload }));
    return;
  }
  const event = { ...req.template };
  for (let index = 0; index < req.stream; index++) {
    event.index = index;
    const pending = send(JSON.stringify(event));
    if (pending) await pending;
  }
  await send(JSON.stringify({ id: req.id, done: req.stream }));
}
