/** core profile, TAP 1.1, Delegation paths and call loops (spec: mesh#delegation). */
import { type Case, defineCase } from '../../case.ts';
import type { Peer } from '../../peer.ts';
import { collectUntilResult, describeMessage } from '../../steps.ts';
import { ECHO } from './kit.ts';
import { check, checkError, expectError, need, require, show, verdictOf } from '../kit.ts';

/** The limit an agent whose card states none applies (spec: mesh#delegation). */
const DEFAULT_DEPTH = 8;

/** A path of `n` distinct agent ids that are not the agent's. */
const pathOf = (n: number): string[] => Array.from({ length: n }, (_, i) => `tap.conform.hop-${i + 1}`);

/** Sends a tap.test.echo task.request delegated along `path`; returns it with the agent's direct reply. */
async function delegated(peer: Peer, path: string[], label: string) {
  const sent = await peer.post(
    'task.request',
    { capability: 'tap.test.echo', input: label, delegation: path },
    { task_id: peer.ids.task(label) },
  );
  return { sent, reply: need(await peer.reply(sent)).msg };
}

/** A FAIL unless a request delegated along `path` is accepted and completes. */
async function expectRuns(peer: Peer, path: string[], label: string, what: string) {
  const { sent, reply } = await delegated(peer, path, label);
  if (reply.type !== 'task.accepted') return check(false, `${what} got ${describeMessage(reply)}`, 'task.accepted', describeMessage(reply));
  const { result } = need(await collectUntilResult(peer, sent.task_id!));
  return check(
    result.msg.payload?.status === 'completed',
    `${what} ended ${describeMessage(result.msg)}`,
    'completed',
    show(result.msg.payload),
  );
}

export const cases: Case[] = [
  defineCase({
    id: 'core.mesh.delegation-loop',
    title:
      'A task.request whose delegation lists the agent itself is refused DELEGATION_LOOP with the path in details, and no task is made',
    profile: 'core',
    requirements: ['TAP-MESH-153', 'TAP-MESH-155'],
    needs: ECHO,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const self = String(hs.ack.msg.payload.agent?.agent_id ?? hs.ack.msg.source);
      // A path without the agent is accepted: the refusal is of the loop, not of the member.
      require(await expectRuns(peer, pathOf(2), 'through', `a task delegated along ${pathOf(2).join(' → ')}, without the agent,`));
      const path = ['tap.conform.planner', self, 'tap.conform.router'];
      const { sent, reply } = await delegated(peer, path, 'loop');
      require(
        checkError(reply, { code: 'DELEGATION_LOOP', replyTo: sent.message_id }, `a task.request delegated along ${path.join(' → ')}`),
      );
      const details = reply.payload?.details as { delegation?: unknown } | undefined;
      const status = await peer.post('task.status', {}, { task_id: sent.task_id! });
      return verdictOf(
        'refused DELEGATION_LOOP with the path, and no task',
        check(
          JSON.stringify(details?.delegation) === JSON.stringify(path),
          "the DELEGATION_LOOP refusal does not carry the request's path in details.delegation",
          show(path),
          show(details?.delegation),
        ),
        await expectError(peer, status, { code: 'UNKNOWN_TASK' }, 'task.status of the refused task'),
      );
    },
  }),
  defineCase({
    id: 'core.mesh.delegation-depth',
    title:
      "A task.request whose delegation is longer than the card's max_delegation_depth (8 by default) is refused DELEGATION_LOOP with the limit",
    profile: 'core',
    requirements: ['TAP-MESH-154'],
    needs: ECHO,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const stated = (hs.ack.msg.payload.agent?.limits as { max_delegation_depth?: unknown } | undefined)?.max_delegation_depth;
      const limit = typeof stated === 'number' ? stated : DEFAULT_DEPTH;
      require(await expectRuns(peer, pathOf(limit), 'at-limit', `a task with a delegation path of ${limit} agents, the limit,`));
      const path = pathOf(limit + 1);
      const { sent, reply } = await delegated(peer, path, 'too-deep');
      require(
        checkError(reply, { code: 'DELEGATION_LOOP', replyTo: sent.message_id }, `a task.request with a path of ${limit + 1} agents`),
      );
      const details = reply.payload?.details as { limit?: unknown } | undefined;
      const status = await peer.post('task.status', {}, { task_id: sent.task_id! });
      return verdictOf(
        `a path of ${limit + 1} agents refused, one of ${limit} accepted`,
        check(details?.limit === limit, 'the refusal does not name the limit in details.limit', String(limit), show(details?.limit)),
        await expectError(peer, status, { code: 'UNKNOWN_TASK' }, 'task.status of the refused task'),
      );
    },
  }),
  defineCase({
    id: 'core.mesh.delegation-1-0',
    title: 'In a session of 1.0 the agent ignores delegation: a request whose path lists the agent is accepted',
    profile: 'core',
    requirements: ['TAP-MESH-156'],
    needs: ECHO,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const self = String(hs.ack.msg.payload.agent?.agent_id ?? hs.ack.msg.source);
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: '1.0', delegation: [self] },
        { task_id: peer.ids.task('delegated-1-0') },
        { deliberate: 'delegation, a member of 1.1, in a session of 1.0' },
      );
      const reply = need(await peer.reply(sent)).msg;
      return verdictOf(
        'accepted in a session of 1.0',
        check(
          reply.type === 'task.accepted',
          `in a session of 1.0 the request got ${describeMessage(reply)}`,
          'task.accepted',
          describeMessage(reply),
        ),
      );
    },
  }),
];
