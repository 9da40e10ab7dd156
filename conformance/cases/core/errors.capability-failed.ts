/** core profile, TAP 1.1, The capability's own failure (spec: errors#capability-failed). */
import { type Case, defineCase } from '../../case.ts';
import { describeMessage } from '../../steps.ts';
import { check, need, require, runTask, show, status, verdictOf } from '../kit.ts';

const FAIL = { capabilities: ['tap.test.fail'] };

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.capability-failed',
    title: 'A capability that reports its own failure ends failed with CAPABILITY_FAILED, not retryable unless it says so',
    profile: 'core',
    requirements: ['TAP-ERR-101', 'TAP-ERR-102'],
    needs: FAIL,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.fail', { code: 'CAPABILITY_FAILED', message: 'the repository does not exist' }));
      const r = t.result.msg.payload ?? {};
      const error = r.error as { code?: unknown; retryable?: unknown } | undefined;
      require(
        check(
          r.status === 'failed' && error?.code === 'CAPABILITY_FAILED',
          `the capability's own failure ended ${describeMessage(t.result.msg)}`,
          'failed, CAPABILITY_FAILED',
          show(r),
        ),
      );
      const snap = need(await status(peer, t.taskId)).msg;
      const transient = need(await runTask(peer, 'tap.test.fail', { code: 'CAPABILITY_FAILED', retryable: true }));
      const said = (transient.result.msg.payload?.error as { retryable?: unknown } | undefined)?.retryable;
      return verdictOf(
        'CAPABILITY_FAILED, retryable false, and true only when the capability says so',
        check(error?.retryable === false, 'CAPABILITY_FAILED came retryable', 'retryable: false', show(error?.retryable)),
        check(
          (snap.payload?.result as { error?: { code?: unknown } } | undefined)?.error?.code === 'CAPABILITY_FAILED',
          `the snapshot of the failed task carries ${describeMessage(snap)}`,
          'a result with CAPABILITY_FAILED',
          show(snap.payload?.result),
        ),
        check(said === true, 'a failure the capability called transient came not retryable', 'retryable: true', show(said)),
      );
    },
  }),
  defineCase({
    id: 'core.errors.capability-failed-in-1-0',
    title: "In a session of 1.0 a capability's own failure ends with INTERNAL_ERROR, not retryable",
    profile: 'core',
    requirements: ['TAP-ERR-103'],
    needs: FAIL,
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const chosen = s.hs.ack.msg.payload.version;
      require(check(chosen === '1.0', `offered only 1.0, the agent chose ${show(chosen)}`, 'version 1.0', show(chosen)));
      const t = need(await runTask(s.peer, 'tap.test.fail', { code: 'CAPABILITY_FAILED' }));
      const r = t.result.msg.payload ?? {};
      const error = r.error as { code?: unknown; retryable?: unknown } | undefined;
      return verdictOf(
        'INTERNAL_ERROR, retryable false',
        check(
          r.status === 'failed' && error?.code === 'INTERNAL_ERROR' && error.retryable === false,
          `in a session of 1.0 the capability's own failure ended ${show(r)}`,
          'failed, INTERNAL_ERROR, retryable: false',
          show(r),
        ),
      );
    },
  }),
];
