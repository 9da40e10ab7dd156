/**
 * The grant of a task and the authorization checks of a capability (spec: authorization#permission-checks,
 * authorization#credential-permissions).
 */
import type { Capability } from '../../schemas/src/index.ts';
import { errorPayload, type ErrorPayload } from '../core/index.ts';
import { iso } from './outbound.ts';
import type { Session } from './sessions.ts';
import type { Authorization } from './tasks.ts';

/**
 * The grant a task of `session` holds: the request's, bounded by the session's credentials when
 * they carry permissions (only those both hold) or an expiry (it ends no later) (spec:
 * authorization#credential-permissions).
 */
export function grantOf(session: Pick<Session, 'authority'>, auth: Authorization | undefined): Authorization | undefined {
  const bound = session.authority;
  if (!auth || !bound) return auth;
  const held = bound.permissions;
  const permissions = held ? auth.permissions.filter((p) => held.includes(p)) : auth.permissions;
  const ends = bound.expiresAt !== undefined && bound.expiresAt < Date.parse(auth.expires_at) ? iso(bound.expiresAt) : auth.expires_at;
  return { ...auth, permissions, expires_at: ends };
}

/**
 * The authorization checks of a capability: expired credentials or an expired grant first
 * (AUTHORIZATION_EXPIRED), then a missing grant or permission (PERMISSION_DENIED) (spec:
 * authorization#permission-checks, authorization#credential-permissions).
 */
export function authorizationProblem(
  capability: Capability | undefined,
  requested: Authorization | undefined,
  now: number,
  session: Pick<Session, 'authority'> = {},
): ErrorPayload | null {
  const expiry = session.authority?.expiresAt;
  if (expiry !== undefined && !(expiry > now)) {
    const when = iso(expiry);
    return errorPayload('AUTHORIZATION_EXPIRED', `the credentials of this session expired at ${when}; open a new session with fresh ones`, {
      expires_at: when,
    });
  }
  const auth = grantOf(session, requested);
  if (auth && !(Date.parse(auth.expires_at) > now)) {
    return errorPayload('AUTHORIZATION_EXPIRED', `the grant expired at ${auth.expires_at}`, { expires_at: auth.expires_at });
  }
  const needed = capability?.requires_permission;
  if (needed !== undefined && !auth?.permissions.includes(needed)) {
    const why = !auth
      ? `the task carries no authorization; ${capability!.name} requires ${needed}`
      : requested?.permissions.includes(needed)
        ? `the credentials of this session do not hold ${needed}, which the grant lists`
        : `the grant lacks ${needed}`;
    return errorPayload('PERMISSION_DENIED', why, { required_permission: needed });
  }
  return null;
}
