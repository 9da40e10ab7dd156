/**
 * One chapter of the spec as the requirement index reads it: its requirement sentences (id,
 * level, anchor), headings and links, and the defects found on the way (spec: conventions#requirement-ids).
 */
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The requirement areas of TAP 1.0. */
export const AREAS = [
  'ENV',
  'MSG',
  'HS',
  'TASK',
  'EVT',
  'RES',
  'IDEM',
  'CAN',
  'ERR',
  'AUTH',
  'PLAN',
  'INT',
  'SHUT',
  'LIM',
  'STDIO',
  'WS',
  'WKS',
  'NATS',
  'REG',
  'MESH',
  'VER',
  'SEC',
  'CONF',
  'LIST', // TAP 1.1: listing tasks
  'EXT',
  'TRACE', // TAP 1.1: negotiated extensions, W3C trace context
  'QUIET', // TAP 1.1: quiet tasks
  'INPUT',
  'BRIDGE', // TAP 1.1: an MCP server as a TAP agent
] as const;
export type Area = (typeof AREAS)[number];
export type Level = 'MUST' | 'SHOULD' | 'MAY';

/** One requirement: a single sentence carrying one id and one keyword level. */
export interface Requirement {
  id: string;
  level: Level;
  area: Area;
  chapter: string;
  /** `<chapter>#<anchor>` of the nearest heading above the sentence. */
  anchor: string;
  /** The sentence as plain text, without the id. */
  text: string;
}

/** A requirement together with where it was found. */
export interface LocatedRequirement extends Requirement {
  file: string;
  line: number;
}

export interface Heading {
  depth: number;
  title: string;
  anchor: string | null;
  line: number;
}

export interface Link {
  target: string;
  line: number;
}

/** What one chapter holds. */
export interface Chapter {
  name: string;
  file: string;
  headings: Heading[];
  anchors: Set<string>;
  links: Link[];
  requirements: LocatedRequirement[];
}

/** A defect in the spec, reported as `file:line: message`. */
export interface Problem {
  file: string;
  line: number;
  message: string;
}

