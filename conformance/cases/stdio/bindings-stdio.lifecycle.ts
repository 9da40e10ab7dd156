/** stdio profile, Process lifecycle (spec: bindings-stdio#lifecycle). */
import { timingWindow } from '../../verdict.ts';
import { checkError, need, require } from '../kit.ts';
import { type Case, defineCase } from '../../case.ts';
import { endInput, exitedZero, STDIO } from './kit.ts';
import { initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.eof.before-handshake',
    title: 'An agent whose input ends before any handshake exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-006'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      endInput(ctx, peer);
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return exitedZero(exit, 'the agent did not exit 0 at the end of its input');
    },
  }),
  defineCase({
    id: 'stdio.shutdown-request.exit',
    title: 'After an approved shutdown.request a stdio agent exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-006'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 500 });
      const r = need(await peer.reply(sent));
      if (r.msg.type === 'shutdown.response' && r.msg.payload.approve !== true)
        return { verdict: 'UNIMPLEMENTED', detail: 'the agent declined the shutdown, which it may do' };
      const exit = await peer.waitExit(timingWindow(500, ctx.env.timeScale).latestMs);
      return exitedZero(exit, 'the agent did not exit 0 after its session ended');
    },
  }),
  defineCase({
    id: 'stdio.exit.after-fatal',
    title: 'A stdio agent whose handshake ended with a fatal error exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-040'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const init = await peer.post('handshake.init', { ...initPayload(peer, {}), versions: ['999.0'] });
      const r = need(await peer.reply(init));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'an init offering only version 999.0'));
      const exit = await peer.waitExit(timingWindow(0, ctx.env.timeScale).latestMs + 5000);
      return exitedZero(exit, 'the agent did not exit with status 0 after its fatal UNSUPPORTED_VERSION');
    },
  }),
  defineCase({
    id: 'stdio.exit.handshake-timeout',
    title: 'A stdio agent whose handshake timed out exits with status 0',
    profile: 'stdio',
    requirements: ['TAP-STDIO-040'],
    needs: STDIO,
    budgetMs: 45_000,
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs + 5000);
      return exitedZero(exit, 'the agent did not exit with status 0 after the handshake step timed out');
    },
  }),
];
