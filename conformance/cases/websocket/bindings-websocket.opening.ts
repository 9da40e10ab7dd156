/** websocket profile, Opening (spec: bindings-websocket#opening). */
import WebSocket from 'ws';
import { type Case, defineCase } from '../../case.ts';
import type { CaseContext } from '../../context.ts';
import { targetTls } from '../../target.ts';
import { WS } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';

/** Connects without TAP's subprotocol, with the run's TLS; resolves with the HTTP status or the chosen protocol. */
function rawConnect(ctx: CaseContext, protocols: string[]): Promise<{ status?: number; protocol?: string; error?: string }> {
  const url = (ctx.env.target as { url: string }).url;
  const tls: WebSocket.ClientOptions = { ...targetTls(ctx.env.target) };
  return new Promise((resolve) => {
    const ws = protocols.length ? new WebSocket(url, protocols, tls) : new WebSocket(url, tls);
    const timer = setTimeout(() => {
      ws.terminate();
      resolve({ error: 'timeout' });
    }, 5000);
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      resolve({ status: res.statusCode });
      ws.terminate();
    });
    ws.on('open', () => {
      clearTimeout(timer);
      resolve({ protocol: ws.protocol });
      ws.close();
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      resolve({ error: err.message });
    });
  });
}

export const cases: Case[] = [
  defineCase({
    id: 'websocket.subprotocol.selected',
    title: 'The agent selects the subprotocol tap.v1',
    profile: 'websocket',
    requirements: ['TAP-WS-002'],
    needs: WS,
    run: async (ctx) => {
      const r = await rawConnect(ctx, ['tap.v1', 'x-other']);
      return verdictOf(
        'tap.v1 selected',
        check(r.protocol === 'tap.v1', 'the agent did not select tap.v1', 'Sec-WebSocket-Protocol: tap.v1', show(r)),
      );
    },
  }),
  defineCase({
    id: 'websocket.subprotocol.required',
    title: 'An upgrade that does not offer tap.v1 is refused with HTTP 400',
    profile: 'websocket',
    requirements: ['TAP-WS-002'],
    needs: WS,
    run: async (ctx) => {
      const none = await rawConnect(ctx, []);
      const other = await rawConnect(ctx, ['chat']);
      return verdictOf(
        'refused with 400',
        check(none.status === 400, 'an upgrade without subprotocol was not refused with 400', 'HTTP 400', show(none)),
        check(other.status === 400, 'an upgrade offering only another subprotocol was not refused with 400', 'HTTP 400', show(other)),
      );
    },
  }),
];
