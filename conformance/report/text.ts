/** Plain-text pieces shared by the writers. */
import type { WireEntry } from '../transcript.ts';

/** Control characters other than tab and line feed (C0, DEL and C1), which a report never shows raw. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it finds
export const CONTROL_CHARS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** A control character as the text \xNN. */
export function hexEscape(ch: string): string {
  return `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

const MARKUP: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as character data or an attribute value of HTML or XML: & < > " and ' become references. */
export function escapeMarkup(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => MARKUP[ch]!);
}

const ARROW = { out: '→', in: '←', note: '•', stderr: '!' } as const;

/** A transcript as plain lines: time, connection, direction, frame, and any flags. */
export function plainTranscript(entries: readonly WireEntry[]): string {
  return entries
    .map((e) => `${String(e.t).padStart(6)} ms #${e.conn} ${ARROW[e.dir]} ${e.text}${e.flags?.length ? `   [${e.flags.join('; ')}]` : ''}`)
    .join('\n');
}
