/** Plain-text pieces shared by the writers. */
import type { WireEntry } from '../transcript.ts';

const ARROW = { out: '→', in: '←', note: '•', stderr: '!' } as const;

/** A transcript as plain lines: time, connection, direction, frame, and any flags. */
export function plainTranscript(entries: readonly WireEntry[]): string {
  return entries
    .map((e) => `${String(e.t).padStart(6)} ms #${e.conn} ${ARROW[e.dir]} ${e.text}${e.flags?.length ? `   [${e.flags.join('; ')}]` : ''}`)
    .join('\n');
}