const KEYWORD = /\b(MUST NOT|MUST|REQUIRED|SHALL NOT|SHALL|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED|MAY|OPTIONAL)\b/g;
const LEVEL_OF: Record<string, Level> = {
  'MUST NOT': 'MUST',
  MUST: 'MUST',
  REQUIRED: 'MUST',
  'SHALL NOT': 'MUST',
  SHALL: 'MUST',
  'SHOULD NOT': 'SHOULD',
  SHOULD: 'SHOULD',
  'NOT RECOMMENDED': 'SHOULD',
  RECOMMENDED: 'SHOULD',
  MAY: 'MAY',
  OPTIONAL: 'MAY',
};
const HAS_KEYWORD = new RegExp(KEYWORD.source);
const MARKER = /\*\*\[(TAP-[A-Z]+-[0-9]+)\]\*\*/g;
const ID_FORMAT = new RegExp(`^TAP-(${AREAS.join('|')})-[0-9]{3}$`);
const ANCHOR_FORMAT = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const HEADING = /^(#{1,6})\s+(.*?)\s*$/;
const HEADING_ANCHOR = /^(.*?)\s*\{#([^}]*)\}$/;
const FENCE = /^\s*(```|~~~)/;
const ITEM_START = /^\s*([-*+]|[0-9]+[.)])\s+|^\s*>\s?|^\s*\|/;
const LINK = /!?\[((?:[^\]\\]|\\.)*)\]\(([^()\s]+)(?:\s+"[^"]*")?\)/g;
/** Abbreviations after which a period does not end a sentence. */
const ABBREVIATIONS = /(?:\b(?:e\.g|i\.e|cf|vs|etc|Fig|No))\.$/;

/** One line of prose with its line number. */
interface SourceLine {
  text: string;
  line: number;
}

/** Replaces every character of `s` between `from` and `to` with a filler, keeping offsets. */
function blank(s: string, from: number, to: number, filler = ' '): string {
  return s.slice(0, from) + filler.repeat(to - from) + s.slice(to);
}

/**
 * Hides what is not prose from the keyword and sentence scanners while keeping offsets:
 * inline code, link targets, HTML comments and keywords quoted as words ("MUST").
 */
export function maskProse(s: string): string {
  let out = s;
  for (const m of s.matchAll(/(`+)([\s\S]*?)\1/g)) out = blank(out, m.index!, m.index! + m[0].length, 'x');
  for (const m of out.matchAll(/\]\(([^()\s]*)(?:\s+"[^"]*")?\)/g)) out = blank(out, m.index! + 2, m.index! + m[0].length - 1, 'x');
  for (const m of out.matchAll(/<!--[\s\S]*?-->/g)) out = blank(out, m.index!, m.index! + m[0].length);
  for (const m of out.matchAll(/"(MUST NOT|MUST|REQUIRED|SHALL NOT|SHALL|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED|MAY|OPTIONAL)"/g)) {
    out = blank(out, m.index!, m.index! + m[0].length, 'q');
  }
  return out;
}

/** Splits masked prose into sentence ranges [start, end). */
export function sentenceRanges(masked: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let start = 0;
  const boundary = /[.!?]["')\]*_]*(?=\s+\S)|(?=\*\*\[TAP-)/g;
  for (const m of masked.matchAll(boundary)) {
    const end = m.index! + m[0].length;
    if (m[0] !== '' && ABBREVIATIONS.test(masked.slice(Math.max(0, m.index! - 4), m.index! + 1))) continue;
    if (end <= start) continue;
    if (masked.slice(start, end).trim() !== '') ranges.push([start, end]);
    start = end;
  }
  if (masked.slice(start).trim() !== '') ranges.push([start, masked.length]);
  return ranges.map(([a, b]) => {
    while (a < b && /\s/.test(masked[a]!)) a++;
    while (b > a && /\s/.test(masked[b - 1]!)) b--;
    return [a, b] as [number, number];
  });
}

/** Markdown of a sentence as plain text: no id, emphasis, code ticks or link targets. */
export function plainText(markdown: string): string {
  return markdown
    .replace(MARKER, '')
    .replace(/!?\[((?:[^\]\\]|\\.)*)\]\([^)]*\)/g, '$1')
    .replace(/`+([^`]*)`+/g, '$1')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .replace(/(^|[\s(])\*([^*\s][^*]*)\*/g, '$1$2')
    .replace(/(^|[\s(])_([^_\s][^_]*)_/g, '$1$2')
    .replace(/^\s*(?:[-*+]|[0-9]+[.)])\s+/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Turns a heading title into the anchor it would get, for suggestions in messages. */
function suggestAnchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** Groups prose lines into items: paragraphs, list items, quote lines and table rows. */
function items(lines: SourceLine[]): SourceLine[][] {
  const out: SourceLine[][] = [];
  let current: SourceLine[] = [];
  const flush = () => {
    if (current.length > 0) out.push(current);
    current = [];
  };
  for (const l of lines) {
    if (l.text.trim() === '') {
      flush();
      continue;
    }
    if (ITEM_START.test(l.text)) flush();
    current.push(l);
    if (/^\s*\|/.test(l.text)) flush();
  }
  flush();
  return out;
}

/** Parses one chapter; `file` is used in problem reports only. */
export function parseChapter(name: string, source: string, file = `${name}.md`): { chapter: Chapter; problems: Problem[] } {
  const problems: Problem[] = [];
  const chapter: Chapter = { name, file, headings: [], anchors: new Set(), links: [], requirements: [] };
  const report = (line: number, message: string) => problems.push({ file, line, message });

  // Pass 1: split into headings and prose, skipping fenced code.
  type Section = { anchor: string; lines: SourceLine[] };
  const sections: Section[] = [{ anchor: '', lines: [] }];
  let fence: string | null = null;
  const lines = source.split('\n');
  lines.forEach((text, i) => {
    const line = i + 1;
    const f = FENCE.exec(text);
    if (fence !== null) {
      if (f && f[1] === fence) fence = null;
      return;
    }
    if (f) {
      fence = f[1]!;
      sections[sections.length - 1]!.lines.push({ text: '', line });
      return;
    }
    const h = HEADING.exec(text);
    if (h) {
      const raw = h[2]!;
      const a = HEADING_ANCHOR.exec(raw);
      const heading: Heading = { depth: h[1]!.length, title: a ? a[1]! : raw, anchor: a ? a[2]! : null, line };
      chapter.headings.push(heading);
      for (const m of raw.matchAll(LINK)) chapter.links.push({ target: m[2]!, line });
      if (!a) {
        report(line, `heading "${raw}" has no anchor; write it as "${h[1]} ${raw} {#${suggestAnchor(raw)}}"`);
      } else if (!ANCHOR_FORMAT.test(a[2]!)) {
        report(line, `anchor "{#${a[2]}}" is not kebab-case (lowercase letters and digits joined by "-")`);
      } else if (chapter.anchors.has(a[2]!)) {
        report(line, `anchor "{#${a[2]}}" is used twice in ${file}`);
      } else {
        chapter.anchors.add(a[2]!);
      }
      if (HAS_KEYWORD.test(maskProse(heading.title)))
        report(line, 'a heading cannot carry a normative keyword; move the requirement into the text');
      sections.push({ anchor: heading.anchor ?? '', lines: [] });
      return;
    }
    sections[sections.length - 1]!.lines.push({ text, line });
  });
  if (fence !== null) report(lines.length, `a code fence (${fence}) is never closed`);

  // Pass 2: links, and requirement sentences item by item.
  for (const section of sections) {
    for (const l of section.lines) for (const m of l.text.matchAll(LINK)) chapter.links.push({ target: m[2]!, line: l.line });
    for (const item of items(section.lines)) {
      // Join the item's lines with single spaces, remembering where each line starts.
      const starts: number[] = [];
      let joined = '';
      for (const l of item) {
        if (joined !== '') joined += ' ';
        starts.push(joined.length);
        joined += l.text;
      }
      const lineAt = (offset: number) => {
        let k = 0;
        while (k + 1 < starts.length && starts[k + 1]! <= offset) k++;
        return item[k]!.line;
      };
      const masked = maskProse(joined);
      for (const [from, to] of sentenceRanges(masked)) {
        const sentence = joined.slice(from, to);
        const maskedSentence = masked.slice(from, to);
        const line = lineAt(from);
        const ids = [...maskedSentence.matchAll(MARKER)];
        const keywords = [...maskedSentence.replace(MARKER, (m) => ' '.repeat(m.length)).matchAll(KEYWORD)].map((m) => m[1]!);
        const levels = [...new Set(keywords.map((k) => LEVEL_OF[k]!))];
        const lead = maskedSentence.replace(/^\s*(?:[-*+]|[0-9]+[.)])\s+|^\s*>\s?|^\s*\|\s*/, '');
        if (ids.length === 0) {
          if (keywords.length > 0) {
            report(
              line,
              `normative sentence without a requirement id (${keywords.join(', ')}): "${plainText(sentence).slice(0, 90)}"; start it with **[TAP-AREA-NNN]**`,
            );
          }
          continue;
        }
        if (ids.length > 1)
          report(line, `one sentence carries ${ids.length} requirement ids (${ids.map((m) => m[1]).join(', ')}); split it`);
        const id = ids[0]![1]!;
        if (!lead.startsWith(`**[${id}]**`)) report(line, `requirement id ${id} has to open its sentence`);
        if (!ID_FORMAT.test(id)) report(line, `requirement id ${id} is not TAP-<AREA>-<NNN> with AREA one of ${AREAS.join(', ')}`);
        if (keywords.length === 0) {
          report(line, `requirement ${id} has no normative keyword (MUST, SHOULD, MAY, ...)`);
          continue;
        }
        if (levels.length > 1) {
          report(line, `requirement ${id} mixes levels (${keywords.join(', ')}); one sentence carries one level, so split it`);
          continue;
        }
        chapter.requirements.push({
          id,
          level: levels[0]!,
          area: id.split('-')[1] as Area,
          chapter: name,
          anchor: `${name}#${section.anchor}`,
          text: plainText(sentence),
          file,
          line,
        });
      }
    }
  }
  return { chapter, problems };
}
