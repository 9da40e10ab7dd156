/** nats profile, Closing (spec: bindings-nats#closing). */
import type { Case } from '../../case.ts';
import { closeCodeCases } from '../connection.ts';
import { NATS } from './kit.ts';

export const cases: Case[] = closeCodeCases(
  { profile: 'nats', needs: NATS },
  {
    farewell: {
      id: 'nats.close.farewell-1000',
      title: 'After the farewell the agent closes the connection with code 1000',
      requirements: ['TAP-NATS-014'],
    },
    fatal: {
      id: 'nats.close.fatal-1008',
      title: 'After a fatal error the agent closes the connection with code 1008',
      requirements: ['TAP-NATS-014'],
    },
  },
);
