/**
 * The operators mutants are made of: predicates over messages and small mutators that rewrite,
 * drop, add or answer one kind of message (conformance/mutation/layer.ts runs them).
 */
import { type HookResult, type Msg, type Mutator, Renumber, STREAM, type View } from './layer.ts';

export type Pred = (m: Msg, v: View) => boolean;

/** A message of one of these types. */
export const is =
  (...types: string[]): Pred =>
  (m) =>
    types.includes(m.type);

/** A reply (of one of `types`, any when none) to a request of type `request`. */
export const replyTo =
  (request: string, ...types: string[]): Pred =>
  (m, v) =>
    v.answers(m)?.type === request && (types.length === 0 || types.includes(m.type));

/** An error with this code, optionally answering a request of type `request`. */
export const errorOf =
  (code: string, request?: string): Pred =>
  (m, v) =>
    m.type === 'error' && m.payload?.code === code && (request === undefined || v.answers(m)?.type === request);

/** A state event into `state`. */
export const stateEvent =
  (state: string): Pred =>
  (m) =>
    m.type === 'task.event' && m.payload?.kind === 'state' && m.payload?.state === state;

/** A task.result with this status. */
export const resultOf =
  (status: string): Pred =>
  (m) =>
    m.type === 'task.result' && m.payload?.status === status;

/** A task.request for this capability. */
export const requestFor =
  (capability: string): Pred =>
  (m) =>
    m.type === 'task.request' && m.payload?.capability === capability;

export const both =
  (...ps: Pred[]): Pred =>
  (m, v) =>
    ps.every((p) => p(m, v));

/** Rewrites the agent's messages that match. */
export const out = (p: Pred, f: (m: Msg, v: View, send: (m: Msg) => void) => HookResult): Mutator => ({
  out: (m, v, send) => (p(m, v) ? f(m, v, send) : undefined),
});

/** Rewrites the requester's messages that match, before the agent sees them. */
export const inn = (p: Pred, f: (m: Msg, v: View, answer: (m: Msg) => void) => HookResult): Mutator => ({
  in: (m, v, answer) => (p(m, v) ? f(m, v, answer) : undefined),
});

/** Answers the requester's matching messages with an error of `code` (and `extra` members) instead of letting the agent see them. */
export const refuse = (p: Pred, code: string, extra?: Record<string, unknown>): Mutator =>
  inn(p, (m, v, answer) => {
    answer(v.error(m, code, extra));
    return null;
  });

/** Both hooks of two mutators. */
export const join = (a: Mutator, b: Mutator): Mutator => ({ out: a.out ?? b.out, in: a.in ?? b.in, close: a.close ?? b.close });

/** Drops the agent's matching messages. */
export const dropOut = (p: Pred): Mutator => out(p, () => null);

/** Hides the requester's matching messages from the agent: nothing answers them. */
export const swallow = (p: Pred): Mutator => inn(p, () => null);

/** A payload change. */
export const payload =
  (change: Record<string, unknown> | ((p: Record<string, unknown>, m: Msg) => Record<string, unknown>)) =>
  (m: Msg): Msg => ({ ...m, payload: typeof change === 'function' ? change(m.payload ?? {}, m) : { ...m.payload, ...change } });

/** An envelope change. */
export const envelope =
  (change: Record<string, unknown>) =>
  (m: Msg): Msg => {
    const next = { ...m, ...change } as Msg;
    for (const [k, val] of Object.entries(change)) if (val === undefined) delete next[k];
    return next;
  };

/** Changes the code of the agent's matching errors. */
export const recode = (p: Pred, code: string): Mutator => out(p, payload({ code }));

/** Answers the requester's matching messages itself, with what `make` builds, instead of the agent. */
export const answerInstead = (p: Pred, make: (m: Msg, v: View) => Msg | Msg[]): Mutator =>
  inn(p, (m, v, answer) => {
    const r = make(m, v);
    for (const x of Array.isArray(r) ? r : [r]) answer(x);
    return null;
  });

/** Drops matching stream messages and renumbers the rest, so that the stream has no gap of its making. */
export const dropFromStream = (p: Pred): Mutator => {
  const renumber = new Renumber();
  return {
    out: (m, v) => {
      if (STREAM.has(m.type) && typeof m.task_id === 'string' && p(m, v)) {
        renumber.shift(m.task_id, -1);
        return null;
      }
      const r = renumber.apply(m);
      return r === m ? undefined : r;
    },
  };
};

/** Adds a message after each matching stream message, renumbering later ones. */
export const addToStream = (p: Pred, make: (m: Msg, v: View) => Msg): Mutator => {
  const renumber = new Renumber();
  return {
    out: (m, v) => {
      const base = renumber.apply(m);
      if (!p(m, v) || typeof m.task_id !== 'string') return base === m ? undefined : base;
      const added = make(base, v);
      if (STREAM.has(added.type)) renumber.shift(m.task_id, 1);
      return [base, added];
    },
  };
};

/** A stream message of the same task, next in sequence, made by the layer. */
export function next(m: Msg, v: View, type: string, body: Record<string, unknown>): Msg {
  return v.make(type, body, { task_id: m.task_id, sequence: (m.sequence as number) + 1 });
}

/** Delays the agent's matching messages by `ms`, keeping their order among themselves. */
export const delayOut = (p: Pred, ms: number): Mutator =>
  out(p, (m, _v, send) => {
    setTimeout(() => send(m), ms);
    return null;
  });
