/**
 * The mutants of the reference agent: each breaks one requirement of spec/1.0 and is named
 * `<requirement id>:<how>`. A mutant is the unchanged reference agent behind one mutation layer
 * (conformance/mutation/layer.ts); `make` gives the layer's hooks for one connection, and state
 * a mutant needs across the connections of one agent lives in the closure of `agent`.
 */
import { randomBytes } from 'node:crypto';
import { Transform } from 'node:stream';
import CATALOGUE from '../../schemas/v1/messages.json' with { type: 'json' };
import { signMessage } from '../mac.ts';
import { type Msg, type Mutator, STREAM, type View } from './layer.ts';

const MESSAGE_TYPES = CATALOGUE.messages.map((m) => m.type);
import {
  answerInstead,
  both,
  delayOut,
  dropFromStream,
  dropOut,
  envelope,
  errorOf,
  inn,
  is,
  join,
  next,
  out,
  payload,
  recode,
  refuse,
  replyTo,
  requestFor,
  resultOf,
  stateEvent,
  swallow,
} from './operators.ts';

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

type Spec = [id: string, breaks: string, make: () => Mutator, cases?: string[], extra?: Pick<Mutant, 'binding' | 'exitCode' | 'input'>];

const any = () => true;

/** Refusals that the agent must send: the mutant answers with another code. */
const wrongCode =
  (code: string, request?: string, instead = 'INVALID_MESSAGE') =>
  () =>
    recode(errorOf(code, request), code === instead ? 'PROTOCOL_VIOLATION' : instead);

/** The agent lets a message through that it must refuse: the layer repairs it first, so the agent accepts it. */
const repairIn = (p: (m: Msg, v: View) => boolean, fix: (m: Msg, v: View) => Msg) => () => inn(p, (m, v) => fix(m, v));

/** A snapshot that answers a request, built by the layer from what it saw of the task. */
function fakeSnapshot(v: View, to: Msg, state = 'running'): Msg {
  const now = new Date().toISOString();
  return v.make(
    'task.snapshot',
    { state, capability: 'tap.test.echo', last_sequence: 1, created_at: now, updated_at: now },
    { reply_to: to.message_id, task_id: to.task_id },
  );
}

/** Remembers task ids accepted on any connection of one agent. */
function acrossSessions(): { seen: Map<string, string>; make: () => Mutator } {
  const seen = new Map<string, string>();
  return {
    seen,
    make: () => {
      let mine: string | undefined;
      return {
        out: (m, v) => {
          mine = v.sessionId;
          if (m.type === 'task.accepted' && typeof m.task_id === 'string' && mine) seen.set(m.task_id, mine);
          // A task of another session is reported instead of refused.
          if (m.type === 'error' && m.payload?.code === 'UNKNOWN_TASK' && typeof m.task_id === 'string') {
            const owner = seen.get(m.task_id);
            const to = v.answers(m);
            if (owner && owner !== mine && to) return fakeSnapshot(v, to);
          }
          return undefined;
        },
      };
    },
  };
}

