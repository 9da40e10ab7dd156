/**
 * The A2A SDK's server side and express, optional peer dependencies (reference/peers.ts), loaded
 * on first use by the A2A facade: a user who never serves a TAP agent to A2A clients never loads
 * them. Without them the first use throws a MissingPeerError that names the npm command.
 */
import type * as ErrorsModule from '@a2a-js/sdk/errors';
import type * as ExpressHandlers from '@a2a-js/sdk/server/express';
import type Express from 'express';
import { MissingPeerError, optionalImport } from '../peers.ts';

/** The A2A SDK's and express's packages, as package.json's peerDependencies name them. */
export const A2A_PEERS = ['@a2a-js/sdk@^1.3.0', 'express@^5.1.0'] as const;

/** What the facade takes from the A2A SDK and express. */
export interface A2aServerSdk {
  express: typeof Express;
  handlers: typeof ExpressHandlers;
  errors: typeof ErrorsModule;
}

let sdk: A2aServerSdk | undefined;

/** The A2A SDK's express handlers and errors, loaded on the first call; throws MissingPeerError when one is not installed. */
export async function loadA2aServerSdk(): Promise<A2aServerSdk> {
  if (sdk !== undefined) return sdk;
  const [express, handlers, errors] = await Promise.all([
    optionalImport(() => import('express')),
    optionalImport(() => import('@a2a-js/sdk/server/express')),
    optionalImport(() => import('@a2a-js/sdk/errors')),
  ]);
  if (express === undefined || handlers === undefined || errors === undefined)
    throw new MissingPeerError('Serving a TAP agent as an A2A server', [...A2A_PEERS]);
  sdk = { express: express.default, handlers, errors };
  return sdk;
}
