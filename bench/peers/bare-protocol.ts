/**
 * The bare floor's protocol: newline-delimited JSON with no envelope, no schema and no state.
 * A request `{ id, payload }` is answered `{ id, payload }`; a request `{ id, stream: n, template }`
 * is answered by n copies of the template (its `index` set each time), then `{ id, done: n }`.
 * Every message is parsed and stringified once on each side: the cost any JSON protocol pays.
 */

/** Where a bare server writes a line (no terminator); a promise means "wait before writing more". */
export type SendLine = (text: string) => void | Promise<void>;

interface Request {
  id: number;
  payload?: unknown;
  stream?: number;
  template?: { index?: number } & Record<string, unknown>;
}

/** Answers one request line. */
export async function answer(line: string, send: SendLine): Promise<void> {
  const req = JSON.parse(line) as Request;
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
