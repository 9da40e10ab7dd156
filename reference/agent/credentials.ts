/**
 * The credentials of a connection's handshake.init, checked before the pipeline reads it: an
 * authenticator may answer asynchronously (a token verified against a key set), while the
 * pipeline and the handshake machine are synchronous. A frame whose init carries credentials not
 * checked yet is held, with every frame after it, until the authenticator answers; the machine
 * then reads the answer (spec: handshake#credentials, errors#order-of-checks).
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import type { InboundFrame } from '../core/frame.ts';
import type { AuthenticatorAnswer } from './options.ts';
import type { Runtime } from './runtime.ts';
import type { Link } from './sessions.ts';

type Credentials = { scheme: string; token?: string };

/** Frames a connection holds while its credentials are checked; a peer that sends more is cut off. */
export const MAX_HELD_FRAMES = 64;
/** Answers a connection remembers, for inits repeated with the same credentials. */
const MAX_ANSWERS = 8;

const decoder = new TextDecoder('utf-8', { fatal: false });

/** The credentials and card of a frame that looks like a handshake.init carrying credentials; undefined for any other frame. */
function initCredentials(frame: InboundFrame): { credentials: Credentials; agent: AgentCard } | undefined {
  if (frame.oversized || frame.binary) return undefined;
  let msg: unknown;
  try {
    msg = JSON.parse(decoder.decode(frame.bytes));
  } catch {
    return undefined;
  }
  const m = msg as { type?: unknown; payload?: { credentials?: unknown; agent?: unknown } } | null;
  if (typeof m !== 'object' || m === null || m.type !== 'handshake.init') return undefined;
  const c = m.payload?.credentials as { scheme?: unknown; token?: unknown } | undefined;
  const agent = m.payload?.agent as { agent_id?: unknown } | undefined;
  if (typeof c !== 'object' || c === null || typeof c.scheme !== 'string') return undefined;
  if (c.token !== undefined && typeof c.token !== 'string') return undefined;
  // An init the pipeline refuses anyway is not worth an authenticator's time.
  if (typeof agent !== 'object' || agent === null || typeof agent.agent_id !== 'string') return undefined;
  return { credentials: { scheme: c.scheme, ...(c.token !== undefined ? { token: c.token } : {}) }, agent: agent as AgentCard };
}

const keyOf = (c: Credentials): string => `${c.scheme}\u0000${c.token ?? ''}`;

const isPromise = (v: unknown): v is Promise<AuthenticatorAnswer> => typeof (v as { then?: unknown } | null)?.then === 'function';

/** The credentials check of one connection. */
export class CredentialCheck {
  private readonly answers = new Map<string, AuthenticatorAnswer>();
  private held?: InboundFrame[];
  private cut = false;

  constructor(
    private readonly rt: Runtime,
    /** The connection, closed (1008) when its peer sends more than MAX_HELD_FRAMES while its credentials are checked. */
    private readonly conn: Pick<Link, 'close'>,
    /** True while the connection is open and its handshake has not been acknowledged. */
    private readonly beforeAck: () => boolean,
  ) {}

  private deliver: (frame: InboundFrame) => void = () => {};

  /** The connection's frame handler behind the check: `pipeline` gets every frame, in arrival order, once it need not wait. */
  gate(pipeline: (frame: InboundFrame) => void): (frame: InboundFrame) => void {
    this.deliver = (frame) => {
      if (!this.hold(frame)) pipeline(frame);
    };
    return this.deliver;
  }

  /**
   * True when `frame` is held: frames wait while credentials are checked, and a handshake.init
   * before the ack whose credentials are not checked yet starts the check.
   */
  private hold(frame: InboundFrame): boolean {
    if (this.held) {
      if (this.held.length < MAX_HELD_FRAMES) this.held.push(frame);
      else if (!this.cut) {
        this.cut = true;
        void this.conn.close(1008, 'too many messages while the credentials were checked');
      }
      return true;
    }
    const authenticate = this.rt.authenticate;
    if (!authenticate || !this.beforeAck()) return false;
    const found = initCredentials(frame);
    if (!found) return false;
    const key = keyOf(found.credentials);
    if (this.answers.has(key)) return false;
    let answer: AuthenticatorAnswer | Promise<AuthenticatorAnswer>;
    try {
      answer = authenticate(found.credentials, found.agent);
    } catch (err) {
      answer = this.failed(err);
    }
    if (!isPromise(answer)) {
      this.remember(key, answer);
      return false;
    }
    this.held = [frame];
    answer
      .then(
        (a) => this.remember(key, a),
        (err: unknown) => this.remember(key, this.failed(err)),
      )
      .finally(() => this.release());
    return true;
  }

  /** The handshake machine's verifyCredentials: the answer the check found for these credentials. */
  readonly verify = (credentials: Credentials, peer: AgentCard): Exclude<AuthenticatorAnswer, Promise<unknown>> => {
    const key = keyOf(credentials);
    const known = this.answers.get(key);
    if (known !== undefined || this.answers.has(key)) return known ?? null;
    // Not seen before the pipeline read it: asked now, and only a synchronous answer counts.
    let answer: AuthenticatorAnswer | Promise<AuthenticatorAnswer>;
    try {
      answer = this.rt.authenticate?.(credentials, peer) ?? null;
    } catch (err) {
      answer = this.failed(err);
    }
    if (isPromise(answer)) {
      answer.catch(() => {});
      return { refused: 'the credentials could not be checked' };
    }
    return answer;
  };

  private remember(key: string, answer: AuthenticatorAnswer): void {
    if (this.answers.size >= MAX_ANSWERS) this.answers.delete(this.answers.keys().next().value!);
    this.answers.set(key, answer);
  }

  /** An authenticator that threw refuses the credentials; the log says why, without them (spec: security#secrets). */
  private failed(err: unknown): AuthenticatorAnswer {
    this.rt.log('error', `the authenticator failed: ${(err as Error)?.message ?? String(err)}`);
    return { refused: 'the credentials could not be checked' };
  }

  /** Hands the held frames back in order; one that starts another check holds the rest again. */
  private release(): void {
    const frames = this.held ?? [];
    this.held = undefined;
    while (frames.length > 0) {
      this.deliver(frames.shift()!);
      if (this.held) {
        (this.held as InboundFrame[]).push(...frames);
        return;
      }
    }
  }
}
