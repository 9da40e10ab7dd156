/** core profile, TAP 1.1, Listing tasks (spec: tasks#listing). */
import { type Case, defineCase } from '../../case.ts';
import { describeMessage } from '../../steps.ts';
import {
  check,
  expectError,
  expectNothing,
  listPage,
  need,
  require,
  runTask,
  show,
  status,
  verdictOf,
  walkTasks,
  type Listed,
} from '../kit.ts';

/** How often each of `ids` is listed, as "id ×n" for each not listed exactly once. */
function notOnce(listed: readonly Listed[], ids: readonly string[]): string[] {
  return ids
    .map((id) => [id, listed.filter((t) => t.task_id === id).length] as const)
    .flatMap(([id, n]) => (n === 1 ? [] : [`${id} ×${n}`]));
}

/** The task ids listed more than once. */
function repeated(listed: readonly Listed[]): string[] {
  const seen = new Set<string>();
  return [...new Set(listed.map((t) => t.task_id).filter((id) => seen.has(id) || !seen.add(id)))];
}

export const cases: Case[] = [
  defineCase({
    id: 'core.list.pages',
    title: 'Following next_cursor lists each task of the principal once, at most limit tasks a page',
    profile: 'core',
    requirements: ['TAP-LIST-104', 'TAP-LIST-105'],
    needs: { capabilities: ['tap.test.counter'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(need(await runTask(peer, 'tap.test.counter', { key: peer.ids.task(`list-${i}`) })).taskId);
      // Other cases of a run may share this principal: the walk can list more counters than these five.
      const walk = await walkTasks(peer, { capability: 'tap.test.counter', state: 'completed' }, 2);
      return verdictOf(
        `${walk.tasks.length} tasks in ${walk.sizes.length} pages of at most 2, each of the 5 once`,
        check(
          notOnce(walk.tasks, ids).length === 0,
          `following next_cursor with limit 2 did not list each of the 5 completed tasks once: ${notOnce(walk.tasks, ids).join(', ')}`,
          'each task exactly once',
          show(walk.tasks.map((t) => t.task_id)),
        ),
        check(
          repeated(walk.tasks).length === 0,
          `the walk listed ${repeated(walk.tasks).join(', ')} more than once`,
          'no task twice',
          show(walk.tasks.map((t) => t.task_id)),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.list.filters',
    title: 'task.list lists only the tasks in its state and of its capability, each as a snapshot shows it',
    profile: 'core',
    requirements: ['TAP-LIST-102', 'TAP-LIST-103'],
    needs: { capabilities: ['tap.test.echo', 'tap.test.fail'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const done = need(await runTask(peer, 'tap.test.echo', 'listed')).taskId;
      const failed = need(await runTask(peer, 'tap.test.fail', { code: 'CAPABILITY_FAILED' })).taskId;
      const byState = (await walkTasks(peer, { state: 'failed' }, 100)).tasks;
      const byCapability = (await walkTasks(peer, { capability: 'tap.test.echo' }, 100)).tasks;
      const byBoth = (await walkTasks(peer, { capability: 'tap.test.echo', state: 'failed' }, 100)).tasks;
      const snap = need(await status(peer, failed)).msg;
      const shown = byState.find((t) => t.task_id === failed);
      const stray = (list: Listed[], ok: (t: Listed) => boolean) => list.find((t) => !ok(t));
      const wrongState = stray(byState, (t) => t.state === 'failed');
      const wrongCapability = stray(byCapability, (t) => t.capability === 'tap.test.echo');
      const wrongBoth = stray(byBoth, (t) => t.capability === 'tap.test.echo' && t.state === 'failed');
      const fields = ['state', 'capability', 'created_at', 'updated_at', 'last_sequence'] as const;
      const differs = fields.filter((f) => shown?.[f] !== snap.payload?.[f]);
      return verdictOf(
        'each filter lists only what matches, and the failed task as its snapshot shows it',
        check(!wrongState, `the filter state "failed" listed ${show(wrongState)}`, 'only failed tasks', show(wrongState)),
        check(
          !wrongCapability,
          `the filter capability "tap.test.echo" listed ${show(wrongCapability)}`,
          'only tasks of tap.test.echo',
          show(wrongCapability),
        ),
        check(!wrongBoth, `both filters listed ${show(wrongBoth)}`, 'only failed tasks of tap.test.echo', show(wrongBoth)),
        check(!!shown, `the filter state "failed" did not list the failed task ${failed}`, failed, show(byState.map((t) => t.task_id))),
        check(
          byCapability.some((t) => t.task_id === done),
          `the filter capability "tap.test.echo" did not list the task ${done}`,
          done,
          show(byCapability.map((t) => t.task_id)),
        ),
        check(
          snap.type === 'task.snapshot' && differs.length === 0,
          `the page shows task ${failed} otherwise than its snapshot (${differs.join(', ')})`,
          show(Object.fromEntries(fields.map((f) => [f, snap.payload?.[f]]))),
          show(shown),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.list.bad-cursor',
    title: 'A cursor the agent did not give, or gave for another filter, is refused with INVALID_CURSOR; a bad filter with INVALID_MESSAGE',
    profile: 'core',
    requirements: ['TAP-LIST-106', 'TAP-MSG-006'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.echo', 1));
      need(await runTask(peer, 'tap.test.echo', 2));
      const filter = { capability: 'tap.test.echo' };
      const first = (await listPage(peer, { ...filter, limit: 1 })).reply.msg;
      const cursor = first.payload?.next_cursor;
      require(
        check(
          first.type === 'task.page' && typeof cursor === 'string',
          `a task.list of limit 1 over two tasks was answered ${describeMessage(first)}`,
          'a task.page with next_cursor',
          show(first.payload),
        ),
      );
      const mark = peer.mark();
      for (const [payload, why] of [
        [{ ...filter, cursor: 'tap-conform.forged-cursor' }, 'a cursor the agent never gave'],
        [{ ...filter, cursor: `${cursor}A` }, 'a cursor the agent gave, with a character added'],
        [{ ...filter, state: 'failed', cursor }, 'a cursor given for another filter'],
      ] as const) {
        require(await expectError(peer, await peer.post('task.list', payload), { code: 'INVALID_CURSOR' }, `task.list with ${why}`));
      }
      require(await expectNothing(peer, mark, (r) => r.msg.type === 'task.page', 'a refused cursor gets no page'));
      for (const [payload, why] of [
        [{ state: 'finished' }, 'a state that is no task state'],
        [{ limit: 101 }, 'a limit above 100'],
      ] as const) {
        const sent = await peer.post('task.list', payload, {}, { deliberate: why });
        require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, `task.list with ${why}`));
      }
      const again = (await listPage(peer, { ...filter, limit: 1, cursor })).reply.msg;
      return verdictOf(
        'INVALID_CURSOR for each bad cursor, INVALID_MESSAGE for each bad filter, and the good cursor still opens',
        check(
          again.type === 'task.page',
          `the cursor the agent gave was refused: ${describeMessage(again)}`,
          'task.page',
          describeMessage(again),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.list.not-in-1-0',
    title: 'In a session of 1.0 the agent answers task.list with UNKNOWN_MESSAGE_TYPE and sends no task.page',
    profile: 'core',
    requirements: ['TAP-LIST-108'],
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const chosen = s.hs.ack.msg.payload.version;
      require(check(chosen === '1.0', `offered only 1.0, the agent chose ${show(chosen)}`, 'version 1.0', show(chosen)));
      const mark = s.peer.mark();
      const sent = await s.peer.post('task.list', {});
      return verdictOf(
        'UNKNOWN_MESSAGE_TYPE, no page',
        await expectError(s.peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'task.list in a session of 1.0'),
        await expectNothing(s.peer, mark, (r) => r.msg.type === 'task.page', 'task.list is not a message of 1.0'),
      );
    },
  }),
];
