/** The getting-started page (tools/site/content/) and the generated-types page (from tools/gen-types LANGS). */
import { readFileSync } from 'node:fs';
import { commandFor, LANGS } from '../gen-types/main.ts';
import type { SiteContext } from './context.ts';
import { codeBlock, esc, rel } from './html.ts';
import type { Page } from './layout.ts';
import { renderMarkdown } from './markdown.ts';
import { textOf } from './search-index.ts';

const CONTENT = new URL('./content/', import.meta.url);

/** Adds one search entry per h2 section of a rendered page. */
function indexPage(ctx: SiteContext, path: string, label: string, html: string): void {
  for (const part of html.split(/(?=<h2 id=")/)) {
    const m = /^<h2 id="([^"]+)">([\s\S]*?)<\/h2>/.exec(part);
    if (m)
      ctx.search.push({
        t: textOf(m[2]!).replace(/#$/, ''),
        u: `${path}#${m[1]}`,
        k: label,
        x: textOf(part.slice(m[0].length)).slice(0, 600),
      });
  }
}

export function gettingStartedPage(ctx: SiteContext): Page {
  const path = 'getting-started.html';
  const source = readFileSync(new URL('getting-started.md', CONTENT), 'utf8').replace(/<!-- include: ([\w.-]+) -->/g, (_, file: string) => {
    const text = readFileSync(new URL(file, CONTENT), 'utf8').trimEnd();
    return '```ts\n' + text + '\n```';
  });
  const rendered = renderMarkdown(source, ctx.renderContext(path));
  indexPage(ctx, path, 'Getting started', rendered.html);
  return {
    path,
    title: 'Getting started',
    body: rendered.html,
    toc: rendered.headings.filter((h) => h.depth === 2).map((h) => ({ anchor: h.anchor, title: h.title })),
    description: 'Build a TAP agent on the reference library and certify it with tap-conform.',
  };
}

export function typesPage(ctx: SiteContext): Page {
  const path = 'types.html';
  const sections = LANGS.map((l) => {
    const lang = l.lang === 'ts' ? 'ts' : l.lang;
    return `<h2 id="${l.lang}">${esc(l.name)}<a class="anchor" href="#${l.lang}" aria-label="Link to this section">#</a></h2>
${codeBlock(commandFor(l.lang), 'sh')}
<p>Writes <code>${esc(l.file)}</code>: ${inline(l.summary)}</p>
<p class="muted">${inline(l.needs)}</p>
${codeBlock(l.example, lang)}`;
  });
  const body = `<h1 id="types">Generated types</h1>
<p class="lead">Types for TAP messages in your language, generated from the <a href="${esc(rel(path, 'schemas/index.html'))}">JSON Schemas</a> in <code>schemas/v1</code> and nothing else. Every language keeps the message union tagged by <code>type</code>: one type per message and a dispatcher that picks it.</p>
<p>Run the command where the package is installed (<code>npm install tap-agent-protocol</code>); in a clone of the repository, <code>npm run gen:types -- --lang &lt;lang&gt; --out &lt;dir&gt;</code> does the same.</p>
<div class="table-wrap"><table><thead><tr><th>Language</th><th>Command</th><th>File</th></tr></thead><tbody>
${LANGS.map((l) => `<tr><td><a href="#${l.lang}">${esc(l.name)}</a></td><td><code>${esc(commandFor(l.lang))}</code></td><td><code>${esc(l.file)}</code></td></tr>`).join('\n')}
</tbody></table></div>
${sections.join('\n')}
<h2 id="what-is-checked">What the generated code checks<a class="anchor" href="#what-is-checked" aria-label="Link to this section">#</a></h2>
<p>The generated types describe the members each schema names. The dispatchers check the <code>type</code>, the required members and the JSON types; the Python one also checks enum values, patterns, lengths, ranges and the simple conditional rules. None of them replaces validation against the schemas, which also covers the conditional rules each <a href="${esc(rel(path, 'messages/index.html'))}">message page</a> lists. Unknown members are ignored by receivers (<a href="${esc(rel(path, 'spec/versioning.html'))}">Versioning and extensions</a>); the TypeScript types leave every object open, the Python and Rust types keep unknown members in <code>extra</code> and the Go types in <code>Extra</code>, and all of them write them back. The Python <code>parse_message_json</code> refuses text that is not I-JSON: <code>NaN</code>, <code>Infinity</code>, integers beyond ±(2<sup>53</sup>−1), lone surrogates.</p>
<h2 id="why-gen-types">Why not a generic generator<a class="anchor" href="#why-gen-types" aria-label="Link to this section">#</a></h2>
<p>Generic JSON Schema code generators read <code>message.schema.json</code> as one object type, not as a union tagged by <code>type</code>. Run over the 78 valid fixtures, quicktype and Modelina each produced a single merged <code>Message</code> whose payload is one type with some 50 optional members (Modelina also renamed <code>type</code>), so no code can tell a <code>task.request</code> from a <code>task.result</code> by its type, and quicktype's Python round trip broke all 78 of them. <code>tapctl gen-types</code> gives one type per message and a dispatcher on <code>type</code>, and its tests hold it to the fixtures: every valid fixture compiles as a typed <code>Message</code> literal in TypeScript, and in all four languages decoding and encoding it again gives back its RFC 8785 form, unknown members, <code>x-</code> members and integers included.</p>`;
  ctx.search.push({
    t: 'Generated types',
    u: path,
    k: 'Guide',
    x: `TypeScript, Python, Go and Rust types from the JSON Schemas. ${LANGS.map((l) => commandFor(l.lang)).join(' ')}`,
  });
  for (const l of LANGS)
    ctx.search.push({ t: `${l.name} types`, u: `${path}#${l.lang}`, k: 'Generated types', x: `${commandFor(l.lang)} ${l.summary}` });
  return {
    path,
    title: 'Generated types',
    body,
    toc: [
      ...LANGS.map((l) => ({ anchor: l.lang, title: l.name })),
      { anchor: 'what-is-checked', title: 'What is checked' },
      { anchor: 'why-gen-types', title: 'Why not a generic generator' },
    ],
    description: 'Generate TypeScript, Python, Go and Rust types for TAP messages.',
  };
}

/** `code` spans of a one-line Markdown string as HTML. */
function inline(text: string): string {
  return esc(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}
