/** Mutants that break the rules of spec/1.0/shutdown.md (spec: shutdown). */
import type { Msg, View } from '../layer.ts';
import { delayOut, dropFromStream, dropOut, errorOf, is, out, payload, replyTo, swallow } from '../operators.ts';
import { any, refuseOnceSeen, type Row, wrongCode } from '../rows.ts';

/** Over stdio, a process serves one session: what the session did, for the exit status. */
const EPIPE = { seen: false };

/** The agent's approval of a shutdown.request: the sequence has begun. */
const approvedShutdown = (m: Msg) => m.type === 'shutdown.response' && m.payload?.approve === true;

export const rows: Row[] = [
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
    refuseOnceSeen({ seen: approvedShutdown, refused: is('task.status', 'ping'), code: 'SHUTTING_DOWN', perTask: false }),
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
    refuseOnceSeen({
      seen: approvedShutdown,
      refused: (m) => m.type === 'plan.decision' && m.payload?.decision === 'rejected',
      code: 'SHUTTING_DOWN',
      extra: { retryable: false },
      perTask: false,
    }),
  ],
  [
    'TAP-SHUT-111:answer-taken',
    'an answer during shutdown is refused with PROTOCOL_VIOLATION instead of SHUTTING_DOWN',
    wrongCode('SHUTTING_DOWN', 'input.response', 'PROTOCOL_VIOLATION'),
  ],
  [
    'TAP-SHUT-112:handoff-without-request',
    'the hand-off of a task waiting for input does not carry its pending request',
    () =>
      out(
        is('task.handoff'),
        payload((p) => ({ ...p, input_request: undefined })),
      ),
  ],
];
