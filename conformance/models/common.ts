/** What the property models share: the failure they throw and a reply that must come. */
import type { Peer, Received } from '../peer.ts';
import type { Wire } from '../session-state.ts';

/** A property's own failure: thrown inside fast-check runs, turned into an Outcome at the end. */
export class Broken extends Error {
  override name = 'Broken';
  /** The one requirement the run broke, when the check knows it. */
  readonly requirement?: string;
  /** The messages the harness sent in the failing run, one line each (set by the property's run). */
  steps?: string[];
  constructor(message: string, requirement?: string) {
    super(message);
    if (requirement !== undefined) this.requirement = requirement;
  }
}

/** Throws Broken with `message` (and the requirement it breaks) unless `ok`. */
export function expect(ok: boolean, message: string, requirement?: string): void {
  if (!ok) throw new Broken(message, requirement);
}

/** The direct reply to `sent`, or Broken with the diagnosis of its absence. */
export async function reply(peer: Peer, sent: Wire): Promise<Received> {
  const r = await peer.reply(sent);
  if (!r.ok) throw new Broken(r.outcome.detail);
  return r.value;
}
