/**
 * A mutant as a row of its chapter's table (conformance/mutation/mutants/<chapter>.ts), and the
 * builders several chapters' rows share. A row is `[id, breaks, make, cases?, extra?]`: the id
 * `<requirement id>:<how>`, what the mutant does wrong as a sentence, the hooks of its mutation
 * layer (conformance/mutation/layer.ts) for one connection, and what the Mutant says besides.
 */
import { randomBytes } from 'node:crypto';
import type { Transform } from 'node:stream';
import type { Msg, Mutator, View } from './layer.ts';
import { envelope, errorOf, inn, out, payload, recode, type Pred } from './operators.ts';

/** A mutant of the reference agent: the unchanged agent behind one mutation layer that breaks one requirement. */
export interface Mutant {
  /** `<requirement id>:<how>`. */
  id: string;
  requirement: string;
  /** What the mutant does wrong, as a sentence. */
  breaks: string;
  /** Cases to run beside those of the requirement's profiles. */
  cases?: string[];
  /** The hooks for one connection. */
  make: () => Mutator;
  /** Over stdio only: the mutant runs as tap-reference-agent with TAP_BREAK set. */
  binding?: 'stdio';
  /** Over stdio: the exit status after the session, instead of the agent's own (a function: when it returns a number). */
  exitCode?: number | (() => number | undefined);
  /** Over stdio: a stream that standard input passes through before the agent's reader. */
  input?: () => Transform;
}

/** One mutant as its chapter's table writes it. */
export type Row = [
  id: string,
  breaks: string,
  make: () => Mutator,
  cases?: string[],
  extra?: Pick<Mutant, 'binding' | 'exitCode' | 'input'>,
];

/** Any message. */
export const any = () => true;

/** Refusals that the agent must send: the mutant answers with another code. */
export const wrongCode =
  (code: string, request?: string, instead = 'INVALID_MESSAGE') =>
  () =>
    recode(errorOf(code, request), code === instead ? 'PROTOCOL_VIOLATION' : instead);

/** The agent lets a message through that it must refuse: the layer repairs it first, so the agent accepts it. */
export const repairIn = (p: (m: Msg, v: View) => boolean, fix: (m: Msg, v: View) => Msg) => () => inn(p, (m, v) => fix(m, v));

/** A snapshot that answers a request, built by the layer from what it saw of the task. */
export function fakeSnapshot(v: View, to: Msg, state = 'running'): Msg {
  const now = new Date().toISOString();
  return v.make(
    'task.snapshot',
    { state, capability: 'tap.test.echo', last_sequence: 1, created_at: now, updated_at: now },
    { reply_to: to.message_id, task_id: to.task_id },
  );
}

/**
 * Makes the agent take a repeated message as new: a repeat of a matching message gets a fresh
 * message_id before the agent sees it, and the reply's reply_to is turned back. With `keep`, only
 * repeats of one of the last `keep` matching messages are recognised; with `acrossConnections`,
 * only repeats of a message first seen on another connection are forgotten.
 */
export function forgetDuplicates(p: (m: Msg, v: View) => boolean, o: { keep?: number; acrossConnections?: boolean }): () => Mutator {
  const firstSeen = new Map<string, View>();
  return () => {
    const order: string[] = [];
    const back = new Map<string, string>();
    return {
      in: (m, v) => {
        const id = m.message_id;
        if (typeof id !== 'string' || !p(m, v)) return undefined;
        const owner = firstSeen.get(id);
        if (!owner) {
          firstSeen.set(id, v);
          order.push(id);
          return undefined;
        }
        const forgotten = o.acrossConnections ? owner !== v : o.keep !== undefined && !order.slice(-o.keep).includes(id);
        if (!forgotten) return undefined;
        const fresh = randomBytes(16).toString('base64url');
        back.set(fresh, id);
        return envelope({ message_id: fresh })(m);
      },
      out: (m) => (typeof m.reply_to === 'string' && back.has(m.reply_to) ? envelope({ reply_to: back.get(m.reply_to) })(m) : undefined),
    };
  };
}

/** The mutant a row describes. */
export function mutantOf([id, breaks, make, cases, extra]: Row): Mutant {
  return { id, requirement: id.split(':')[0]!, breaks, make, ...(cases ? { cases } : {}), ...extra };
}

/**
 * Refuses with `code` each incoming message `refused` picks once an outgoing message `seen` has
 * marked its task (`perTask`, the default) or the connection, until one `cleared` unmarks it:
 * an agent that refuses more than the rule lets it.
 */
export function refuseOnceSeen(o: {
  seen: Pred;
  cleared?: Pred;
  refused: Pred;
  code: string;
  extra?: Record<string, unknown>;
  perTask?: boolean;
}): () => Mutator {
  return () => {
    const marked = new Set<string>();
    const key = (m: Msg) => (o.perTask === false ? '' : (m.task_id as string));
    return {
      out: (m, v) => {
        if (o.seen(m, v)) marked.add(key(m));
        if (o.cleared?.(m, v)) marked.delete(key(m));
        return undefined;
      },
      in: (m, v, answer) => {
        if (!o.refused(m, v) || !marked.has(key(m))) return undefined;
        answer(v.error(m, o.code, o.extra));
        return null;
      },
    };
  };
}

/** A task.accepted answering request `to`, made by the layer: the agent created no task. */
export function fakeAccepted(v: View, to: Msg): Msg {
  return v.make(
    'task.accepted',
    { capability: to.payload?.capability, deadline: new Date(Date.now() + 3.6e6).toISOString() },
    { reply_to: to.message_id, task_id: to.task_id, sequence: 1 },
  );
}

/** A task.result whose error has `code`. */
export const endedWith =
  (code: string) =>
  (m: Msg): boolean =>
    m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === code;

/** Tasks that end with error `code` are reported completed with `output` instead. */
export const completedInstead =
  (code: string, output: unknown = {}) =>
  (): Mutator =>
    out(endedWith(code), payload({ status: 'completed', error: undefined, output }));
