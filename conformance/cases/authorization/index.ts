/** The authorization profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as authorizationPermissionChecks from './authorization.permission-checks.ts';
import * as authorizationGrants from './authorization.grants.ts';
import * as authorizationTaskVisibility from './authorization.task-visibility.ts';
import * as authorizationPrincipals from './authorization.principals.ts';
import * as securityAuthority from './security.authority.ts';
import * as tasksListing from './tasks.listing.ts';

export const authorizationCases: readonly Case[] = [
  authorizationPermissionChecks,
  authorizationGrants,
  authorizationTaskVisibility,
  authorizationPrincipals,
  securityAuthority,
  tasksListing,
].flatMap((file) => file.cases);
