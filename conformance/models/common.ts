/** What the property models share: the failure they throw and a reply that must come. */
import type { Peer, Received } from '../peer.ts';
import type { Wire } from '../session-state.ts';

/** A property's own failure: thrown inside fast-check runs, turned into an Outcome at the end. */
export class Broken extends Error {
  override name = 'Broken';
}

/** Throws Broken with `message` unless `ok`. */
export function expect(ok: boolean, message: string): void {
  if (!ok) throw new Broken(message);
}

/** The direct reply to `sent`, or Broken with the diagnosis of its absence. */
export async function reply(peer: Peer, sent: Wire): Promise<Received> {
  const r = await peer.reply(sent);
  if (!r.ok) throw new Broken(r.outcome.detail);
  return r.value;
}
