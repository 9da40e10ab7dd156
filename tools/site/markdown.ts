/**
 * Markdown → HTML for the spec chapters and the site's own pages: `{#anchor}` headings become
 * ids with a visible self-link, `**[TAP-XXX-NNN]**` becomes a requirement badge linking to the
 * requirement index, RFC 2119 keywords are marked (not when quoted, as the requirement parser
 * reads them), links to chapters and schema files are rewritten to site pages, and inline code
 * naming a message type or an error code links to its page (spec: conventions#anchors).
 */
import { Marked, type Tokens } from 'marked';
import { codeBlock, esc } from './html.ts';

/** The RFC 2119 / 8174 keywords, longest first, as the requirement parser reads them. */
const KEYWORDS = [
  'MUST NOT',
  'MUST',
  'REQUIRED',
  'SHALL NOT',
  'SHALL',
  'SHOULD NOT',
  'SHOULD',
  'NOT RECOMMENDED',
  'RECOMMENDED',
  'MAY',
  'OPTIONAL',
];
const KEYWORD_AT = new RegExp(`^(?:${KEYWORDS.join('|')})\\b`);
const KEYWORD_ANYWHERE = new RegExp(`\\b(?:${KEYWORDS.join('|')})\\b`, 'g');
const LEVEL: Record<string, 'must' | 'should' | 'may'> = {
  'MUST NOT': 'must',
  MUST: 'must',
  REQUIRED: 'must',
  'SHALL NOT': 'must',
  SHALL: 'must',
  'SHOULD NOT': 'should',
  SHOULD: 'should',
  'NOT RECOMMENDED': 'should',
  RECOMMENDED: 'should',
  MAY: 'may',
  OPTIONAL: 'may',
};
const REQ_ID = /^\*\*\[(TAP-[A-Z]+-[0-9]{3})\]\*\*/;
const HEADING_ANCHOR = /\s*\{#([a-z0-9-]+)\}\s*$/;

/** How a page resolves what its Markdown points at. */
export interface RenderContext {
  /** A link target as written in the source → the href on the page (unchanged if not rewritten). */
  link(href: string): string;
  /** The href for inline code that names something with a page (a message type, an error code), or null. */
  codeLink(code: string): string | null;
  /** The href of a requirement id's entry in the index and its level, or null if unknown. */
  requirement(id: string): { href: string; level: 'MUST' | 'SHOULD' | 'MAY' } | null;
}

export interface RenderedHeading {
  depth: number;
  title: string;
  anchor: string;
}

export interface Rendered {
  html: string;
  headings: RenderedHeading[];
}

type Marked2119 = Tokens.Generic & { keyword: string };
type RequirementToken = Tokens.Generic & { id: string };

/** Renders one Markdown document. Headings without `{#anchor}` get a slug of their text. */
export function renderMarkdown(source: string, ctx: RenderContext): Rendered {
  const headings: RenderedHeading[] = [];
  const anchors = new WeakMap<object, string>();
  const inLink = new WeakSet<object>();
  const used = new Set<string>();
  const marked = new Marked({ gfm: true });

  marked.use({
    extensions: [
      {
        name: 'requirementId',
        level: 'inline',
        start: (src: string) => {
          const i = src.indexOf('**[TAP-');
          return i === -1 ? undefined : i;
        },
        tokenizer(src: string) {
          const m = REQ_ID.exec(src);
          return m ? ({ type: 'requirementId', raw: m[0], id: m[1]! } as RequirementToken) : undefined;
        },
        renderer(token) {
          const id = (token as RequirementToken).id;
          const r = ctx.requirement(id);
          if (!r) return `<strong class="req-id req-unknown" id="${esc(id)}">${esc(id)}</strong>`;
          return `<a class="req-id req-${r.level.toLowerCase()}" id="${esc(id)}" href="${esc(r.href)}" title="${r.level} requirement ${esc(id)}: see the requirement index">${esc(id)}</a>`;
        },
      },
      {
        name: 'rfc2119',
        level: 'inline',
        start: (src: string) => {
          for (const m of src.matchAll(KEYWORD_ANYWHERE)) {
            if (src[m.index! - 1] !== '"' && src[m.index! + m[0].length] !== '"') return m.index;
          }
          return undefined;
        },
        tokenizer(src: string) {
          const m = KEYWORD_AT.exec(src);
          return m ? ({ type: 'rfc2119', raw: m[0], keyword: m[0] } as Marked2119) : undefined;
        },
        renderer(token) {
          const k = (token as Marked2119).keyword;
          return `<span class="kw kw-${LEVEL[k]}">${k}</span>`;
        },
      },
    ],
    walkTokens(token) {
      if (token.type === 'heading') {
        const last = token.tokens?.[token.tokens.length - 1] as Tokens.Text | undefined;
        const m = last && typeof last.text === 'string' ? HEADING_ANCHOR.exec(last.text) : null;
        if (m && last) {
          last.text = last.text.slice(0, m.index);
          last.raw = last.raw.replace(HEADING_ANCHOR, '');
          anchors.set(token, m[1]!);
        }
      }
      if (token.type === 'link') {
        const mark = (ts: Tokens.Generic[] | undefined) =>
          ts?.forEach((t) => (inLink.add(t), mark(t.tokens as Tokens.Generic[] | undefined)));
        mark(token.tokens as Tokens.Generic[]);
      }
    },
    renderer: {
      heading(token) {
        const inner = this.parser.parseInline(token.tokens);
        const title = inner
          .replace(/<[^>]+>/g, '')
          .replace(/&amp;/g, '&')
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&quot;/g, '"')
          .trim();
        let anchor =
          anchors.get(token) ??
          title
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, '-')
            .replace(/^-+|-+$/g, '');
        if (used.has(anchor)) {
          let n = 2;
          while (used.has(`${anchor}-${n}`)) n++;
          anchor = `${anchor}-${n}`;
        }
        used.add(anchor);
        headings.push({ depth: token.depth, title, anchor });
        const self = token.depth > 1 ? `<a class="anchor" href="#${anchor}" aria-label="Link to this section">#</a>` : '';
        return `<h${token.depth} id="${anchor}">${inner}${self}</h${token.depth}>\n`;
      },
      link(token) {
        const href = ctx.link(token.href);
        const external = /^[a-z][a-z0-9+.-]*:/i.test(href);
        const title = token.title ? ` title="${esc(token.title)}"` : '';
        return `<a href="${esc(href)}"${title}${external ? ' class="external" rel="noopener"' : ''}>${this.parser.parseInline(token.tokens)}</a>`;
      },
      codespan(token) {
        const code = `<code>${esc(token.text)}</code>`;
        if (inLink.has(token)) return code;
        const href = ctx.codeLink(token.text);
        return href ? `<a class="code-ref" href="${esc(href)}">${code}</a>` : code;
      },
      code(token) {
        return codeBlock(token.text, token.lang ?? '');
      },
      table(token) {
        const cell = (c: Tokens.TableCell) => {
          const tag = c.header ? 'th' : 'td';
          const align = c.align ? ` style="text-align:${c.align}"` : '';
          return `<${tag}${align}>${this.parser.parseInline(c.tokens)}</${tag}>`;
        };
        const head = `<tr>${token.header.map(cell).join('')}</tr>`;
        const body = token.rows.map((row) => `<tr>${row.map(cell).join('')}</tr>`).join('\n');
        return `<div class="table-wrap"><table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody></table></div>\n`;
      },
    },
  });

  const html = marked.parse(source, { async: false }) as string;
  return { html, headings };
}
