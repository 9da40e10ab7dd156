/** The security profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as securityClientCertificates from './security.client-certificates.ts';
import * as handshakeCredentials from './handshake.credentials.ts';
import * as securityBearerTokens from './security.bearer-tokens.ts';
import * as authorizationCredentialPermissions from './authorization.credential-permissions.ts';

export const securityCases: readonly Case[] = [
  securityClientCertificates,
  handshakeCredentials,
  securityBearerTokens,
  authorizationCredentialPermissions,
].flatMap((file) => file.cases);
