/**
 * The mutation layer: a transport wrapper that sits between an agent and its peer and breaks one
 * rule, by rewriting, dropping, adding or answering messages in either direction. The agent
 * behind it is unchanged; a mutant is the agent plus one such wrapper. A message the layer changes
 * or makes is signed again with the session's key under integrity, so that the broken rule stays
 * the only one broken (spec: integrity#signing).
 */
import { randomBytes } from 'node:crypto';
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport } from '../../reference/transports/transport.ts';
import { signMessage } from '../mac.ts';

/** A decoded TAP message. */
export type Msg = Record<string, unknown> & { type: string; payload?: Record<string, unknown> };

/** What a hook returns: undefined to pass the message unchanged, null to drop it, or what to pass instead. */
export type HookResult = Msg | string | Array<Msg | string> | null | undefined;

/** What the layer knows of the session, for the hooks. */
export class View {
  requester: string | undefined;
  agent: string | undefined;
  sessionId: string | undefined;
  version = '1.0';
  integrity = false;
  established = false;
  /** Requests received from the requester, by message_id. */
  readonly requests = new Map<string, Msg>();
  /** Free state of one mutant, per connection. */
  readonly memo = new Map<string, unknown>();
  /** The text of the last inbound frame that was not a TAP message (not JSON, or no type). */
  lastUndecoded: string | undefined;
  /** The kept prefix of the last inbound frame the reader reported oversized. */
  lastOversized: string | undefined;
  /** Closes the transport as if the agent did (set by mutateTransport). */
  close: (info?: CloseInfo) => Promise<void> = async () => {};
  /** Hands `m` to the agent as if the requester had sent it (set by mutateTransport). */
  inject: (m: Msg) => void = () => {};
  constructor(readonly key: { keyId: string; key: Uint8Array } | undefined) {}

  /** The request an outbound reply answers, if the layer saw it. */
  answers(m: Msg): Msg | undefined {
    return typeof m.reply_to === 'string' ? this.requests.get(m.reply_to) : undefined;
  }

  /** A new agent→requester message with a complete envelope, signed under integrity. */
  make(type: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}): Msg {
    const m: Msg = {
      protocol: `tap/${this.version}`,
      message_id: randomBytes(16).toString('base64url'),
      type,
      source: this.agent ?? 'tap.reference-agent',
      target: this.requester ?? '*',
      timestamp: new Date().toISOString(),
      ...(this.sessionId ? { session_id: this.sessionId } : {}),
      ...extra,
      payload,
    };
    return this.integrity && this.key ? signMessage(m, this.key.key, this.key.keyId) : m;
  }

  /** A new requester→agent message, signed under integrity, for `inject`. */
  makeIn(type: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}): Msg {
    const m: Msg = {
      protocol: `tap/${this.version}`,
      message_id: randomBytes(16).toString('base64url'),
      type,
      source: this.requester ?? 'unknown',
      target: this.agent ?? 'tap.reference-agent',
      timestamp: new Date().toISOString(),
      ...(this.sessionId ? { session_id: this.sessionId } : {}),
      ...extra,
      payload,
    };
    return this.integrity && this.key ? signMessage(m, this.key.key, this.key.keyId) : m;
  }

  /** An error that answers `to`. */
  error(to: Msg, code: string, extra: Record<string, unknown> = {}): Msg {
    return this.make(
      'error',
      { code, message: `refused (${code})`, retryable: false, fatal: false, ...extra },
      { reply_to: to.message_id, ...(typeof to.task_id === 'string' ? { task_id: to.task_id } : {}) },
    );
  }

  /** Signs `m` again when it was signed. */
  sign(m: Msg): Msg {
    if (!this.key || m.signature === undefined) return m;
    const { signature: _old, ...rest } = m;
    return signMessage(rest as Msg, this.key.key, this.key.keyId);
  }

  observeIn(m: Msg): void {
    if (typeof m.message_id === 'string' && !this.requests.has(m.message_id)) this.requests.set(m.message_id, m);
  }

  observeOut(m: Msg): void {
    if (m.type === 'handshake.ack') {
      const p = m.payload ?? {};
      this.agent = (p.agent as { agent_id?: string } | undefined)?.agent_id ?? (m.source as string);
      this.requester = m.target as string;
      this.sessionId = p.session_id as string;
      this.version = (p.version as string) ?? '1.0';
      const params = p.params as { integrity?: unknown; streaming?: boolean } | undefined;
      this.memo.set('streaming', params?.streaming);
      this.memo.set('max_message_bytes', (params as { max_message_bytes?: number } | undefined)?.max_message_bytes);
      this.memo.set('heartbeat_ms', (params as { heartbeat_ms?: number } | undefined)?.heartbeat_ms);
      this.memo.set('request_timeout_ms', (params as { request_timeout_ms?: number } | undefined)?.request_timeout_ms);
      this.integrity = typeof params?.integrity === 'object' && params.integrity !== null;
    } else if (m.type === 'handshake.go') this.established = true;
  }
}

/** How many times each mutant's hooks changed something, by the mutant's label (see mutateTransport). */
export const FIRED = new Map<string, number>();

