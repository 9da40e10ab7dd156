/**
 * core profile, Shares of a source (spec: limits#sources): the anonymous sessions of one origin
 * count as one principal against max_tasks_per_principal, so that a few of them cannot take every
 * task slot of the agent.
 */
import { type Case, defineCase } from '../../case.ts';
import type { Peer } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { describeMessage, request } from '../../steps.ts';
import { fail, skipped } from '../../verdict.ts';
import { check, checkError, need, verdictOf } from '../kit.ts';

/** More tasks than this are left out of a conformance run. */
const MOST_TASKS = 256;
/** More sessions than this are left out of a conformance run. */
const MOST_SESSIONS = 64;

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.anonymous-origin-tasks',
    title: 'The unfinished tasks of several anonymous sessions from one origin are refused BUSY past max_tasks_per_principal',
    profile: 'core',
    requirements: ['TAP-LIM-044'],
    // Several sessions from the harness's one origin; the tasks it holds would make other cases' requests BUSY.
    needs: { capabilities: ['tap.test.sleep'], binding: 'websocket' },
    exclusive: true,
    budgetMs: 60_000,
    run: async (ctx) => {
      const limits = (ctx.card?.limits ?? {}) as Record<string, unknown>;
      const perPrincipal = Number(limits.max_tasks_per_principal);
      const all = Number(limits.max_concurrent_tasks);
      if (!Number.isInteger(perPrincipal)) return skipped('the card declares no max_tasks_per_principal, the cap this rule shares out');
      if (!(perPrincipal < all)) {
        return skipped(
          `max_tasks_per_principal ${perPrincipal} is not below max_concurrent_tasks ${all}: the agent's own cap would refuse first`,
        );
      }
      if (perPrincipal >= MOST_TASKS)
        return skipped(`max_tasks_per_principal ${perPrincipal} asks for more tasks than a conformance run starts`);
      const sessions: { peer: Peer; room: number }[] = [];
      const accepted: { peer: Peer; taskId: string }[] = [];
      let refusal: Wire | undefined;
      try {
        while (accepted.length <= perPrincipal && !refusal) {
          let current = sessions.at(-1);
          if (!current || current.room === 0) {
            if (sessions.length >= MOST_SESSIONS)
              return skipped(`the sessions allow too few tasks each to pass ${perPrincipal} within ${MOST_SESSIONS} sessions`);
            const peer = need(await ctx.session());
            // Below the per-principal cap in every session, so that only the origin's count can refuse.
            const negotiated = Number(peer.state.params?.max_concurrent_tasks);
            const room = Math.min(Number.isInteger(negotiated) && negotiated > 0 ? negotiated : 1, Math.max(1, perPrincipal - 1));
            current = { peer, room };
            sessions.push(current);
          }
          const { sent, reply } = await request(current.peer, 'tap.test.sleep', { ms: 60_000 });
          const m = need(reply).msg;
          if (m.type === 'task.accepted') {
            accepted.push({ peer: current.peer, taskId: sent.task_id! });
            current.room--;
          } else if (m.type === 'error' && m.payload?.code === 'BUSY') refusal = m;
          else return fail(`a tap.test.sleep request got ${describeMessage(m)}`, 'task.accepted or BUSY', describeMessage(m));
        }
      } finally {
        for (const { peer, taskId } of accepted) await peer.post('task.cancel', {}, { task_id: taskId }).catch(() => undefined);
      }
      return verdictOf(
        `BUSY at the per-principal cap of ${perPrincipal}, across ${sessions.length} anonymous sessions`,
        check(
          accepted.length <= perPrincipal,
          `the agent accepted ${accepted.length} unfinished tasks from ${sessions.length} anonymous sessions of one origin, though its max_tasks_per_principal is ${perPrincipal}`,
          `BUSY by task ${perPrincipal + 1}`,
          `${accepted.length} tasks accepted`,
        ),
        refusal ? checkError(refusal, { code: 'BUSY' }, `task ${accepted.length + 1} of the origin's anonymous sessions`) : null,
      );
    },
  }),
];
