/** tasks profile, Input forms (spec: conformance#input-forms). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkError, need, require, show } from '../kit.ts';
import { collectUntilResult, describeMessage, request } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.input-forms',
    title: 'A conformance capability accepts every input of its documented form, bounds included, and refuses values out of range',
    profile: 'tasks',
    requirements: ['TAP-CONF-040', 'TAP-CONF-010'],
    needs: cap('echo', 'sleep', 'stream', 'fail', 'counter'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const accepted: [string, unknown][] = [
        ['tap.test.echo', null],
        ['tap.test.stream', { count: 0 }],
        ['tap.test.stream', { count: 1, interval_ms: 0, chunk: null, 'x-conform-extra': true }],
        ['tap.test.sleep', { ms: 0 }],
        ['tap.test.fail', { code: 'A_CODE_FROM_LATER_MINOR' }],
        ['tap.test.fail', { code: 'INTERNAL_ERROR', retryable: false, message: 'm'.repeat(8192) }],
        ['tap.test.counter', { key: '' }],
        ['tap.test.counter', { key: 'k'.repeat(256) }],
      ];
      for (const [name, input] of accepted) {
        const { reply } = await request(peer, name, input);
        const m = need(reply).msg;
        require(
          check(m.type === 'task.accepted', `${name} refused the valid input ${show(input, 80)}`, 'task.accepted', describeMessage(m)),
        );
        need(await collectUntilResult(peer, m.task_id!));
      }
      // Inputs at the upper bounds run for an hour or more: each must be accepted, and is then cancelled.
      const long: [string, unknown][] = [
        ['tap.test.sleep', { ms: 3_600_000 }],
        ['tap.test.sleep', { ms: Number.MAX_SAFE_INTEGER }],
        ['tap.test.stream', { count: 100_000, interval_ms: 3_600_000 }],
      ];
      for (const [name, input] of long) {
        const taskId = peer.ids.task();
        const { reply } = await request(peer, name, input, { taskId });
        const m = need(reply).msg;
        if (m.type === 'task.accepted') {
          await peer.post('task.cancel', {}, { task_id: taskId });
          need(await collectUntilResult(peer, taskId));
        }
        require(
          check(m.type === 'task.accepted', `${name} refused the valid input ${show(input, 80)}`, 'task.accepted', describeMessage(m)),
        );
      }
      const refused: [string, unknown][] = [
        ['tap.test.stream', { count: 100001 }],
        ['tap.test.stream', { count: 1.5 }],
        ['tap.test.stream', { count: 1, interval_ms: -1 }],
        ['tap.test.stream', 3],
        ['tap.test.sleep', { ms: -1 }],
        ['tap.test.fail', { code: 'lowercase' }],
        ['tap.test.fail', { code: 'A'.repeat(65) }],
        ['tap.test.fail', { code: 'INTERNAL_ERROR', retryable: 'yes' }],
        ['tap.test.counter', { key: 'k'.repeat(257) }],
      ];
      for (const [name, input] of refused) {
        const taskId = peer.ids.task();
        const { reply } = await request(peer, name, input, { taskId });
        const m = need(reply).msg;
        // An accepted out-of-range task may run long; it is cancelled, and the case fails on it.
        if (m.type === 'task.accepted') await peer.post('task.cancel', {}, { task_id: taskId });
        require(checkError(m, { code: 'INVALID_MESSAGE', taskId }, `${name} with input ${show(input, 80)}`));
      }
      return pass(`${accepted.length + long.length} inputs at the bounds accepted, ${refused.length} outside them refused`);
    },
  }),
  defineCase({
    id: 'tasks.input-forms.integer-text',
    title: 'An integer of an input form written with a fraction or an exponent (ms 5.0, 5e0; count 1.0) is refused INVALID_MESSAGE',
    profile: 'tasks',
    requirements: ['TAP-CONF-040', 'TAP-CONF-010'],
    needs: cap('sleep', 'stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // JSON.stringify writes 5.0 as 5, so each request is sent as text with its number rewritten.
      const written: [string, string, number, string][] = [
        ['tap.test.sleep', 'ms', 5, '5.0'],
        ['tap.test.sleep', 'ms', 5, '5e0'],
        ['tap.test.stream', 'count', 1, '1.0'],
      ];
      for (const [name, member, value, text] of written) {
        const taskId = peer.ids.task();
        const msg = peer.envelope('task.request', { capability: name, input: { [member]: value } }, { task_id: taskId });
        const plain = JSON.stringify(msg);
        const frame = plain.replace(`"${member}":${value}}`, `"${member}":${text}}`);
        require(check(frame !== plain, `the harness could not write ${member} as ${text}`, text, plain));
        await peer.sendText(frame, `${name} with ${member} written ${text}, an integer with a fraction or exponent`);
        const m = need(await peer.reply(msg.message_id)).msg;
        if (m.type === 'task.accepted') await peer.post('task.cancel', {}, { task_id: taskId });
        require(checkError(m, { code: 'INVALID_MESSAGE', taskId }, `${name} with input {"${member}": ${text}}`));
      }
      return pass(`${written.length} integers written with a fraction or exponent refused`);
    },
  }),
];
