/** core profile, Details (spec: errors#details). */
import { type Case, defineCase } from '../../case.ts';
import type { Wire } from '../../session-state.ts';
import { check, checkError, need, require, runTask, show } from '../kit.ts';
import { pass } from '../../verdict.ts';
import { ECHO } from './kit.ts';

/** The members of `details` the table of errors#details gives each code; `*` holds those of any task error. */
const DETAILS: Readonly<Record<string, readonly string[]>> = {
  '*': ['indeterminate', 'checkpoint'],
  INVALID_MESSAGE: ['issues'],
  MALFORMED_MESSAGE: ['reason'],
  MESSAGE_TOO_LARGE: ['byte_length', 'max_message_bytes', 'reason'],
  UNSUPPORTED_VERSION: ['supported'],
  CAPABILITY_NOT_SUPPORTED: ['capability'],
  PERMISSION_DENIED: ['required_permission', 'resource'],
  AUTHORIZATION_EXPIRED: ['expires_at'],
  DEADLINE_EXCEEDED: ['deadline'],
  TASK_EXISTS: ['task_id'],
  IDEMPOTENCY_CONFLICT: ['task_id'],
  UNKNOWN_TASK: ['task_id'],
  TASK_TERMINAL: ['state'],
  PROTOCOL_VIOLATION: ['plan_id'],
  BUSY: ['scope', 'limit'],
  RATE_LIMITED: ['retry_after_ms'],
  RESUME_UNAVAILABLE: ['earliest_sequence'],
  INTERNAL_ERROR: ['durable'],
};

/**
 * Checks an error's details: each member is one the table gives its code, or an x- extension,
 * and each member in `meant` that is present has the value the table's meaning gives it.
 */
function detailsOf(m: Wire, meant: Record<string, unknown>, what: string) {
  const code = String(m.payload?.code);
  const details = (m.payload?.details ?? {}) as Record<string, unknown>;
  const listed = [...(DETAILS[code] ?? []), ...DETAILS['*']!];
  const stray = Object.keys(details).filter((k) => !listed.includes(k) && !k.startsWith('x-'));
  require(
    check(
      stray.length === 0,
      `${what}: ${code} carries details ${stray.join(', ')}, which errors#details does not give ${code} and which have no x- prefix`,
      `members of ${listed.join(', ')} or x- members`,
      show(details, 200),
    ),
  );
  for (const [member, value] of Object.entries(meant)) {
    if (!(member in details)) continue;
    require(
      check(
        details[member] === value,
        `${what}: details.${member} does not hold what errors#details gives it`,
        show(value),
        show(details[member]),
      ),
    );
  }
}

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.details-members',
    title: 'Error details carry only the members errors#details gives their code (or x- members), each with its meaning',
    profile: 'core',
    requirements: ['TAP-ERR-044', 'TAP-VER-041'],
    needs: ECHO,
    tasks: 1,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const absent = peer.ids.task('absent');
      const status = await peer.post('task.status', {}, { task_id: absent });
      const unknown = need(await peer.reply(status)).msg;
      require(checkError(unknown, { code: 'UNKNOWN_TASK' }, 'task.status of an unknown task'));
      detailsOf(unknown, { task_id: absent }, 'task.status of an unknown task');

      const offered = await peer.post('task.request', { capability: 'zz.not.offered', input: null }, { task_id: peer.ids.task() });
      const notSupported = need(await peer.reply(offered)).msg;
      require(checkError(notSupported, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'a request for a capability not offered'));
      detailsOf(notSupported, { capability: 'zz.not.offered' }, 'a request for a capability not offered');

      const done = need(await runTask(peer, 'tap.test.echo', 'first', { taskId: peer.ids.task('done') }));
      const again = await peer.post('task.request', { capability: 'tap.test.echo', input: 'other' }, { task_id: done.taskId });
      const exists = need(await peer.reply(again)).msg;
      require(checkError(exists, { code: 'TASK_EXISTS' }, 'another request under the task_id of a finished task'));
      detailsOf(exists, { task_id: done.taskId }, 'another request under an existing task_id');

      const cancel = await peer.post('task.cancel', {}, { task_id: done.taskId });
      const terminal = need(await peer.reply(cancel)).msg;
      require(checkError(terminal, { code: 'TASK_TERMINAL' }, 'task.cancel of a completed task'));
      detailsOf(terminal, { state: 'completed' }, 'task.cancel of a completed task');

      const deadline = new Date(Date.now() - 60_000).toISOString();
      const late = await peer.post('task.request', { capability: 'tap.test.echo', input: 1 }, { task_id: peer.ids.task(), deadline });
      const exceeded = need(await peer.reply(late)).msg;
      require(checkError(exceeded, { code: 'DEADLINE_EXCEEDED' }, 'a request after its deadline'));
      detailsOf(exceeded, {}, 'a request after its deadline');
      return pass('UNKNOWN_TASK, CAPABILITY_NOT_SUPPORTED, TASK_EXISTS, TASK_TERMINAL and DEADLINE_EXCEEDED carry only listed details');
    },
  }),
];
