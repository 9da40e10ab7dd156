/** HTML functions shared by the site pages: escaping, relative URLs and JSON highlighting. */
import { posix } from 'node:path';

/** Escapes text for HTML element content and attribute values. */
export function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The relative URL from the page at `from` to `to`; both are paths from the site root, `to` may carry a #fragment. */
export function rel(from: string, to: string): string {
  const hash = to.indexOf('#');
  const path = hash === -1 ? to : to.slice(0, hash);
  const fragment = hash === -1 ? '' : to.slice(hash);
  if (path === '') return fragment;
  if (path === from && fragment !== '') return fragment;
  const relative = posix.relative(posix.dirname(from), path);
  return (relative === '' ? posix.basename(path) : relative) + fragment;
}

/** The prefix that leads from the page at `from` back to the site root ('' or '../'). */
export function rootOf(from: string): string {
  const depth = from.split('/').length - 1;
  return '../'.repeat(depth);
}

/** JSON text with spans for keys, strings, numbers and literals (classes j-k, j-s, j-n, j-l). */
export function highlightJson(text: string): string {
  const token = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b|([^"\d\-tfn]+|.)/g;
  let out = '';
  for (const m of text.matchAll(token)) {
    if (m[1] !== undefined)
      out += m[2] !== undefined ? `<span class="j-k">${esc(m[1])}</span>${esc(m[2])}` : `<span class="j-s">${esc(m[1])}</span>`;
    else if (m[3] !== undefined) out += `<span class="j-n">${m[3]}</span>`;
    else if (m[4] !== undefined) out += `<span class="j-l">${m[4]}</span>`;
    else out += esc(m[0]);
  }
  return out;
}

/** A <pre><code> block; JSON is highlighted. */
export function codeBlock(text: string, lang = ''): string {
  const body = lang === 'json' ? highlightJson(text) : esc(text);
  return `<pre class="code${lang ? ` lang-${esc(lang)}` : ''}"><code>${body}</code></pre>`;
}

/** A stable, kebab-case id for arbitrary text (used for generated anchors). */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** The mark of an entry of a data table that a later version added ("since": "1.1"), or ''. */
export function sinceTag(since: string | undefined): string {
  return since
    ? ` <span class="tag since" title="Added by TAP ${esc(since)}: used only in a session of ${esc(since)} or later">since ${esc(since)}</span>`
    : '';
}

/** A sentence on the entries of a table that later versions added, or ''. */
export function sinceNote(entries: ReadonlyArray<{ since?: string }>, what: string): string {
  const by = new Map<string, number>();
  for (const e of entries) if (e.since) by.set(e.since, (by.get(e.since) ?? 0) + 1);
  if (!by.size) return '';
  const parts = [...by].map(
    ([v, n]) => `${n} ${what}${n === 1 ? '' : 's'} added by TAP ${esc(v)}, marked <span class="tag since">since ${esc(v)}</span>`,
  );
  return ` ${parts.join('; ')}: a peer sends them only in a session of that version or later.`;
}
