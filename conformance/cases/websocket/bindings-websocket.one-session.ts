/** websocket profile, One session per connection (spec: bindings-websocket#one-session). */
import type { Case } from '../../case.ts';
import { oneSessionCase } from '../connection.ts';
import { WS } from './kit.ts';

export const cases: Case[] = [
  oneSessionCase(
    { profile: 'websocket', needs: WS },
    {
      id: 'websocket.one-session',
      title: 'A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION',
      requirements: ['TAP-WS-009'],
    },
  ),
];