const SPECS: Spec[] = [
  // Authorization (spec: authorization)
  ['TAP-AUTH-001:sessions-share-principal', 'a task of another unauthenticated session is shown instead of refused', acrossSessions().make],
  ['TAP-AUTH-002:cross-principal-lookup', "another principal's task is found by its task_id", acrossSessions().make],
  [
    'TAP-AUTH-003:other-principal-distinguishable',
    "another principal's task is refused with PERMISSION_DENIED, not UNKNOWN_TASK",
    (() => {
      const across = acrossSessions();
      return () => {
        const base = across.make();
        return {
          out: (m, v, s) => {
            const r = base.out?.(m, v, s);
            if (r && typeof r === 'object' && !Array.isArray(r) && r.type === 'task.snapshot')
              return v.error(v.answers(m) ?? m, 'PERMISSION_DENIED');
            return r;
          },
        };
      };
    })(),
  ],
  [
    'TAP-AUTH-004:task-id-global',
    'a task_id in use in another session is refused with TASK_EXISTS',
    (() => {
      const seen = new Set<string>();
      return () => ({
        out: (m, v) => {
          if (m.type === 'task.accepted' && typeof m.task_id === 'string') {
            const key = m.task_id;
            const to = v.answers(m);
            if (seen.has(`${key}`) && v.memo.get(key) !== 'mine' && to) return v.error(to, 'TASK_EXISTS');
            seen.add(key);
            v.memo.set(key, 'mine');
          }
          return undefined;
        },
      });
    })(),
  ],
  [
    'TAP-AUTH-007:expired-not-first',
    'an expired grant on a guarded capability is refused with PERMISSION_DENIED',
    wrongCode('AUTHORIZATION_EXPIRED', 'task.request', 'PERMISSION_DENIED'),
  ],
  [
    'TAP-AUTH-007:expired-accepted',
    'an expired grant is taken as valid',
    () =>
      inn(
        (m) =>
          m.type === 'task.request' && typeof (m.payload?.authorization as { expires_at?: unknown } | undefined)?.expires_at === 'string',
        (m) => payload((p) => ({ ...p, authorization: { ...(p.authorization as object), expires_at: '2999-01-01T00:00:00Z' } }))(m),
      ),
  ],
  [
    'TAP-AUTH-008:permission-not-checked',
    'a guarded capability runs without its permission',
    () =>
      inn(is('task.request'), (m) => {
        const a = (m.payload?.authorization as { permissions?: string[] } | undefined) ?? {};
        if ((a.permissions ?? []).includes('tap.test.write')) return undefined;
        return payload((p) => ({ ...p, authorization: { ...a, permissions: [...(a.permissions ?? []), 'tap.test.write'] } }))(m);
      }),
  ],
  [
    'TAP-AUTH-008:no-required-detail',
    'PERMISSION_DENIED without details.required',
    () =>
      out(
        errorOf('PERMISSION_DENIED'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  [
    'TAP-AUTH-009:auth-required-elsewhere',
    'PERMISSION_DENIED is sent as AUTH_REQUIRED',
    wrongCode('PERMISSION_DENIED', 'task.request', 'AUTH_REQUIRED'),
  ],

  // Cancellation (spec: cancellation)
  ['TAP-CAN-001:accepted-not-cancelled', 'a cancel of an accepted task never ends it', () => dropOut(resultOf('cancelled'))],
  [
    'TAP-CAN-002:no-cancelling-event',
    'a cancel of a running task sends no state event into cancelling',
    () => dropFromStream(stateEvent('cancelling')),
  ],
  ['TAP-CAN-002:no-snapshot', 'a cancel is not answered with a snapshot', () => out(replyTo('task.cancel', 'task.snapshot'), () => null)],
  [
    'TAP-CAN-003:cancelled-as-failed',
    'a cancelled task ends failed',
    () =>
      out(resultOf('cancelled'), (m) =>
        m.payload?.error
          ? undefined
          : payload({ status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'cancelled', retryable: false } })(m),
      ),
  ],
  [
    'TAP-CAN-004:work-goes-on',
    'output events go on after cancelling',
    () => {
      const cancelling = new Set<string>();
      return out(any, (m, v, send) => {
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') cancelling.add(m.task_id as string);
        if (m.type === 'task.result' && cancelling.has(m.task_id as string)) {
          const extra = next({ ...m, sequence: (m.sequence as number) - 1 }, v, 'task.event', { kind: 'output', data: 'more work' });
          send({ ...m, sequence: (m.sequence as number) + 1 });
          return extra;
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-CAN-005:repeat-cancel-effect',
    'a repeated cancel is refused',
    () => {
      const cancelled = new Set<string>();
      return inn(is('task.cancel'), (m, v, answer) => {
        const id = m.task_id as string;
        if (!cancelled.has(id)) {
          cancelled.add(id);
          return undefined;
        }
        answer(v.error(m, 'TASK_TERMINAL'));
        return null;
      });
    },
  ],
  [
    'TAP-CAN-006:cancel-after-cancelled',
    'a cancel of a cancelled task is refused with TASK_TERMINAL',
    () => {
      const ended = new Set<string>();
      return {
        out: (m) => {
          if (m.type === 'task.result' && m.payload?.status === 'cancelled') ended.add(m.task_id as string);
          return undefined;
        },
        in: (m, v, answer) => {
          if (m.type !== 'task.cancel' || !ended.has(m.task_id as string)) return undefined;
          answer(v.error(m, 'TASK_TERMINAL'));
          return null;
        },
      };
    },
  ],
  [
    'TAP-CAN-007:terminal-cancel-snapshot',
    'a cancel of a completed task is answered with a snapshot',
    () => out(errorOf('TASK_TERMINAL', 'task.cancel'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'completed')),
  ],
  ['TAP-CAN-008:slow-result', 'the result after a cancel comes 20 s late', () => delayOut(resultOf('cancelled'), 20_000)],

  // Conformance capabilities and key provisioning (spec: conformance)
  [
    'TAP-CONF-009:echo-changes-input',
    'tap.test.echo returns something else than its input',
    () =>
      out(
        both(resultOf('completed'), (m) => m.payload?.output !== undefined),
        payload({ output: { changed: true } }),
      ),
  ],
  [
    'TAP-CONF-010:bad-input-accepted',
    'a tap.test.* task with an ill-formed input is run',
    () => recode(errorOf('INVALID_MESSAGE', 'task.request'), 'INTERNAL_ERROR'),
  ],
  [
    'TAP-CONF-011:key-not-held',
    'the provisioned key is refused',
    () =>
      answerInstead(
        (m) => m.type === 'handshake.init' && typeof (m.payload?.params as { integrity?: unknown } | undefined)?.integrity === 'object',
        (m, v) => v.error(m, 'AUTH_REQUIRED', { fatal: true }),
      ),
  ],

  // Envelope (spec: envelope)
  [
    'TAP-ENV-001:malformed-as-invalid',
    'a frame that is not JSON is refused with INVALID_MESSAGE',
    wrongCode('MALFORMED_MESSAGE', undefined, 'INVALID_MESSAGE'),
  ],
  ['TAP-ENV-002:i-json-accepted', 'an integer beyond 2^53-1 is accepted', () => recode(errorOf('INVALID_MESSAGE'), 'MALFORMED_MESSAGE')],
  [
    'TAP-ENV-003:duplicate-member',
    'pong carries its type member twice',
    () => out(is('pong'), (m) => JSON.stringify(m).replace('"type":"pong"', '"type":"pong","type":"pong"')),
  ],
  [
    'TAP-ENV-005:protocol-drops-version',
    'messages after the ack say "tap/1"',
    () => out((m, v) => v.established && m.type !== 'handshake.go', envelope({ protocol: 'tap/1' })),
  ],
  [
    'TAP-ENV-006:message-id-reused',
    'two different messages share a message_id',
    () => {
      let first: string | undefined;
      return out(
        (_m, v) => v.established,
        (m) => {
          if (first === undefined) {
            first = m.message_id as string;
            return undefined;
          }
          return m.type === 'pong' ? envelope({ message_id: first })(m) : undefined;
        },
      );
    },
  ],
  ['TAP-ENV-007:wrong-target', 'messages name the wrong target', () => out((_m, v) => v.established, envelope({ target: 'someone-else' }))],
  [
    'TAP-ENV-009:target-star-accepted',
    'a message other than handshake.init with target "*" is accepted',
    repairIn(
      (m) => m.type !== 'handshake.init' && m.target === '*',
      (m, v) => ({ ...m, target: v.agent }),
    ),
  ],
  [
    'TAP-ENV-010:local-time',
    'timestamps without the trailing Z',
    () => out(any, (m) => envelope({ timestamp: String(m.timestamp).replace('Z', '+00:00') })(m)),
  ],
  [
    'TAP-ENV-011:no-session-id',
    'messages after the ack carry no session_id',
    () => out((m, v) => v.agent !== undefined && m.type !== 'handshake.ack', envelope({ session_id: undefined })),
  ],
  [
    'TAP-ENV-012:ack-session-differs',
    "the ack's envelope session_id differs from its payload's",
    () => out(is('handshake.ack'), envelope({ session_id: 'AAAAAAAAAAAAAAAAAAAAAAAA' })),
  ],
  [
    'TAP-ENV-013:reply-to-on-event',
    'a state event carries reply_to',
    () => out(is('task.event'), (m) => envelope({ reply_to: m.message_id })(m)),
  ],
  [
    'TAP-ENV-014:deadline-obeyed-elsewhere',
    'a deadline on task.status is checked',
    () => refuse((m) => m.type === 'task.status' && m.deadline !== undefined, 'DEADLINE_EXCEEDED'),
  ],
  [
    'TAP-ENV-015:unknown-member-refused',
    'a message with an unknown member is refused',
    () => refuse((m) => Object.keys(m).some((k) => !ENVELOPE_MEMBERS.has(k)), 'INVALID_MESSAGE'),
  ],

  // Errors (spec: errors)
  [
    'TAP-ERR-001:retryable-flipped',
    'errors carry the wrong retryable',
    () =>
      out(
        is('error'),
        payload((p) => ({ ...p, retryable: !p.retryable })),
      ),
  ],
  [
    'TAP-ERR-002:unknown-code-refused',
    'an error with an unknown code is answered',
    () =>
      inn(
        (m) => m.type === 'error',
        (m, v, answer) => {
          answer(
            v.make(
              'error',
              { code: 'INVALID_MESSAGE', message: 'unknown code', retryable: false, fatal: false },
              { reply_to: m.message_id },
            ),
          );
          return null;
        },
      ),
  ],
  ['TAP-ERR-003:no-reply-to', 'errors do not carry reply_to', () => out(is('error'), envelope({ reply_to: undefined }))],
  [
    'TAP-ERR-003:no-task-id',
    'errors do not carry task_id',
    () => out((m) => m.type === 'error' && m.task_id !== undefined, envelope({ task_id: undefined })),
  ],
  [
    'TAP-ERR-004:error-answered',
    'an error from the requester is answered with an error',
    () =>
      inn(is('error'), (m, v, answer) => {
        answer(
          v.make('error', { code: 'PROTOCOL_VIOLATION', message: 'an error', retryable: false, fatal: false }, { reply_to: m.message_id }),
        );
        return null;
      }),
  ],
  [
    'TAP-ERR-005:fatal-not-fatal',
    'an always-fatal error is marked fatal: false and the session stays',
    () => ({
      out: (m) => (m.type === 'error' && m.payload?.fatal === true ? payload({ fatal: false })(m) : undefined),
      close: async () => {},
    }),
  ],
  [
    'TAP-ERR-006:non-fatal-closes',
    'the session ends after a non-fatal error: a farewell, then silence',
    () => {
      let over = false;
      return {
        out: (m, v, send) => {
          if (over) return null;
          if (m.type === 'error' && m.payload?.fatal !== true && v.established) {
            over = true;
            send(v.make('session.farewell', { reason: 'closing' }));
          }
          return undefined;
        },
        in: () => (over ? null : undefined),
      };
    },
  ],
  [
    'TAP-ERR-007:fatal-flag-lies',
    'non-fatal errors are marked fatal: true',
    () => out((m) => m.type === 'error' && m.payload?.fatal !== true, payload({ fatal: true })),
  ],
  [
    'TAP-HS-016:farewell-on-timeout',
    'a handshake step that times out is closed with a session.farewell first',
    () => ({
      close: async (info, v, close, send) => {
        if (!v.established && v.agent !== undefined) await send(v.make('session.farewell', { reason: 'the handshake timed out' }));
        return close(info);
      },
    }),
  ],
  [
    'TAP-WS-010:farewell-close-1001',
    'the connection is closed with code 1001 after the farewells',
    () => ({ close: async (info, _v, close) => close(info?.code === 1000 ? { ...info, code: 1001 } : info) }),
  ],
  [
    'TAP-WS-011:fatal-close-1000',
    'the connection is closed with code 1000 after a fatal error',
    () => ({ close: async (info, _v, close) => close(info?.code === 1008 ? { ...info, code: 1000 } : info) }),
  ],
  [
    'TAP-ERR-008:stops-answering',
    'after a malformed frame the agent stops answering',
    () => {
      let mute = false;
      return {
        in: (_m) => (mute ? null : undefined),
        out: (m) => {
          if (m.type === 'error' && m.payload?.code === 'MALFORMED_MESSAGE') mute = true;
          return mute && m.type !== 'error' ? null : undefined;
        },
      };
    },
  ],
  [
    'TAP-ERR-009:refused-has-effect',
    'a refused task.request is accepted as well',
    () =>
      out(both(is('error'), replyTo('task.request')), (m, v, send) => {
        const to = v.answers(m)!;
        if (typeof to.task_id === 'string' && m.payload?.code !== 'TASK_EXISTS' && m.payload?.code !== 'IDEMPOTENCY_CONFLICT')
          send(
            v.make(
              'task.accepted',
              { capability: to.payload?.capability ?? 'x', deadline: new Date(Date.now() + 3.6e6).toISOString() },
              { task_id: `${to.task_id}`, sequence: 1 },
            ),
          );
        return undefined;
      }),
  ],
  [
    'TAP-ERR-010:order-swapped',
    'CAPABILITY_NOT_SUPPORTED is reported as INVALID_MESSAGE',
    wrongCode('CAPABILITY_NOT_SUPPORTED', 'task.request'),
  ],

  // Events and sequences (spec: tasks#events, tasks#sequences)
  ['TAP-EVT-001:no-running-event', 'the state event into running is not sent', () => dropFromStream(stateEvent('running'))],
  [
    'TAP-EVT-002:output-when-not-streaming',
    'an output event precedes the result although streaming is false',
    () =>
      out(
        (m, v) => m.type === 'task.result' && v.memo.get('streaming') === false,
        (m, v) => [
          v.make('task.event', { kind: 'output', data: 'extra' }, { task_id: m.task_id, sequence: m.sequence }),
          { ...m, sequence: (m.sequence as number) + 1 },
        ],
      ),
  ],
  [
    'TAP-EVT-003:accepted-sequence-0',
    'task.accepted carries sequence 0',
    () => {
      return out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number',
        (m) => ({ ...m, sequence: (m.sequence as number) - 1 }),
      );
    },
  ],
  [
    'TAP-EVT-004:sequence-gap',
    'every stream skips sequence 2',
    () =>
      out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number' && (m.sequence as number) >= 2,
        (m) => ({ ...m, sequence: (m.sequence as number) + 1 }),
      ),
  ],
  [
    'TAP-EVT-004:sequence-repeat',
    'the second event repeats the sequence of the first',
    () =>
      out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number' && (m.sequence as number) >= 3,
        (m) => ({ ...m, sequence: (m.sequence as number) - 1 }),
      ),
  ],
  [
    'TAP-EVT-005:out-of-order',
    'output events are sent two at a time, swapped',
    () => {
      let held: Msg | undefined;
      return out(any, (m) => {
        if (m.type === 'task.event' && m.payload?.kind === 'output' && !held) {
          held = m;
          return null;
        }
        if (held && m.task_id === held.task_id) {
          const h = held;
          held = undefined;
          return [m, h];
        }
        return undefined;
      });
    },
  ],

  // Handshake (spec: handshake)
  [
    'TAP-HS-003:identity-not-checked',
    'a handshake.init whose source is not its agent_id is accepted',
    repairIn(is('handshake.init'), (m) => {
      const a = (m.payload?.agent as { agent_id?: string } | undefined)?.agent_id;
      return a && m.source !== a ? { ...m, source: a } : m;
    }),
  ],
  [
    'TAP-HS-003:target-not-checked',
    "a handshake.init for another agent's id is accepted",
    repairIn(
      (m, _v) => m.type === 'handshake.init' && m.target !== '*' && m.target !== 'tap.reference-agent',
      (m) => ({ ...m, target: '*' }),
    ),
  ],
  [
    'TAP-HS-004:lowest-version',
    'the lowest common version is chosen',
    () => repairIn(is('handshake.init'), (m) => payload({ versions: ['1.0'] })(m))(),
  ],
  [
    'TAP-HS-004:version-echoed',
    'the ack names the first version the requester listed',
    () =>
      out(is('handshake.ack'), (m, v) => {
        const req = v.answers(m);
        const first = (req?.payload?.versions as string[] | undefined)?.[0];
        return first && first !== m.payload?.version ? payload({ version: first })(m) : undefined;
      }),
  ],
  [
    'TAP-HS-005:no-supported-list',
    'UNSUPPORTED_VERSION without details.supported',
    () =>
      out(
        errorOf('UNSUPPORTED_VERSION'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  ['TAP-HS-005:stays-open', 'the transport stays open after UNSUPPORTED_VERSION', () => ({ close: async () => {} })],
  [
    'TAP-HS-006:short-session-id',
    'session ids are short and predictable',
    () => {
      let n = 0;
      return out(is('handshake.ack'), (m, v) => {
        const id = `session${String(++n).padStart(17, '0')}`;
        v.sessionId = id;
        return payload({ session_id: id })(m);
      });
    },
  ],
  [
    'TAP-HS-007:missing-dropped',
    'a required capability the agent lacks is left out of missing',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, missing: [] })),
      ),
  ],
  [
    'TAP-HS-008:refuses-when-missing',
    'a handshake that requires an unknown capability is refused',
    () =>
      out(
        (m) => m.type === 'handshake.ack' && Array.isArray(m.payload?.missing) && (m.payload.missing as unknown[]).length > 0,
        (m, v) => ({
          ...v.error(v.answers(m) ?? m, 'UNKNOWN_CAPABILITY', { fatal: true }),
        }),
      ),
  ],
  [
    'TAP-HS-009:heartbeat-not-negotiated',
    'the final heartbeat_ms ignores the proposal',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, params: { ...(p.params as object), heartbeat_ms: 1234 } })),
      ),
  ],
  [
    'TAP-HS-009:limits-not-negotiated',
    'the final max_message_bytes is larger than either proposal',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, params: { ...(p.params as object), max_message_bytes: 99_000_000 } })),
      ),
  ],
  [
    'TAP-HS-010:ready-compared-as-text',
    'a handshake.ready whose params are serialized in another member order is refused',
    () =>
      inn(is('handshake.ready'), (m, v, answer) => {
        const ack = [...v.requests.values()].length;
        void ack;
        const order = Object.keys((m.payload?.params as object) ?? {});
        if (order.join() === [...order].sort().join()) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION', { fatal: true }));
        return null;
      }),
  ],
  [
    'TAP-HS-011:ready-mismatch-accepted',
    'a handshake.ready with other params is accepted',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('ack-params', m.payload?.params);
        return undefined;
      },
      in: (m, v) =>
        m.type === 'handshake.ready' && v.memo.get('ack-params') ? payload({ params: v.memo.get('ack-params') })(m) : undefined,
    }),
  ],
  ['TAP-HS-012:no-go', 'a valid handshake.ready is never answered', () => dropOut(is('handshake.go'))],
  [
    'TAP-HS-014:work-before-go',
    'a task.request before handshake.go is run',
    () => recode(errorOf('HANDSHAKE_REQUIRED'), 'PROTOCOL_VIOLATION'),
  ],
  ['TAP-HS-014:silent-before-go', 'a message before the handshake is left unanswered', () => dropOut(errorOf('HANDSHAKE_REQUIRED'))],
  [
    'TAP-HS-015:out-of-order-code',
    'a handshake message out of order is refused with HANDSHAKE_REQUIRED',
    () =>
      recode(
        both(errorOf('PROTOCOL_VIOLATION'), (m, v) => String(v.answers(m)?.type).startsWith('handshake.')),
        'HANDSHAKE_REQUIRED',
      ),
  ],
  [
    'TAP-HS-018:card-id-differs',
    "the ack's card names another agent_id than its source",
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, agent: { ...(p.agent as object), agent_id: 'someone.else' } })),
      ),
  ],
  [
    'TAP-HS-019:duplicate-capability',
    'the card lists a capability twice',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => {
          const card = p.agent as { capabilities: unknown[] };
          return { ...p, agent: { ...card, capabilities: [...card.capabilities, card.capabilities[0]] } };
        }),
      ),
  ],
  [
    'TAP-HS-021:state-after-error',
    'after a refused init, the next init is refused too',
    () => {
      let refused = false;
      return {
        out: (m) => {
          if (m.type === 'error' && !refused && m.payload?.code === 'IDENTITY_MISMATCH') refused = true;
          return undefined;
        },
        in: (m, v, answer) => {
          if (refused && m.type === 'handshake.init') {
            answer(v.error(m, 'IDENTITY_MISMATCH'));
            return null;
          }
          return undefined;
        },
      };
    },
  ],

  // Idempotency (spec: idempotency)
  [
    'TAP-IDEM-001:duplicate-reexecuted',
    'a duplicate task.request is run again under a new task',
    () => {
      const seen = new Set<string>();
      return inn(is('task.request', 'task.status', 'ping'), (m, v, answer) => {
        const id = m.message_id as string;
        if (!seen.has(id)) {
          seen.add(id);
          return undefined;
        }
        if (m.type === 'ping') {
          answer(v.make('pong', {}, { reply_to: id }));
          return null;
        }
        return { ...m, message_id: `${id}.again` };
      });
    },
  ],
  [
    'TAP-IDEM-001:duplicate-reply-changed',
    'the reply to a duplicate is a fresh message, not the original',
    () => {
      const seen = new Set<string>();
      return inn(any, (m) => {
        const id = m.message_id as string;
        if (!seen.has(id)) {
          seen.add(id);
          return undefined;
        }
        return m.type === 'ping' || m.type === 'task.status' ? { ...m, message_id: `${id}.again` } : undefined;
      });
    },
  ],
  [
    'TAP-IDEM-004:short-memory',
    'only the last 8 message ids are remembered',
    () => {
      const order: string[] = [];
      const first = new Set<string>();
      return inn(any, (m) => {
        const id = m.message_id as string;
        if (first.has(id) && !order.slice(-8).includes(id)) return { ...m, message_id: `${id}.forgotten` };
        if (!first.has(id)) {
          first.add(id);
          order.push(id);
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-IDEM-005:key-ignored',
    'a task.request repeating an idempotency key starts a new task',
    () =>
      inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m) => ({ ...m, idempotency_key: `${m.idempotency_key}.${m.task_id}` }),
      ),
  ],
  [
    'TAP-IDEM-006:conflict-ignored',
    'a different request under a used key is answered TASK_EXISTS',
    wrongCode('IDEMPOTENCY_CONFLICT', 'task.request', 'TASK_EXISTS'),
  ],
  [
    'TAP-IDEM-007:repeat-not-reauthorized',
    'a repeat under a key is answered with a snapshot whatever its authorization',
    () => {
      const snaps = new Map<string, Msg>();
      return {
        out: (m, v) => {
          const to = v.answers(m);
          if (to?.type !== 'task.request' || typeof to.idempotency_key !== 'string') return undefined;
          if (m.type === 'task.snapshot' || m.type === 'task.accepted') snaps.set(to.idempotency_key, m);
          const known = snaps.get(to.idempotency_key);
          if (m.type === 'error' && known && (m.payload?.code === 'PERMISSION_DENIED' || m.payload?.code === 'AUTHORIZATION_EXPIRED'))
            return fakeSnapshot(v, to, 'completed');
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-IDEM-008:same-task-id-new-task',
    'a repeat of a task.request under its task_id is refused with TASK_EXISTS',
    () =>
      out(replyTo('task.request', 'task.snapshot'), (m, v) =>
        v.answers(m)?.idempotency_key === undefined ? v.error(v.answers(m)!, 'TASK_EXISTS') : undefined,
      ),
  ],
  [
    'TAP-IDEM-009:task-exists-as-conflict',
    'TASK_EXISTS is sent as IDEMPOTENCY_CONFLICT',
    wrongCode('TASK_EXISTS', 'task.request', 'IDEMPOTENCY_CONFLICT'),
  ],
  [
    'TAP-IDEM-010:record-kept',
    'a retryable ending keeps the idempotency record',
    () => {
      const done = new Map<string, Msg>();
      return {
        out: (m, v) => {
          const to = v.answers(m);
          if (m.type === 'task.accepted' && to && typeof to.idempotency_key === 'string') done.set(to.idempotency_key, to);
          return undefined;
        },
        in: (m, v, answer) => {
          if (m.type !== 'task.request' || typeof m.idempotency_key !== 'string') return undefined;
          const first = done.get(m.idempotency_key);
          if (!first || first.task_id === m.task_id) return undefined;
          answer(fakeSnapshot(v, { ...m, task_id: first.task_id }, 'failed'));
          return null;
        },
      };
    },
  ],
  [
    'TAP-IDEM-015:record-forgotten',
    'an idempotency record is forgotten once the task ends',
    () =>
      inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m, v) => {
          const n = ((v.memo.get(`k:${m.idempotency_key}`) as number | undefined) ?? 0) + 1;
          v.memo.set(`k:${m.idempotency_key}`, n);
          return n > 1 && m.payload ? { ...m, idempotency_key: `${m.idempotency_key}#${n}` } : undefined;
        },
      ),
  ],
  [
    'TAP-IDEM-016:repeated-init-refused',
    'a byte-identical repeat of the opening init is refused',
    () => {
      let init: string | undefined;
      return inn(is('handshake.init'), (m, v, answer) => {
        const text = JSON.stringify(m);
        if (init === undefined) {
          init = text;
          return undefined;
        }
        if (text !== init) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION'));
        return null;
      });
    },
  ],

  // Integrity (spec: integrity)
  [
    'TAP-INT-001:forged-source-obeyed',
    'a message whose source is not the peer is obeyed',
    repairIn(
      (m, v) => v.established && v.requester !== undefined && m.source !== v.requester,
      (m, v) => ({ ...m, source: v.requester }),
    ),
  ],
  [
    'TAP-INT-002:forged-farewell-obeyed',
    'a forged session.farewell ends the session',
    () =>
      inn(
        (m, v) => m.type === 'session.farewell' && v.established && m.source !== v.requester,
        (m, v, answer) => {
          answer(v.make('session.farewell', { reason: 'bye' }));
          return { ...m, source: v.requester };
        },
      ),
  ],
  [
    'TAP-INT-003:session-id-not-checked',
    'a message with another session_id is obeyed',
    repairIn(
      (m, v) => v.established && m.session_id !== v.sessionId && !String(m.type).startsWith('handshake.'),
      (m, v) => ({ ...m, session_id: v.sessionId }),
    ),
  ],
  [
    'TAP-INT-004:integrity-dropped',
    'a proposed integrity is left out of the final params',
    () =>
      out(is('handshake.ack'), (m, v) => {
        const p = m.payload?.params as Record<string, unknown>;
        if (!p || typeof p.integrity !== 'object') return undefined;
        v.integrity = false;
        return payload({ params: { ...p, integrity: 'none' } })(m);
      }),
  ],
  [
    'TAP-INT-005:downgrade-accepted',
    'a keyed requester is let in without integrity',
    () => out(errorOf('AUTH_REQUIRED', 'handshake.init'), () => null),
  ],
  [
    'TAP-INT-006:unsigned-replies',
    'replies under integrity are sent unsigned',
    () =>
      out(
        (m, v) => v.integrity && m.type === 'pong',
        (m) => envelope({ signature: undefined })(m),
      ),
  ],
  [
    'TAP-INT-008:key-not-bound',
    'a key is accepted from another agent id than the one it is bound to',
    wrongCode('AUTH_REQUIRED', 'handshake.init', 'INVALID_SIGNATURE'),
  ],
  [
    'TAP-INT-009:mac-over-text',
    'the signature value is computed wrongly (padded base64)',
    () =>
      out(
        (m) => typeof m.signature === 'object' && m.signature !== null && m.type === 'task.result',
        (m) => JSON.stringify({ ...m, signature: { ...(m.signature as object), value: `${(m.signature as { value: string }).value}=` } }),
      ),
  ],
  [
    'TAP-INT-010:unknown-members-unsigned',
    'a message whose signature covers only known members is accepted',
    () => recode(errorOf('INVALID_SIGNATURE'), 'INVALID_MESSAGE'),
  ],
  [
    'TAP-INT-011:bad-signature-accepted',
    'a wrong signature is accepted',
    repairIn(
      (m, v) => v.integrity && m.signature !== undefined,
      (m, v) => {
        const { signature: _s, ...rest } = m;
        return v.key ? signMessageFor(v, rest as Msg) : m;
      },
    ),
  ],
  [
    'TAP-INT-011:missing-signature-accepted',
    'an unsigned message under integrity is accepted',
    () =>
      inn(
        (m, v) => v.integrity && m.signature === undefined,
        (m, v) => signMessageFor(v, m),
      ),
  ],
  [
    'TAP-INT-012:duplicate-members-accepted',
    'duplicate members under integrity are refused with INVALID_SIGNATURE',
    () =>
      recode(
        both(errorOf('MALFORMED_MESSAGE'), (_m, v) => v.integrity),
        'INVALID_SIGNATURE',
      ),
  ],
  [
    'TAP-INT-014:skew-ignored',
    'an old timestamp under integrity is accepted',
    repairIn(
      (m, v) =>
        v.integrity &&
        m.signature !== undefined &&
        typeof m.timestamp === 'string' &&
        Math.abs(Date.parse(m.timestamp) - Date.now()) > 60_000,
      (m, v) => signMessageFor(v, { ...m, timestamp: new Date().toISOString() }),
    ),
  ],
  [
    'TAP-INT-015:skew-without-integrity',
    'the skew check is applied without integrity',
    () =>
      refuse(
        (m, v) =>
          !v.integrity && v.established && typeof m.timestamp === 'string' && Math.abs(Date.parse(m.timestamp) - Date.now()) > 300_000,
        'INVALID_SIGNATURE',
      ),
  ],
  [
    'TAP-INT-016:signed-refusal',
    'the refusal of an integrity init is signed',
    () =>
      out(
        (m, v) =>
          m.type === 'error' &&
          v.answers(m)?.type === 'handshake.init' &&
          typeof (v.answers(m)?.payload?.params as { integrity?: unknown } | undefined)?.integrity === 'object',
        (m, v) => signMessageFor(v, m),
      ),
  ],

  // Limits (spec: limits)
  [
    'TAP-LIM-001:too-large-closes',
    'MESSAGE_TOO_LARGE is sent as INVALID_MESSAGE',
    wrongCode('MESSAGE_TOO_LARGE', undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-LIM-002:oversized-output',
    "task.result is padded beyond the session's max_message_bytes",
    () =>
      out(is('task.result'), (m, v) =>
        payload((p) => ({ ...p, 'x-pad': 'x'.repeat(Number(v.memo.get('max_message_bytes') ?? 1048576)) }))(m),
      ),
  ],
  [
    'TAP-LIM-003:size-not-first',
    'an oversized frame is refused as malformed',
    wrongCode('MESSAGE_TOO_LARGE', undefined, 'MALFORMED_MESSAGE'),
  ],
  ['TAP-LIM-004:busy-ignored', 'BUSY is sent as PERMISSION_DENIED', wrongCode('BUSY', 'task.request', 'PERMISSION_DENIED')],
  ['TAP-LIM-006:no-pings', 'the agent never pings an idle peer', () => dropOut((m, v) => m.type === 'ping' && v.established)],
  ['TAP-LIM-008:no-pong', 'pings are not answered', () => dropOut(is('pong'))],
  [
    'TAP-LIM-012:closes-on-bad-input',
    'the session ends after the third bad frame: a farewell, then silence',
    () => {
      let bad = 0;
      let over = false;
      return {
        out: (m, v, send) => {
          if (over) return null;
          if (m.type === 'error' && (m.payload?.code === 'MALFORMED_MESSAGE' || m.payload?.code === 'INVALID_MESSAGE') && ++bad === 3) {
            over = true;
            send(v.make('session.farewell', { reason: 'too much bad input' }));
          }
          return undefined;
        },
        in: () => (over ? null : undefined),
      };
    },
  ],

  // Messages (spec: messages)
  [
    'TAP-MSG-001:wrong-direction',
    'the agent sends a task.status',
    () => out(is('pong'), (m, v) => [m, v.make('task.status', {}, { task_id: 'probe' })]),
  ],
  [
    'TAP-MSG-002:unknown-type-wrong-code',
    'an unknown message type is refused with INVALID_MESSAGE',
    () => recode(errorOf('UNKNOWN_MESSAGE_TYPE'), 'INVALID_MESSAGE'),
  ],
  [
    'TAP-MSG-003:two-replies',
    'task.status is answered twice',
    () =>
      out(replyTo('task.status', 'task.snapshot'), (m, _v) => [
        m,
        { ...m, message_id: `${m.message_id}.2`, timestamp: new Date().toISOString() },
      ]),
  ],
  [
    'TAP-MSG-004:effects-before-reply',
    'the snapshot answering task.resume, task.cancel or plan.decision comes after the first message it causes',
    () => {
      let held: Msg | undefined;
      return out(any, (m, v) => {
        if (m.type === 'task.snapshot' && ['task.resume', 'task.cancel', 'plan.decision'].includes(String(v.answers(m)?.type))) {
          held = m;
          return null;
        }
        if (held && STREAM.has(m.type) && m.task_id === held.task_id) {
          const h = held;
          held = undefined;
          return [m, h];
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-MSG-005:reply-without-task-id',
    'replies drop the task_id of their request',
    () => out(replyTo('task.status'), envelope({ task_id: undefined })),
  ],
  [
    'TAP-MSG-006:schema-not-checked',
    'an ill-formed payload is refused with MALFORMED_MESSAGE',
    wrongCode('INVALID_MESSAGE', undefined, 'MALFORMED_MESSAGE'),
  ],

  // Plans (spec: plans)
  [
    'TAP-PLAN-001:effect-before-approval',
    'the plan runs before its approval',
    () => answerInstead(both(is('task.request'), requestFor('tap.test.plan')), (m, v) => v.error(m, 'INTERNAL_ERROR')),
  ],
  [
    'TAP-PLAN-002:plan-from-accepted',
    'plan.submit is sent without the running event before it',
    () => dropFromStream(both(stateEvent('running'), (m, v) => v.memo.get(`plan:${m.task_id}`) !== undefined || true)),
  ],
  [
    'TAP-PLAN-003:plan-id-reused',
    'a revised plan reuses the plan_id of the plan it revises',
    () =>
      out(
        (m) => m.type === 'plan.submit' && typeof m.payload?.revision_of === 'string',
        (m) => payload((p) => ({ ...p, plan: { ...(p.plan as object), plan_id: p.revision_of } }))(m),
      ),
  ],
  [
    'TAP-PLAN-004:not-withdrawn',
    'a task ended with a pending plan leaves the plan pending',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && (m.payload?.plan as { state?: string } | undefined)?.state === 'withdrawn',
        payload((p) => ({ ...p, plan: { ...(p.plan as object), state: 'pending' } })),
      ),
  ],
  [
    'TAP-PLAN-005:terminal-after-plan-check',
    'a decision for a terminal task is answered PROTOCOL_VIOLATION',
    wrongCode('TASK_TERMINAL', 'plan.decision', 'PROTOCOL_VIOLATION'),
  ],
  [
    'TAP-PLAN-006:wrong-plan-accepted',
    'a decision for another plan is refused with UNKNOWN_TASK',
    wrongCode('PROTOCOL_VIOLATION', 'plan.decision', 'UNKNOWN_TASK'),
  ],
  [
    'TAP-PLAN-007:holding-refused',
    'a decision for a holding plan is refused',
    () => {
      const holding = new Set<string>();
      return {
        out: (m) => {
          if (m.type === 'task.event' && m.payload?.kind === 'progress' && String(m.payload?.stage ?? '').includes('holding'))
            holding.add(m.task_id as string);
          if (m.type === 'plan.submit') holding.delete(m.task_id as string);
          return undefined;
        },
        in: (m, v, answer) => {
          if (m.type !== 'plan.decision' || !holding.has(m.task_id as string)) return undefined;
          answer(v.error(m, 'PROTOCOL_VIOLATION'));
          return null;
        },
      };
    },
  ],
  [
    'TAP-PLAN-008:no-running-after-approval',
    'no state event into running follows the approval',
    () => {
      const approved = new Set<string>();
      return join(
        inn(is('plan.decision'), (m) => {
          if (m.payload?.decision === 'approved') approved.add(m.task_id as string);
          return undefined;
        }),
        dropFromStream((m) => m.type === 'task.event' && m.payload?.state === 'running' && approved.has(m.task_id as string)),
      );
    },
  ],
  [
    'TAP-PLAN-009:rejected-completes',
    'a rejected plan ends the task cancelled',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'PLAN_REJECTED',
        payload({ status: 'cancelled', error: undefined }),
      ),
  ],
  [
    'TAP-PLAN-010:revision-without-revision-of',
    'a revised plan does not name the plan it revises',
    () =>
      out(
        (m) => m.type === 'plan.submit' && m.payload?.revision_of !== undefined,
        payload((p) => ({ ...p, revision_of: undefined })),
      ),
  ],
  [
    'TAP-PLAN-011:plan-changes',
    'the approved plan changes in the snapshot while it runs',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && (m.payload?.plan as { state?: string } | undefined)?.state === 'approved',
        payload((p) => ({
          ...p,
          plan: { ...(p.plan as object), plan: { ...((p.plan as { plan?: object }).plan ?? {}), summary: 'something else' } },
        })),
      ),
  ],
  [
    'TAP-PLAN-012:deadline-not-checked',
    'a step runs after the deadline; the task ends completed',
    () =>
      out(
        (m) => m.type === 'task.result' && m.payload?.status === 'timed_out',
        payload({ status: 'completed', error: undefined, output: {} }),
      ),
  ],
  [
    'TAP-PLAN-013:no-holding',
    'no holding reminder is sent',
    () => dropFromStream((m) => m.type === 'task.event' && m.payload?.kind === 'progress'),
  ],
  // Resume (spec: resume)
  [
    'TAP-RES-001:retains-little',
    'a task.resume from early in the stream is answered RESUME_UNAVAILABLE',
    () =>
      refuse((m) => m.type === 'task.resume' && Number(m.payload?.last_sequence ?? 0) < 2, 'RESUME_UNAVAILABLE', {
        details: { earliest_sequence: 3 },
      }),
  ],
  [
    'TAP-RES-002:resume-no-replay',
    'task.resume is answered with a snapshot but replays nothing',
    () => {
      const resuming = new Set<string>();
      return {
        in: (m) => {
          if (m.type === 'task.resume') resuming.add(m.task_id as string);
          return undefined;
        },
        out: (m, v) => {
          if (STREAM.has(m.type) && resuming.has(m.task_id as string) && (v.memo.get(`sent:${m.message_id}`) as boolean)) return null;
          if (STREAM.has(m.type)) v.memo.set(`sent:${m.message_id}`, true);
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-RES-003:live-before-replay',
    'a resumed stream sends its live messages first',
    () => {
      const replays: Msg[] = [];
      return out(
        (m) => STREAM.has(m.type),
        (m, v) => {
          const again = v.memo.get(`sent:${m.message_id}`) as boolean;
          v.memo.set(`sent:${m.message_id}`, true);
          if (again) {
            replays.push(m);
            return null;
          }
          if (replays.length) return [m, ...replays.splice(0)];
          return undefined;
        },
      );
    },
  ],
  [
    'TAP-RES-004:unavailable-without-earliest',
    'RESUME_UNAVAILABLE without details.earliest_sequence',
    () =>
      out(
        errorOf('RESUME_UNAVAILABLE'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  [
    'TAP-RES-005:replay-restamped',
    'replayed messages carry a new timestamp',
    () =>
      out(
        (m) => STREAM.has(m.type),
        (m, v) => {
          const again = v.memo.get(`sent:${m.message_id}`) as boolean;
          v.memo.set(`sent:${m.message_id}`, true);
          return again ? envelope({ timestamp: new Date(Date.now() + 1000).toISOString() })(m) : undefined;
        },
      ),
  ],
  [
    'TAP-RES-007:other-session-resumed',
    "task.resume for another session's task is answered UNKNOWN_TASK",
    wrongCode('PROTOCOL_VIOLATION', 'task.resume', 'UNKNOWN_TASK'),
  ],
  [
    'TAP-RES-009:resumed-new-id',
    'a granted resume gives a new session_id',
    () => out((m) => m.type === 'handshake.ack' && m.payload?.resumed === true, payload({ session_id: 'CCCCCCCCCCCCCCCCCCCCCCCC' })),
  ],
  [
    'TAP-RES-010:no-replay-on-reconnect',
    'the tasks listed in a resume are not replayed',
    () =>
      inn(
        (m) => m.type === 'handshake.init' && typeof m.payload?.resume === 'object',
        (m) => payload((p) => ({ ...p, resume: { ...(p.resume as object), tasks: [] } }))(m),
      ),
  ],
  [
    'TAP-RES-011:old-transport-open',
    'a resumed session leaves its old transport open',
    () => ({ close: async (info, _v, close) => (info?.code === 1000 ? undefined : close()) }),
  ],
  [
    'TAP-RES-012:declined-fails',
    'a declined resume fails the handshake',
    () =>
      out(
        (m, v) => m.type === 'handshake.ack' && m.payload?.resumed === false && typeof v.answers(m)?.payload?.resume === 'object',
        (m, v) => v.error(v.answers(m)!, 'RESUME_UNAVAILABLE', { fatal: true }),
      ),
  ],
  [
    'TAP-RES-013:no-resume-window',
    'an orphaned session cannot be resumed',
    () =>
      inn(
        (m) => m.type === 'handshake.init' && typeof m.payload?.resume === 'object',
        (m) => payload((p) => ({ ...p, resume: undefined }))(m),
      ),
  ],
  [
    'TAP-RES-014:orphans-kept',
    'tasks of an expired session are ended completed',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'SESSION_LOST',
        payload({ status: 'completed', error: undefined, output: {} }),
      ),
    undefined,
    { binding: 'stdio' },
  ],

  // Security (spec: security)
  [
    'TAP-SEC-003:token-in-error',
    'error messages quote the resume token',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('token', m.payload?.resume_token);
        return m.type === 'error'
          ? payload((p) => ({ ...p, message: `${p.message} (token ${String(v.memo.get('token'))})` }))(m)
          : undefined;
      },
    }),
  ],
  [
    'TAP-SEC-004:input-widens',
    'a permission named in the input or metadata is granted',
    () =>
      inn(
        (m) => m.type === 'task.request' && JSON.stringify({ i: m.payload?.input, x: m.metadata }).includes('tap.test.write'),
        (m) => payload((p) => ({ ...p, authorization: { ...(p.authorization as object), permissions: ['tap.test.write'] } }))(m),
      ),
  ],

  // Shutdown (spec: shutdown)
  ['TAP-SHUT-002:approved-not-carried-out', 'an approved shutdown never ends the session', () => dropOut(is('session.farewell'))],
  [
    'TAP-SHUT-003:ends-all-sessions',
    'an approved shutdown.request ends every session of the agent',
    (() => {
      const others = new Set<(m: Msg) => boolean>();
      return () => {
        let over = false;
        let bye: ((m: Msg) => boolean) | undefined;
        return {
          out: (m, v, send) => {
            if (over) return null;
            if (!bye) {
              bye = () => {
                if (over || !v.established) return false;
                send(v.make('session.farewell', { reason: 'the agent is shutting down' }));
                over = true;
                return true;
              };
              others.add(bye);
            }
            if (m.type === 'shutdown.response' && m.payload?.approve === true) for (const f of others) if (f !== bye) f(m);
            return undefined;
          },
        };
      };
    })(),
  ],
  [
    'TAP-SHUT-005:new-work-accepted',
    'a task.request during shutdown is refused with BUSY',
    wrongCode('SHUTTING_DOWN', 'task.request', 'BUSY'),
  ],
  [
    'TAP-SHUT-005:not-retryable',
    'SHUTTING_DOWN refusals are marked retryable: false',
    () => out(errorOf('SHUTTING_DOWN'), payload({ retryable: false })),
  ],
  [
    'TAP-SHUT-006:status-refused',
    'task.status during shutdown is refused with SHUTTING_DOWN',
    () => {
      let shutting = false;
      return {
        out: (m) => {
          if (m.type === 'shutdown.response' && m.payload?.approve === true) shutting = true;
          return undefined;
        },
        in: (m, v, answer) => {
          if (!shutting || (m.type !== 'task.status' && m.type !== 'ping')) return undefined;
          answer(v.error(m, 'SHUTTING_DOWN'));
          return null;
        },
      };
    },
  ],
  ['TAP-SHUT-007:no-handoff', 'unfinished tasks get no hand-off on shutdown', () => dropFromStream(is('task.handoff'))],
  [
    'TAP-SHUT-008:farewell-first',
    'the farewell is sent before the last results',
    () => {
      const held: Msg[] = [];
      let bye = false;
      return out(any, (m) => {
        if (m.type === 'task.handoff' || (m.type === 'task.result' && (m.payload?.error as { code?: string })?.code === 'SHUTTING_DOWN')) {
          held.push(m);
          return null;
        }
        if (m.type === 'session.farewell' && !bye) {
          bye = true;
          return [m, ...held.splice(0)];
        }
        return undefined;
      });
    },
  ],
  ['TAP-SHUT-009:slow-farewell', 'the farewell comes 20 s late', () => delayOut(is('session.farewell'), 20_000)],
  [
    'TAP-SHUT-011:after-farewell',
    'a pong follows the farewell',
    () => {
      let _said = false;
      return out(any, (m, v, send) => {
        if (m.type === 'session.farewell') {
          _said = true;
          send(v.make('ping', {}));
        }
        return undefined;
      });
    },
  ],
  ['TAP-SHUT-012:requester-farewell-ignored', "a requester's farewell does not end the session", () => swallow(is('session.farewell'))],
  [
    'TAP-SHUT-013:tasks-left-running',
    "a requester's farewell leaves running tasks without a result",
    () => dropOut((m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'SHUTTING_DOWN'),
  ],
  [
    'TAP-SHUT-015:second-shutdown',
    'a shutdown.request during a shutdown is declined',
    () => {
      let approved = 0;
      return out(replyTo('shutdown.request'), (m) => {
        const again = approved > 0;
        if (m.type === 'shutdown.response' && m.payload?.approve === true) approved++;
        return again ? payload({ approve: false, reason: 'a shutdown is in progress' })(m) : undefined;
      });
    },
  ],

  // Tasks (spec: tasks)
  [
    'TAP-TASK-002:refusal-as-snapshot',
    'a task.request for an unknown capability is answered with a snapshot',
    () => out(errorOf('CAPABILITY_NOT_SUPPORTED', 'task.request'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'failed')),
  ],
  [
    'TAP-TASK-002:refusal-as-accepted',
    'a task.request for an unknown capability is answered with task.accepted',
    () =>
      out(errorOf('CAPABILITY_NOT_SUPPORTED', 'task.request'), (m, v) => {
        const to = v.answers(m)!;
        return v.make(
          'task.accepted',
          { capability: to.payload?.capability, deadline: new Date(Date.now() + 3.6e6).toISOString() },
          { reply_to: to.message_id, task_id: to.task_id, sequence: 1 },
        );
      }),
  ],
  [
    'TAP-TASK-003:no-deadline',
    'task.accepted gives no deadline',
    () =>
      out(
        is('task.accepted'),
        payload((p) => ({ ...p, deadline: undefined })),
      ),
  ],
  [
    'TAP-TASK-003:wrong-capability',
    'task.accepted names another capability',
    () => out(is('task.accepted'), payload({ capability: 'tap.test.other' })),
  ],
  ['TAP-TASK-005:accepted-to-completed', 'a task goes from accepted straight to completed', () => dropFromStream(stateEvent('running'))],
  [
    'TAP-TASK-005:cancelling-timed-out',
    'a task in cancelling ends timed_out',
    () => ({
      out: (m, v) => {
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') v.memo.set(`c:${m.task_id}`, true);
        if (m.type === 'task.result' && m.payload?.status === 'cancelled' && v.memo.get(`c:${m.task_id}`) === true)
          return payload({ status: 'timed_out', error: { code: 'DEADLINE_EXCEEDED', message: 'late', retryable: false } })(m);
        return undefined;
      },
    }),
  ],
  [
    'TAP-TASK-006:event-after-result',
    'a log event follows the result',
    () => out(is('task.result'), (m, v) => [m, next(m, v, 'task.event', { kind: 'log', level: 'info', message: 'done' })]),
  ],
  ['TAP-TASK-007:no-result', 'completed tasks get no task.result', () => dropOut(resultOf('completed'))],
  [
    'TAP-TASK-007:two-results',
    'every task.result is sent twice',
    () => out(is('task.result'), (m, v) => [m, { ...next(m, v, 'task.result', m.payload ?? {}) }]),
  ],
  [
    'TAP-TASK-008:output-and-error',
    'a completed result carries an error too',
    () =>
      out(
        resultOf('completed'),
        payload((p) => ({ ...p, error: { code: 'INTERNAL_ERROR', message: 'x', retryable: false } })),
      ),
  ],
  [
    'TAP-TASK-008:failed-without-error',
    'a failed result carries no error',
    () =>
      out(
        resultOf('failed'),
        payload((p) => ({ ...p, error: undefined })),
      ),
  ],
  [
    'TAP-TASK-009:too-large-sent',
    'a result too large is truncated and completed',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'MESSAGE_TOO_LARGE',
        payload({ status: 'completed', error: undefined, output: 'truncated' }),
      ),
  ],
  [
    'TAP-TASK-010:timeout-wrong-code',
    'a timed_out result carries INTERNAL_ERROR',
    () =>
      out(
        resultOf('timed_out'),
        payload((p) => ({ ...p, error: { ...(p.error as object), code: 'INTERNAL_ERROR' } })),
      ),
  ],
  [
    'TAP-TASK-011:stale-snapshot',
    'snapshots report last_sequence one behind',
    () =>
      out(
        replyTo('task.status', 'task.snapshot'),
        payload((p) => ({ ...p, last_sequence: Math.max(0, Number(p.last_sequence) - 1) })),
      ),
  ],
  [
    'TAP-TASK-011:snapshot-after-effects',
    'a cancel is answered with a snapshot already in cancelling',
    () =>
      out(
        replyTo('task.cancel', 'task.snapshot'),
        payload((p) => (p.state === 'running' ? { ...p, state: 'cancelling' } : p)),
      ),
  ],
  [
    'TAP-TASK-012:result-missing-in-snapshot',
    'a terminal snapshot carries no result',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && m.payload?.result !== undefined,
        payload((p) => ({ ...p, result: undefined })),
      ),
  ],
  ['TAP-TASK-013:unknown-task-code', 'a status for an unknown task is answered INVALID_MESSAGE', wrongCode('UNKNOWN_TASK', 'task.status')],
  [
    'TAP-TASK-014:late-request-run',
    'a task.request past its deadline is run',
    repairIn(
      (m) => m.type === 'task.request' && typeof m.deadline === 'string' && Date.parse(m.deadline) < Date.now(),
      (m) => ({ ...m, deadline: undefined }),
    ),
  ],
  [
    'TAP-TASK-015:deadline-ignored',
    'a task whose deadline passed ends failed',
    () => out(resultOf('timed_out'), payload({ status: 'failed' })),
  ],
  [
    'TAP-TASK-019:late-terminal',
    'a cancel after the result was queued is answered as if the task still ran',
    () => out(errorOf('TASK_TERMINAL', 'task.cancel'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'running')),
  ],

  // Versioning (spec: versioning)
  [
    'TAP-VER-001:minor-refused',
    'a message in a later 1.x minor before the ack is refused',
    () =>
      refuse((m, v) => !v.established && /^tap\/1\.[1-9]/.test(String(m.protocol)) && m.type === 'handshake.init', 'UNSUPPORTED_VERSION', {
        fatal: true,
        details: { supported: ['1.0'] },
      }),
  ],
  [
    'TAP-VER-002:major-accepted',
    'a message in another major version is refused with INVALID_MESSAGE',
    wrongCode('UNSUPPORTED_VERSION', undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-VER-003:extension-members',
    'the agent adds an extension member without the x- prefix',
    () =>
      out(
        is('task.result'),
        payload((p) => ({ ...p, vendor_trace: 'abc' })),
      ),
  ],
  [
    'TAP-VER-004:metadata-changes-meaning',
    'metadata changes how the agent behaves',
    () => refuse((m) => m.type === 'task.request' && m.metadata !== undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-VER-005:reserved-name',
    'the card declares a tap.* capability the spec does not define',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => {
          const card = p.agent as { capabilities: Array<Record<string, unknown>> };
          return { ...p, agent: { ...card, capabilities: [...card.capabilities, { ...card.capabilities[0], name: 'tap.custom.thing' }] } };
        }),
      ),
  ],

  // WebSocket (spec: bindings-websocket)
  [
    'TAP-WS-004:two-messages-one-frame',
    'two messages are sent in one frame',
    () => out(is('task.result'), (m) => `${JSON.stringify(m)}\n${JSON.stringify({ ...m, message_id: 'x' })}`),
  ],
  [
    'TAP-WS-005:binary-ignored',
    'a binary frame is refused with INVALID_MESSAGE',
    wrongCode('MALFORMED_MESSAGE', undefined, 'INVALID_MESSAGE'),
  ],

  // Over stdio, as tap-reference-agent with TAP_BREAK (spec: bindings-stdio)
  [
    'TAP-STDIO-001:pretty-printed',
    'task.result is written over several lines',
    () => out(is('task.result'), (m) => JSON.stringify(m, null, 2)),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-STDIO-003:log-on-stdout',
    'a log line is written to stdout before each pong',
    () => out(is('pong'), (m) => ['agent: answering a ping', m]),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-STDIO-005:session-lost-completed',
    'tasks of a lost peer end completed',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'SESSION_LOST',
        payload({ status: 'completed', error: undefined, output: {} }),
      ),
    undefined,
    { binding: 'stdio' },
  ],
  ['TAP-STDIO-006:exit-1', 'the agent exits 1 after an orderly session', () => ({}), undefined, { binding: 'stdio', exitCode: 1 }],
  [
    'TAP-SHUT-014:signal-no-handoff',
    'on a signal, unfinished tasks end without hand-off',
    () => dropFromStream(is('task.handoff')),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-SHUT-016:eof-no-results',
    'at the end of input, unfinished tasks get no result',
    () => dropOut((m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'SHUTTING_DOWN'),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-021:forgets-after-restart',
    'after a restart, tasks of the earlier process are unknown',
    () => {
      const mine = new Set<string>();
      return out(any, (m, v) => {
        if (m.type === 'task.accepted') mine.add(m.task_id as string);
        const to = v.answers(m);
        if (m.type === 'task.snapshot' && to?.type === 'task.status' && !mine.has(m.task_id as string)) return v.error(to, 'UNKNOWN_TASK');
        return undefined;
      });
    },
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-022:not-indeterminate',
    'a task interrupted by a crash ends failed without details.indeterminate',
    () =>
      out(
        (m) => m.type === 'task.result' && m.payload?.status === 'failed',
        payload((p) => ({ ...p, error: { ...(p.error as object), details: {} } })),
      ),
    undefined,
    { binding: 'stdio' },
  ],
  // Rules that had a case but no mutant yet, in the order of the requirement index.
  [
    'TAP-CONF-040:bound-refused',
    'tap.test.sleep refuses the bound ms 0 of its input form',
    () =>
      answerInstead(
        (m, v) => requestFor('tap.test.sleep')(m, v) && (m.payload?.input as { ms?: unknown } | undefined)?.ms === 0,
        (m, v) => v.error(m, 'INVALID_MESSAGE'),
      ),
  ],
  [
    'TAP-ERR-030:nested-error-unanswered',
    'a malformed frame that says "type":"error" anywhere is left unanswered, as if it were an error',
    () => out(errorOf('MALFORMED_MESSAGE'), (_m, v) => (/\\?"type\\?":\s*\\?"error/.test(v.lastUndecoded ?? '') ? null : undefined)),
  ],
  [
    'TAP-ERR-040:ill-formed-echoed',
    'an error echoes an ill-formed task_id or message_id',
    () => {
      const bad: { taskId?: string; messageId?: string } = {};
      return {
        in: (m) => {
          if (typeof m.task_id === 'string' && !IDENTIFIER.test(m.task_id)) bad.taskId = m.task_id;
          if (typeof m.message_id === 'string' && !MESSAGE_ID.test(m.message_id)) bad.messageId = m.message_id;
          return undefined;
        },
        out: (m) => {
          if (m.type !== 'error' || m.payload?.code !== 'INVALID_MESSAGE') return undefined;
          if (m.task_id === undefined && bad.taskId !== undefined) return envelope({ task_id: bad.taskId })(m);
          if (m.reply_to === undefined && bad.messageId !== undefined) return envelope({ reply_to: bad.messageId })(m);
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-ERR-041:target-always-unknown',
    'every error before the ack is addressed to unknown, even when the source could be read',
    () => out((m, v) => m.type === 'error' && v.agent === undefined && m.target !== 'unknown', envelope({ target: 'unknown' })),
  ],
  [
    'TAP-ERR-042:farewell-after-fatal',
    'a session.farewell follows a fatal error',
    () =>
      out(
        (m, v) => m.type === 'error' && m.payload?.fatal === true && v.established,
        (m, v) => [m, v.make('session.farewell', { reason: 'a fatal error' })],
      ),
  ],
  [
    'TAP-HS-001:ping-needs-init',
    'a ping before handshake.init is left unanswered, as if init had to come first',
    () =>
      swallow((m, v) => m.type === 'ping' && v.agent === undefined && ![...v.requests.values()].some((r) => r.type === 'handshake.init')),
  ],
  [
    'TAP-HS-002:several-versions-refused',
    'a handshake.init listing more than one version is refused with UNSUPPORTED_VERSION',
    () =>
      answerInstead(
        (m) => m.type === 'handshake.init' && Array.isArray(m.payload?.versions) && (m.payload.versions as unknown[]).length > 1,
        (m, v) => v.error(m, 'UNSUPPORTED_VERSION', { fatal: true, details: { supported: ['1.0'] } }),
      ),
  ],
  [
    'TAP-HS-013:accepted-before-go',
    'a task.request between ack and go is accepted: task.accepted goes out before the session is established',
    () =>
      out(
        (m, v) => errorOf('HANDSHAKE_REQUIRED', 'task.request')(m, v) && !v.established && v.agent !== undefined,
        (m, v) => {
          const to = v.answers(m)!;
          return v.make(
            'task.accepted',
            { capability: to.payload?.capability, deadline: new Date(Date.now() + 3.6e6).toISOString() },
            { reply_to: to.message_id, task_id: to.task_id, sequence: 1 },
          );
        },
      ),
  ],
  [
    'TAP-HS-040:ready-extra-refused',
    'a handshake.ready whose params hold members the final params lack is refused',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('final-keys', Object.keys((m.payload?.params as object) ?? {}));
        return undefined;
      },
      in: (m, v, answer) => {
        const keys = v.memo.get('final-keys') as string[] | undefined;
        const params = (m.payload?.params as object | undefined) ?? {};
        if (m.type !== 'handshake.ready' || !keys || Object.keys(params).every((k) => keys.includes(k))) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION', { fatal: true, message: 'handshake.ready params differ from the ack' }));
        return null;
      },
    }),
  ],
  [
    'TAP-HS-041:star-as-stranger',
    'a later handshake.init from the bound requester with target "*" gets IDENTITY_MISMATCH',
    () =>
      out(
        (m, v) => errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && v.answers(m)?.target === '*',
        payload({ code: 'IDENTITY_MISMATCH' }),
      ),
  ],
  [
    'TAP-IDEM-002:per-connection-duplicates',
    'duplicate detection stops at the connection: a message repeated on another connection of the session is taken as new',
    forgetDuplicates(() => true, { acrossConnections: true }),
  ],
  [
    'TAP-IDEM-040:repeat-version-checked',
    'a byte-identical repeat of the opening init in a newer minor gets UNSUPPORTED_VERSION',
    () =>
      out(
        (m, v) => m.type === 'handshake.ack' && v.agent !== undefined && v.answers(m)?.protocol !== `tap/${v.version}`,
        (m, v) => v.error(v.answers(m)!, 'UNSUPPORTED_VERSION', { details: { supported: ['1.0'] } }),
      ),
  ],
  [
    'TAP-INT-040:shape-as-invalid-signature',
    'a signature member of the wrong shape gets INVALID_SIGNATURE',
    () => recode((m, v) => errorOf('INVALID_MESSAGE')(m, v) && v.answers(m)?.signature !== undefined, 'INVALID_SIGNATURE'),
  ],
  [
    'TAP-INT-041:later-init-fatal',
    'a later handshake.init proposing integrity gets a fatal PROTOCOL_VIOLATION',
    () =>
      out(
        (m, v) => {
          const integrity = (v.answers(m)?.payload?.params as { integrity?: unknown } | undefined)?.integrity;
          return (
            errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && typeof integrity === 'object' && integrity !== null
          );
        },
        payload({ fatal: true }),
      ),
  ],
  [
    'TAP-LIM-009:gone-after-one-ping',
    'the peer is taken as gone after one unanswered ping',
    () => {
      const answered = new Set<string>();
      return {
        in: (m) => {
          if (m.type === 'pong' && typeof m.reply_to === 'string') answered.add(m.reply_to);
          return undefined;
        },
        out: (m, v) => {
          if (m.type !== 'ping' || !v.established) return undefined;
          const id = m.message_id as string;
          const wait = Number(v.memo.get('heartbeat_ms') ?? 10_000);
          setTimeout(() => {
            if (!answered.has(id)) void v.close({ code: 1001, reason: 'the peer is gone' });
          }, wait).unref?.();
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-LIM-013:nesting-as-invalid',
    'a message deeper than 64 levels gets INVALID_MESSAGE',
    () =>
      recode((m) => m.type === 'error' && (m.payload?.details as { reason?: string } | undefined)?.reason === 'nesting', 'INVALID_MESSAGE'),
  ],
  [
    'TAP-LIM-015:deep-frame-ends-session',
    'after a frame too deep, the session answers nothing more',
    () => {
      let dead = false;
      return {
        in: () => (dead ? null : undefined),
        out: (m) => {
          if (dead) return null;
          if (m.type === 'error' && (m.payload?.details as { reason?: string } | undefined)?.reason === 'nesting') dead = true;
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-LIM-016:pre-handshake-small',
    'before the ack, a frame above 16 384 bytes gets MESSAGE_TOO_LARGE',
    () =>
      answerInstead(
        (m, v) => v.agent === undefined && JSON.stringify(m).length > 16_384,
        (m, v) => v.error(m, 'MESSAGE_TOO_LARGE', { details: { max_message_bytes: 16_384, byte_length: JSON.stringify(m).length } }),
      ),
  ],
  [
    'TAP-LIM-018:duplicate-table-short',
    'the duplicate table keeps only the last 256 task.status requests',
    forgetDuplicates(is('task.status'), { keep: 256 }),
  ],
  [
    'TAP-LIM-019:flood-erases-records',
    "another principal's flood of tasks erases an idempotency record",
    forgetKeys({ after: 2000, others: true }),
  ],
  [
    'TAP-LIM-020:forgets-instead-of-busy',
    'a full table forgets an idempotency record within its retention instead of refusing new tasks with BUSY',
    forgetKeys({ after: 2000, others: false }),
  ],
  [
    'TAP-LIM-040:card-limit-after-ack',
    "after the ack the agent holds its messages to its own card's limit, not the final max_message_bytes: a task.result above the final limit goes out",
    () =>
      out(
        (m, v) => m.type === 'task.result' && v.established && Number(v.memo.get('max_message_bytes')) < 1_048_576,
        (m, v) => payload((p) => ({ ...p, 'x-padding': 'p'.repeat(Number(v.memo.get('max_message_bytes'))) }))(m),
      ),
  ],
  [
    'TAP-LIM-041:ack-over-card-limit',
    "the handshake.ack is measured against the agent's own limit, not the requester's card",
    repairIn(
      (m, v) => m.type === 'handshake.init' && v.agent === undefined && cardLimit(m) !== undefined && cardLimit(m)! < 65_536,
      (m) => payload((p) => ({ ...p, agent: { ...(p.agent as object), limits: { ...cardLimits(m), max_message_bytes: 1_048_576 } } }))(m),
    ),
  ],
  [
    'TAP-LIM-042:too-large-details',
    "MESSAGE_TOO_LARGE for an oversized ack gives the agent's own limit in details",
    () =>
      out(
        errorOf('MESSAGE_TOO_LARGE', 'handshake.init'),
        payload((p) => ({ ...p, details: { ...(p.details as object), max_message_bytes: 1_048_576 } })),
      ),
  ],
  [
    'TAP-LIM-043:heartbeat-drifts',
    "the agent's own heartbeat_ms grows by a second with each session",
    (() => {
      let sessions = 0;
      return () =>
        out(is('handshake.ack'), (m) => {
          const params = (m.payload?.params ?? {}) as { heartbeat_ms?: number };
          const drift = 1000 * sessions++;
          return drift ? payload({ params: { ...params, heartbeat_ms: Number(params.heartbeat_ms) + drift } })(m) : undefined;
        });
    })(),
  ],
  [
    'TAP-PLAN-016:decides-for-requester',
    'a plan left undecided is approved by the agent once it holds',
    () => {
      const plans = new Map<string, string>();
      const injected = new Set<string>();
      return {
        out: (m, v) => {
          if (m.type === 'plan.submit' && typeof m.task_id === 'string')
            plans.set(m.task_id, String((m.payload?.plan as { plan_id?: string } | undefined)?.plan_id));
          if (typeof m.reply_to === 'string' && injected.has(m.reply_to)) return null;
          const holding = m.type === 'task.event' && m.payload?.kind === 'progress' && m.payload.stage === 'plan.holding';
          const planId = typeof m.task_id === 'string' ? plans.get(m.task_id) : undefined;
          if (holding && planId) {
            plans.delete(m.task_id as string);
            const decision = v.makeIn('plan.decision', { plan_id: planId, decision: 'approved' }, { task_id: m.task_id });
            injected.add(decision.message_id as string);
            setImmediate(() => v.inject(decision));
          }
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-RES-006:stream-to-every-session',
    "a task's stream messages go to every open session of the agent",
    (() => {
      const sessions = new Set<(m: Msg) => void>();
      return () => {
        let mine: ((m: Msg) => void) | undefined;
        return {
          out: (m, v, send) => {
            if (!mine && v.established) {
              mine = (x) => {
                if (v.established) send(v.sign({ ...x, session_id: v.sessionId, target: v.requester }));
              };
              sessions.add(mine);
            }
            if (STREAM.has(m.type) && m.type !== 'task.accepted') for (const other of sessions) if (other !== mine) other(m);
            return undefined;
          },
          onclose: () => {
            if (mine) sessions.delete(mine);
          },
        };
      };
    })(),
  ],
  [
    'TAP-RES-008:any-token',
    'a resume is granted whatever resume_token it carries',
    (() => {
      const tokens = new Map<string, string>();
      return () => ({
        out: (m) => {
          if (m.type === 'handshake.ack' && typeof m.payload?.session_id === 'string')
            tokens.set(m.payload.session_id, String(m.payload.resume_token));
          return undefined;
        },
        in: (m) => {
          const resume = m.payload?.resume as { session_id?: string; resume_token?: string } | undefined;
          const token = resume?.session_id ? tokens.get(resume.session_id) : undefined;
          if (m.type !== 'handshake.init' || !resume || !token || resume.resume_token === token) return undefined;
          return payload((p) => ({ ...p, resume: { ...resume, resume_token: token } }))(m);
        },
      });
    })(),
  ],
  [
    'TAP-RES-016:replayed-resume-moves',
    'a replayed resuming handshake.init on another connection is taken as a new resume',
    forgetDuplicates((m) => m.type === 'handshake.init' || m.type === 'handshake.ready', { acrossConnections: true }),
  ],
  [
    'TAP-SHUT-004:shutdown-ends-process',
    "an approved shutdown.request drops every other session's connection, as if the process exited",
    (() => {
      const connections = new Set<View>();
      return () => ({
        out: (m, v) => {
          connections.add(v);
          if (m.type === 'shutdown.response' && m.payload?.approve === true)
            for (const other of connections) if (other !== v) void other.close({ code: 1006, reason: 'the process exited' });
          return undefined;
        },
        onclose: (_i, v) => {
          connections.delete(v);
        },
      });
    })(),
  ],
  [
    'TAP-SHUT-017:epipe-as-crash',
    'the agent exits 1 when its output broke (EPIPE), as after a crash',
    (() => {
      return () => ({
        onclose: (info) => {
          if (/EPIPE/i.test(`${info?.reason ?? ''} ${info?.error?.message ?? ''} ${info?.code ?? ''}`)) EPIPE.seen = true;
        },
      });
    })(),
    undefined,
    { binding: 'stdio', exitCode: () => (EPIPE.seen ? 1 : undefined) },
  ],
  [
    'TAP-SHUT-040:eof-exit-late',
    'at the end of input the agent says farewell on time but exits 40 s later, beyond the allowance of its grace period',
    () => ({
      close: async (info, _v, close) => {
        await new Promise((r) => setTimeout(r, 40_000));
        return close(info);
      },
    }),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-SHUT-041:rejection-refused',
    'a plan rejection during shutdown is refused with SHUTTING_DOWN',
    () => {
      let shutting = false;
      return {
        out: (m) => {
          if (m.type === 'shutdown.response' && m.payload?.approve === true) shutting = true;
          return undefined;
        },
        in: (m, v, answer) => {
          if (!shutting || m.type !== 'plan.decision' || m.payload?.decision !== 'rejected') return undefined;
          answer(v.error(m, 'SHUTTING_DOWN', { retryable: false }));
          return null;
        },
      };
    },
  ],
  [
    'TAP-STDIO-002:blank-line-read',
    'a line holding only white space is read as a frame',
    () => ({}),
    undefined,
    { binding: 'stdio', input: () => blankLinesAsFrames() },
  ],
  [
    'TAP-STDIO-040:exit-1-after-fatal',
    'the agent exits 1 after a session that ended with a fatal error',
    () =>
      out(
        (m) => m.type === 'error' && m.payload?.fatal === true,
        () => {
          FATAL.sent = true;
          return undefined;
        },
      ),
    undefined,
    { binding: 'stdio', exitCode: () => (FATAL.sent ? 1 : undefined) },
  ],
  [
    'TAP-TASK-017:request-timeout-ends',
    "a task is cancelled once the requester's request_timeout_ms has passed",
    () => {
      const injected = new Set<string>();
      return {
        in: (m, v) => {
          const wait = Number(v.memo.get('request_timeout_ms'));
          if (m.type === 'task.request' && v.established && typeof m.task_id === 'string' && Number.isFinite(wait)) {
            const cancel = v.makeIn('task.cancel', {}, { task_id: m.task_id });
            injected.add(cancel.message_id as string);
            setTimeout(() => v.inject(cancel), wait).unref?.();
          }
          return undefined;
        },
        out: (m) => (typeof m.reply_to === 'string' && injected.has(m.reply_to) ? null : undefined),
      };
    },
  ],
  [
    'TAP-TASK-018:cancel-unseen',
    'a task whose cancel was answered cancelling ends completed, as if the completion had not seen the cancel',
    () => {
      const cancelling = new Set<string>();
      return out(any, (m, v) => {
        if (m.type === 'task.snapshot' && v.answers(m)?.type === 'task.cancel' && m.payload?.state === 'cancelling')
          cancelling.add(m.task_id as string);
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') cancelling.add(m.task_id as string);
        if (m.type === 'task.result' && m.payload?.status === 'cancelled' && cancelling.has(m.task_id as string))
          return payload({ status: 'completed', error: undefined, output: null })(m);
        return undefined;
      });
    },
  ],
  [
    'TAP-TASK-020:journal-after-effect',
    'idempotency records are not kept across a restart: a keyed retry after it runs again',
    () => {
      const fresh = new Map<string, string>();
      return inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m) => {
          const key = m.idempotency_key as string;
          if (!fresh.has(key)) fresh.set(key, `${key}-${randomBytes(4).toString('hex')}`);
          return envelope({ idempotency_key: fresh.get(key) })(m);
        },
      );
    },
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-040:snapshot-size-ignored',
    'a result that fits in task.result but not in a snapshot ends completed, and its snapshots carry it',
    () => {
      const inputs = new Map<string, unknown>();
      const kept = new Map<string, Record<string, unknown>>();
      return {
        in: (m, v) => {
          if (requestFor('tap.test.echo')(m, v) && typeof m.task_id === 'string') inputs.set(m.task_id, m.payload?.input);
          return undefined;
        },
        out: (m, v) => {
          const id = m.task_id as string;
          const result = kept.get(id);
          if (m.type === 'task.snapshot' && result) return payload({ state: 'completed', result })(m);
          const code = (m.payload?.error as { code?: string } | undefined)?.code;
          if (m.type !== 'task.result' || code !== 'MESSAGE_TOO_LARGE' || !inputs.has(id)) return undefined;
          const done = payload({ status: 'completed', error: undefined, output: inputs.get(id) })(m);
          if (Buffer.byteLength(JSON.stringify(done)) > Number(v.memo.get('max_message_bytes') ?? 1_048_576)) return undefined;
          kept.set(id, done.payload ?? {});
          return done;
        },
      };
    },
  ],
  [
    'TAP-TASK-041:lost-without-cancelling',
    'a running task ended SESSION_LOST on stdio skips cancelling',
    () => dropFromStream(stateEvent('cancelling')),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-VER-040:stray-minor-fatal',
    'a message in another minor version after the ack gets a fatal UNSUPPORTED_VERSION',
    () => out((m, v) => errorOf('UNSUPPORTED_VERSION')(m, v) && v.established && m.payload?.fatal !== true, payload({ fatal: true })),
  ],
  [
    'TAP-WS-007:ceiling-at-limit',
    'a frame above max_message_bytes closes the connection (1009) instead of getting MESSAGE_TOO_LARGE',
    () =>
      out(
        (m, v) => errorOf('MESSAGE_TOO_LARGE')(m, v) && v.established,
        (_m, v) => {
          void v.close({ code: 1009, reason: 'frame too large' });
          return null;
        },
      ),
  ],
  [
    'TAP-WS-009:second-session',
    'a second handshake.init on an established connection opens another session',
    () =>
      out(any, (m, v) => {
        if (m.type === 'handshake.ack' && !v.memo.has('ack')) v.memo.set('ack', m);
        const to = v.answers(m);
        const later = errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && to?.payload?.resume === undefined;
        if (!later || !to) return undefined;
        const ack = v.memo.get('ack') as Msg;
        return v.make('handshake.ack', { ...ack.payload, session_id: randomBytes(18).toString('base64url') }, { reply_to: to.message_id });
      }),
  ],
];

/** Over stdio, a process serves one session: what the session did, for the exit status. */
const EPIPE = { seen: false };
const FATAL = { sent: false };

/** An identifier (identifier.schema.json) and a message_id (envelope.schema.json). */
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
const MESSAGE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The limits of the card in a handshake.init. */
const cardLimits = (m: Msg) =>
  ((m.payload?.agent as { limits?: Record<string, unknown> } | undefined)?.limits ?? {}) as Record<string, unknown>;
const cardLimit = (m: Msg) =>
  typeof cardLimits(m).max_message_bytes === 'number' ? (cardLimits(m).max_message_bytes as number) : undefined;

/**
 * Makes the agent take a repeated message as new: a repeat of a matching message gets a fresh
 * message_id before the agent sees it, and the reply's reply_to is turned back. With `keep`, only
 * repeats of one of the last `keep` matching messages are recognised; with `acrossConnections`,
 * only repeats of a message first seen on another connection are forgotten.
 */
function forgetDuplicates(p: (m: Msg, v: View) => boolean, o: { keep?: number; acrossConnections?: boolean }): () => Mutator {
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

/**
 * Makes the agent forget an idempotency record once `after` other task.requests arrived since the
 * key was first used (from other connections only, with `others`): the key gets a fresh value.
 */
function forgetKeys(o: { after: number; others: boolean }): () => Mutator {
  const keys = new Map<string, { total: number; own: number; by: View; fresh?: string }>();
  const counts = new Map<View, number>();
  let total = 0;
  return () => ({
    in: (m, v) => {
      if (m.type !== 'task.request') return undefined;
      total++;
      counts.set(v, (counts.get(v) ?? 0) + 1);
      const key = m.idempotency_key;
      if (typeof key !== 'string') return undefined;
      const k = keys.get(key);
      if (!k) {
        keys.set(key, { total, own: counts.get(v)!, by: v });
        return undefined;
      }
      const since = total - k.total - (o.others ? (counts.get(k.by) ?? 0) - k.own : 0);
      if (k.fresh === undefined && since < o.after) return undefined;
      k.fresh ??= `${key}-${randomBytes(4).toString('hex')}`;
      return envelope({ idempotency_key: k.fresh })(m);
    },
  });
}

/** A stdin filter that turns each line holding only white space into a line the agent cannot parse. */
function blankLinesAsFrames(): Transform {
  let rest = '';
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      done(null, lines.map((l) => (l.trim() === '' ? 'blank\n' : `${l}\n`)).join(''));
    },
    flush(done) {
      done(null, rest);
    },
  });
}

const _KNOWN = new Set(MESSAGE_TYPES);

/** Signs a message with the session's key (for a message the layer repairs or makes). */
function signMessageFor(v: View, m: Msg): Msg {
  if (!v.key) return m;
  const { signature: _old, ...rest } = m;
  return signMessage(rest as Msg, v.key.key, v.key.keyId);
}

const ENVELOPE_MEMBERS = new Set([
  'protocol',
  'message_id',
  'type',
  'source',
  'target',
  'timestamp',
  'session_id',
  'reply_to',
  'task_id',
  'sequence',
  'deadline',
  'idempotency_key',
  'authorization',
  'metadata',
  'signature',
  'payload',
]);

export const MUTANTS: Mutant[] = SPECS.map(([id, breaks, make, cases, extra]) => ({
  id,
  requirement: id.split(':')[0]!,
  breaks,
  make,
  ...(cases ? { cases } : {}),
  ...extra,
}));
