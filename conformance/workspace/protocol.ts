/**
 * The message-protocol cases over mailboxes (spec: bindings-workspace#mailboxes): every case of
 * the suite runs unchanged against the one agent process, each connection a pair of mailboxes.
 * A mailbox has no connection of its own to close, drop or reconnect, so the cases that judge
 * exactly that are SKIPPED here with the reason, and so are the stdio and WebSocket profiles.
 */
import { PROFILES, type Case, type Profile } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { selectCases } from '../select.ts';
import type { LevelTarget } from '../options.ts';
import { skipped } from '../verdict.ts';

/**
 * Not over mailboxes: the other bindings' own profiles, the registry profile, which needs a mesh
 * (--registry), and the security profile, whose certificates and tokens are those of a network
 * connection (a workspace's principals are its mailboxes' owners, spec: bindings-workspace).
 */
const NOT_OVER_MAILBOXES: readonly Profile[] = ['stdio', 'websocket', 'nats', 'nats-durable', 'registry', 'security'];
/** The profiles of the message protocol that apply over mailboxes. */
export const MAILBOX_PROFILES: readonly Profile[] = PROFILES.filter((p) => !NOT_OVER_MAILBOXES.includes(p));

/** Why a case cannot judge an agent over mailboxes, by case id (a glob `*` matches any run of characters). */
export const MAILBOX_SKIPS: Readonly<Record<string, string>> = {
  'core.handshake.timeout-*':
    'the agent ends a stalled handshake by closing the connection without a message, and a mailbox has no close to observe',
  'resume.reconnect.closes-old':
    'the agent closes the earlier connection of a resumed session without a message, and a mailbox has no close to observe',
  'core.limits.peer-gone': 'the agent ends the transport of a silent peer without a message, and a mailbox has no close to observe',
  'resume.orphan.session-lost': 'the case orphans a session by closing its connection, and a mailbox has no close for the agent to notice',
  'core.limits.anonymous-origin-tasks':
    'the case counts the anonymous sessions of one network origin, and a mailbox has no network origin (its owner is its principal)',
};

/** Why case `id` is skipped over mailboxes, or undefined when it runs. */
export function skipReason(id: string): string | undefined {
  for (const [glob, why] of Object.entries(MAILBOX_SKIPS)) {
    const re = new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    if (re.test(id)) return why;
  }
  return undefined;
}

/** A case as it runs over mailboxes: unchanged, or SKIPPED with the reason. */
export function overMailboxes(c: Case): Case {
  const why = skipReason(c.id);
  if (!why) return c;
  return { ...c, needs: undefined, run: async () => skipped(`over mailboxes: ${why}`) };
}

/** The message-protocol cases of a run over mailboxes. */
export function mailboxCases(sel: {
  profiles: readonly Profile[];
  level: LevelTarget;
  only: readonly string[];
  skip?: readonly string[];
}): Case[] {
  const profiles = sel.profiles.length > 0 ? sel.profiles.filter((p) => MAILBOX_PROFILES.includes(p)) : MAILBOX_PROFILES;
  if (profiles.length === 0) return [];
  return selectCases(ALL_CASES, { profiles, level: sel.level, only: sel.only, skip: sel.skip }, MAILBOX_PROFILES).map(overMailboxes);
}