/** The two hooks of a mutant; each sees one message and the view of the session. */
export interface Mutator {
  /** A message the agent sends. */
  out?(m: Msg, v: View, send: (m: Msg) => void): HookResult;
  /** A message for the agent; `answer` sends a message to the requester as if from the agent. */
  in?(m: Msg, v: View, answer: (m: Msg) => void): HookResult;
  /** When the transport closes under the agent (the peer left, end of input, a broken output). */
  onclose?(info: CloseInfo | undefined, v: View): void;
  /** A frame for the agent that is not a TAP message (oversized, binary, not JSON); `answer` sends as if from the agent; true drops the frame. */
  raw?(frame: InboundFrame, v: View, answer: (m: Msg) => void): boolean | undefined;
  /** The frame limit the agent sets on its transport, changed before it reaches the transport. */
  frameLimit?(n: number, v: View): number;
  /** Instead of closing the transport when the agent closes it. */
  close?(info: CloseInfo | undefined, v: View, close: (info?: CloseInfo) => Promise<void>, send: (m: Msg) => Promise<void>): Promise<void>;
}

/** The messages of a task's stream (they carry a sequence). */
export const STREAM = new Set(['task.accepted', 'task.event', 'task.result', 'plan.submit', 'task.handoff', 'input.request']);

/** Shifts the sequences of each task's later stream messages, after the layer dropped or added one. */
export class Renumber {
  private readonly shifts = new Map<string, number>();
  shift(task: string, by: number): void {
    this.shifts.set(task, (this.shifts.get(task) ?? 0) + by);
  }
  apply(m: Msg): Msg {
    const d = typeof m.task_id === 'string' ? (this.shifts.get(m.task_id) ?? 0) : 0;
    if (!d || !STREAM.has(m.type) || typeof m.sequence !== 'number') return m;
    return { ...m, sequence: m.sequence + d };
  }
}

const asList = (r: HookResult, m: Msg): Array<Msg | string> => (r === undefined ? [m] : r === null ? [] : Array.isArray(r) ? r : [r]);

function decode(bytes: Uint8Array): Msg | undefined {
  try {
    const v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as Msg).type === 'string' ? (v as Msg) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Wraps the agent's side of a transport with a mutator. Frames that are not TAP messages pass
 * unchanged; a message a hook leaves alone passes byte for byte.
 */
export function mutateTransport(inner: RawTransport, mutator: Mutator, key?: { keyId: string; key: Uint8Array }, label = ''): RawTransport {
  const view = new View(key);
  const fired = () => FIRED.set(label, (FIRED.get(label) ?? 0) + 1);
  const encoder = new TextEncoder();
  const toPeer = (m: Msg, original?: string): Promise<void> => {
    view.observeOut(m);
    return inner.send(original ?? JSON.stringify(m));
  };
  // Sends go out one after another, and a close waits for them, so no hook's output is overtaken.
  let queue: Promise<void> = Promise.resolve();
  const outer: RawTransport = {
    start: () => inner.start(),
    send(text: string) {
      queue = queue.then(() => relay(text)).catch(() => {});
      return queue;
    },
    close: (info?: CloseInfo) =>
      queue.then(() =>
        mutator.close
          ? mutator.close(
              info,
              view,
              (i) => inner.close(i ?? info),
              (m) => toPeer(m),
            )
          : inner.close(info),
      ),
    sendRaw: (data: Uint8Array, o?: RawSendOptions) => inner.sendRaw(data, o),
    setMaxFrameBytes: (n: number) => inner.setMaxFrameBytes?.(mutator.frameLimit ? mutator.frameLimit(n, view) : n),
  };
  async function relay(text: string): Promise<void> {
    {
      let m: Msg | undefined;
      try {
        m = JSON.parse(text) as Msg;
      } catch {
        return inner.send(text);
      }
      if (!mutator.out || typeof m?.type !== 'string') {
        if (m && typeof m.type === 'string') view.observeOut(m);
        return inner.send(text);
      }
      const extra: Msg[] = [];
      let inHook = true;
      const later = (x: Msg) => (inHook ? extra.push(x) : void toPeer(x));
      const result = mutator.out(m, view, later);
      inHook = false;
      if (result !== undefined || extra.length) fired();
      const list = asList(result, m);
      for (const x of list) {
        if (typeof x === 'string')
          await inner.send(x); // raw text, for bytes no object can give
        else await toPeer(x === m ? m : view.sign(x), x === m ? text : undefined);
      }
      for (const x of extra) await toPeer(x);
    }
  }
  inner.onclose = (info) => {
    mutator.onclose?.(info, view);
    outer.onclose?.(info);
  };
  inner.onerror = (err) => outer.onerror?.(err);
  view.close = (info) => queue.then(() => inner.close(info));
  view.inject = (m) => {
    fired();
    const bytes = encoder.encode(JSON.stringify(m));
    outer.onmessage?.({ bytes, oversized: false, byteLength: bytes.length });
  };
  inner.onmessage = (frame: InboundFrame) => {
    const m = frame.oversized || frame.binary ? undefined : decode(frame.bytes);
    if (!frame.oversized && !frame.binary && !m) view.lastUndecoded = new TextDecoder().decode(frame.bytes);
    if (frame.oversized) view.lastOversized = new TextDecoder().decode(frame.bytes);
    if (!m) {
      if (mutator.raw?.(frame, view, (x) => void toPeer(view.sign(x))) === true) return fired();
      return outer.onmessage?.(frame);
    }
    view.observeIn(m);
    if (!mutator.in) return outer.onmessage?.(frame);
    const result = mutator.in(m, view, (x) => void toPeer(view.sign(x)));
    if (result !== undefined) fired();
    for (const x of asList(result, m)) {
      if (x === m) outer.onmessage?.(frame);
      else if (typeof x === 'string') {
        const bytes = encoder.encode(x);
        outer.onmessage?.({ bytes, oversized: false, byteLength: bytes.length });
      } else {
        const bytes = encoder.encode(JSON.stringify(view.sign(x)));
        outer.onmessage?.({ bytes, oversized: false, byteLength: bytes.length });
      }
    }
  };
  return outer;
}
