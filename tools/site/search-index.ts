/**
 * The client-side search index: one entry per chapter section, requirement, message type,
 * error code, schema and conformance case, written as JSON and as a script that sets
 * `window.TAP_SEARCH` (a script loads from file://, where fetching JSON is refused).
 */
import type { SearchDoc } from './context.ts';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' };

/** The visible text of an HTML fragment, whitespace collapsed. */
export function textOf(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(#39|amp|lt|gt|quot|nbsp);/g, (_, e: string) => ENTITIES[e]!)
    .replace(/\s+/g, ' ')
    .trim();
}

/** The index as JSON text: entries deduplicated by URL and title, in the order added. */
export function searchIndexJson(docs: SearchDoc[]): string {
  const seen = new Set<string>();
  const unique = docs.filter((d) => {
    const key = `${d.u}\u0000${d.t}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return JSON.stringify({ docs: unique });
}

/** The index as a script for `<script src>`. */
export function searchIndexScript(json: string): string {
  return `window.TAP_SEARCH = ${json.replace(/<\//g, '<\\/')};\n`;
}
