/** Mutants that break the rules of spec/1.0/resume.md (spec: resume). */
import { type Msg, STREAM } from '../layer.ts';
import { envelope, errorOf, inn, join, out, payload, refuse } from '../operators.ts';
import { completedInstead, fakeSnapshot, forgetDuplicates, type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
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
    'TAP-RES-004:snapshot-instead-of-unavailable',
    'a resume behind the retained window is answered with a snapshot instead of RESUME_UNAVAILABLE',
    () => out(errorOf('RESUME_UNAVAILABLE'), (m, v) => fakeSnapshot(v, v.answers(m) ?? m, 'completed')),
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
    completedInstead('SESSION_LOST'),
    undefined,
    { binding: 'stdio' },
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
    'TAP-RES-101:resumes-in-another-version',
    'a resume offered in 1.0 of a session opened in 1.1 is granted, in 1.1',
    // The agent is shown an offer of 1.1 and resumes in it; the requester is told 1.0.
    () =>
      join(
        out(
          (m) => m.type === 'handshake.ack' && m.payload?.resumed === true && m.payload?.version === '1.1',
          (m) => ({ ...m, protocol: 'tap/1.0', payload: { ...m.payload, version: '1.0' } }),
        ),
        inn(
          (m) =>
            m.type === 'handshake.init' &&
            m.payload?.resume !== undefined &&
            Array.isArray(m.payload?.versions) &&
            !(m.payload.versions as unknown[]).includes('1.1'),
          (m) => ({ ...m, payload: { ...m.payload, versions: ['1.1', '1.0'] } }),
        ),
      ),
  ],
];
