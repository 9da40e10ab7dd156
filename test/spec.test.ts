import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { brokenCites, parseChapter, parseSpec, renderRequirements, SPEC_DIR, type SpecIndex } from '../tools/requirements.ts';
import errorCodes from '../schemas/v1/error-codes.json' with { type: 'json' };
import messages from '../schemas/v1/messages.json' with { type: 'json' };

const ROOT = new URL('..', import.meta.url).pathname;
const SCHEMAS = join(ROOT, 'schemas', 'v1');
const read = (f: string) => readFileSync(join(SPEC_DIR, f), 'utf8');
const chapterFiles = readdirSync(SPEC_DIR).filter((f) => f.endsWith('.md'));
/** The whole spec text, every chapter concatenated. */
const specText = chapterFiles.map(read).join('\n');
/** The text of TAP 1.1 (spec/1.1), which holds 1.0's and what 1.1 adds (spec: versioning#tap-1-1). */
const SPEC_1_1 = join(SPEC_DIR, '..', '1.1');
const specText1_1 = readdirSync(SPEC_1_1)
  .filter((f) => f.endsWith('.md'))
  .map((f) => readFileSync(join(SPEC_1_1, f), 'utf8'))
  .join('\n');
/** The text a table entry belongs to: 1.0's, or 1.1's for what 1.1 adds. */
const textOf = (entry: { since?: string }) => (entry.since === '1.1' ? specText1_1 : specText);

/** A minimal RFC 8785 canonicalizer for I-JSON values, used when the reference one is absent. */
function minimalCanonicalize(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(minimalCanonicalize).join(',')}]`;
  const obj = v as Record<string, unknown>;
  // Default string comparison orders by UTF-16 code units, as RFC 8785 requires.
  const keys = Object.keys(obj).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${minimalCanonicalize(obj[k])}`).join(',')}}`;
}

/** The reference canonicalizer when reference/core/jcs.ts exists, else the minimal one. */
async function loadCanonicalize(): Promise<{ canonicalize: (v: unknown) => string; source: string }> {
  const path = join(ROOT, 'reference', 'core', 'jcs.ts');
  if (existsSync(path)) {
    const mod = (await import(pathToFileURL(path).href)) as { canonicalize?: (v: unknown) => string };
    if (typeof mod.canonicalize === 'function') return { canonicalize: mod.canonicalize, source: 'reference/core/jcs.ts' };
  }
  return { canonicalize: minimalCanonicalize, source: 'minimal' };
}

/** Every fenced block of the given language in a chapter, with its line. */
function codeBlocks(text: string, lang: string): Array<{ body: string; line: number }> {
  const out: Array<{ body: string; line: number }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```' + lang) continue;
    const start = i + 1;
    let j = start;
    while (j < lines.length && lines[j]!.trim() !== '```') j++;
    out.push({ body: lines.slice(start, j).join('\n'), line: start });
    i = j;
  }
  return out;
}

describe('spec/1.0', () => {
  let index: SpecIndex;
  beforeAll(() => {
    index = parseSpec(SPEC_DIR);
  });

  it('parses without problems (conventions#requirement-ids)', () => {
    expect(index.problems.map((p) => `${p.file}:${p.line}: ${p.message}`)).toEqual([]);
  });

  it('gives every requirement a unique id', () => {
    const ids = [...index.chapters.values()].flatMap((c) => c.requirements.map((r) => r.id));
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resolves every link and anchor it refers to (conventions#anchors)', () => {
    let links = 0;
    for (const chapter of index.chapters.values()) {
      for (const { target, line } of chapter.links) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        links++;
        const [path, fragment] = target.split('#') as [string, string | undefined];
        if (path === '') {
          expect(chapter.anchors.has(fragment!), `${chapter.file}:${line} ${target}`).toBe(true);
        } else if (path.endsWith('.md') && !path.includes('/')) {
          const other = index.chapters.get(path.slice(0, -3));
          expect(other, `${chapter.file}:${line} ${target}`).toBeDefined();
          if (fragment !== undefined) expect(other!.anchors.has(fragment), `${chapter.file}:${line} ${target}`).toBe(true);
        } else if (path !== 'requirements.json') {
          expect(existsSync(join(SPEC_DIR, path)), `${chapter.file}:${line} ${target}`).toBe(true);
        }
      }
    }
    expect(links).toBeGreaterThan(50);
  });

  it('gives every heading an anchor, unique in its chapter', () => {
    for (const chapter of index.chapters.values()) {
      const anchors = chapter.headings.map((h) => h.anchor);
      expect(
        anchors.every((a) => a !== null),
        chapter.file,
      ).toBe(true);
      expect(new Set(anchors).size, chapter.file).toBe(anchors.length);
    }
  });

  it('has a requirements.json without drift (run npx tsx tools/requirements.ts)', () => {
    expect(read('requirements.json')).toBe(renderRequirements(index.requirements));
  });

  it('keeps its requirement count in the intended range, with every level used', () => {
    const n = index.requirements.length;
    expect(n).toBeGreaterThanOrEqual(180);
    // 1.0 with its four bindings, the registry and the mesh chapters, and the errata that settle them.
    expect(n).toBeLessThanOrEqual(500);
    for (const level of ['MUST', 'SHOULD', 'MAY']) expect(index.requirements.some((r) => r.level === level)).toBe(true);
  });

  it('lists in index.md exactly the chapters that exist', () => {
    const chaptersSection = read('index.md').split('## Chapters {#chapters}')[1]!.split('\n## ')[0]!;
    const listed = [...chaptersSection.matchAll(/\]\(([a-z0-9-]+\.md)\)/g)].map((m) => m[1]!);
    expect(listed.length).toBeGreaterThan(10);
    for (const f of listed) expect(existsSync(join(SPEC_DIR, f)), f).toBe(true);
    const unlisted = chapterFiles.filter((f) => f !== 'index.md' && !listed.includes(f));
    expect(unlisted).toEqual([]);
  });

  it('mentions every message type of messages.json', () => {
    const missing = messages.messages.filter((m) => !textOf(m).includes(`\`${m.type}\``)).map((m) => m.type);
    expect(missing).toEqual([]);
  });

  it('mentions every error code of error-codes.json', () => {
    const missing = errorCodes.codes.filter((c) => !textOf(c).includes(`\`${c.code}\``)).map((c) => c.code);
    expect(missing).toEqual([]);
  });

  it('leaves to spec/1.1 every message type and error code that 1.1 adds, and spec/1.1 mentions each', () => {
    const dir11 = join(SPEC_DIR, '..', '1.1');
    const text11 = readdirSync(dir11)
      .filter((f) => f.endsWith('.md'))
      .map((f) => readFileSync(join(dir11, f), 'utf8'))
      .join('\n');
    const added = [
      ...messages.messages.filter((m) => 'since' in m).map((m) => m.type),
      ...errorCodes.codes.filter((c) => 'since' in c).map((c) => c.code),
    ];
    expect(added.filter((name) => !text11.includes(`\`${name}\``))).toEqual([]);
  });

  it('avoids lower-case "must", which could be misread as normative', () => {
    const hits = chapterFiles.flatMap((f) =>
      read(f)
        .split('\n')
        .map((l, i) => ({ l, at: `${f}:${i + 1}` }))
        .filter(({ l }) => /\bmust\b/.test(l.replace(/`[^`]*`/g, '')))
        .map(({ at }) => at),
    );
    expect(hits).toEqual([]);
  });
});

describe('spec/1.0 examples', () => {
  const ajv = new Ajv2020({ strict: true, keywords: ['since'], allErrors: true, discriminator: true });
  addFormats.default(ajv);
  for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS, f), 'utf8')));
  }
  const examples = chapterFiles.flatMap((f) => codeBlocks(read(f), 'json').map((b) => ({ ...b, file: f })));

  it('parses every JSON example', () => {
    expect(examples.length).toBeGreaterThan(20);
    for (const e of examples) expect(() => JSON.parse(e.body), `${e.file}:${e.line}`).not.toThrow();
  });

  it('gives only complete messages that validate against message.schema.json', () => {
    const validate = ajv.getSchema('https://schemas.tap-protocol.org/v1/message.schema.json')!;
    let checked = 0;
    for (const e of examples) {
      const value = JSON.parse(e.body) as Record<string, unknown>;
      if (!('protocol' in value && 'type' in value && 'payload' in value)) continue;
      // The unsigned form in the signing example lacks signature.value on purpose.
      const sig = value.signature as Record<string, unknown> | undefined;
      if (sig && !('value' in sig)) continue;
      checked++;
      expect(validate(value), `${e.file}:${e.line} ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('shows the whole handshake and a task round trip (handshake#example, tasks#example)', () => {
    const types = (f: string) =>
      codeBlocks(read(f), 'json')
        .map((b) => JSON.parse(b.body) as { type?: string })
        .map((m) => m.type);
    expect(types('handshake.md')).toEqual(['handshake.init', 'handshake.ack', 'handshake.ready', 'handshake.go']);
    expect(types('tasks.md')).toEqual([
      'task.request',
      'task.accepted',
      'task.event',
      'task.event',
      'task.event',
      'task.result',
      'task.status',
      'task.snapshot',
    ]);
  });
});

describe('spec/1.0 signing example (integrity#worked-example)', () => {
  const example = JSON.parse(read('examples/signing-example.json')) as {
    key_id: string;
    key_b64url: string;
    message_unsigned: Record<string, unknown> & { signature: { key_id: string } };
    canonical: string;
    signature_value: string;
    message_signed?: Record<string, unknown>;
  };

  it('recomputes the canonical form and the signature', async () => {
    const { canonicalize, source } = await loadCanonicalize();
    const canonical = canonicalize(example.message_unsigned);
    expect(canonical, `canonicalized with ${source}`).toBe(example.canonical);
    expect(minimalCanonicalize(example.message_unsigned)).toBe(example.canonical);
    const key = Buffer.from(example.key_b64url, 'base64url');
    expect(key.length).toBeGreaterThanOrEqual(32);
    const mac = createHmac('sha256', key).update(Buffer.from(canonical, 'utf8')).digest('base64url');
    expect(mac).toBe(example.signature_value);
    expect(mac).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('names the key it was made with and signs without signature.value', () => {
    expect(example.message_unsigned.signature.key_id).toBe(example.key_id);
    expect(example.message_unsigned.signature).not.toHaveProperty('value');
    if (example.message_signed) {
      expect(example.message_signed).toEqual({
        ...example.message_unsigned,
        signature: { ...example.message_unsigned.signature, value: example.signature_value },
      });
    }
  });

  it('is quoted in integrity.md byte for byte', () => {
    const text = read('integrity.md');
    const blocks = codeBlocks(text, 'text').map((b) => b.body);
    expect(blocks).toContain(example.canonical);
    expect(blocks).toContain(example.signature_value);
    expect(blocks).toContain(example.key_b64url);
  });
});

describe('tools/requirements.ts', () => {
  const problemsOf = (md: string) => parseChapter('sample', md).problems.map((p) => `${p.line}: ${p.message}`);

  it('extracts id, level, anchor and plain sentence', () => {
    const { chapter, problems } = parseChapter(
      'sample',
      '# Sample {#sample}\n\n## Part {#part}\n\n**[TAP-TASK-001]** The agent MUST NOT send `x` ([see](#part)). Then prose.\n',
    );
    expect(problems).toEqual([]);
    expect(chapter.requirements).toMatchObject([
      {
        id: 'TAP-TASK-001',
        level: 'MUST',
        area: 'TASK',
        chapter: 'sample',
        anchor: 'sample#part',
        text: 'The agent MUST NOT send x (see).',
      },
    ]);
  });

  it('maps RECOMMENDED to SHOULD and OPTIONAL to MAY', () => {
    const { chapter } = parseChapter(
      's',
      '# S {#s}\n\n**[TAP-LIM-001]** A value of 5 is RECOMMENDED.\n\n**[TAP-LIM-002]** The field is OPTIONAL.\n',
    );
    expect(chapter.requirements.map((r) => r.level)).toEqual(['SHOULD', 'MAY']);
  });

  it('reports a normative sentence without an id, with its line', () => {
    expect(problemsOf('# S {#s}\n\nFine prose.\nThe agent MUST act.\n')).toEqual([
      expect.stringMatching(/^4: normative sentence without a requirement id/),
    ]);
  });

  it('does not count quoted or code keywords as normative', () => {
    expect(problemsOf('# S {#s}\n\nThe words "MUST" and `SHOULD` are mentions.\n')).toEqual([]);
  });

  it('reports an id without a keyword, mixed levels and a bad id', () => {
    expect(problemsOf('# S {#s}\n\n**[TAP-ENV-001]** Nothing normative here.\n')).toEqual([expect.stringMatching(/no normative keyword/)]);
    expect(problemsOf('# S {#s}\n\n**[TAP-ENV-001]** It MUST go and MAY stay.\n')).toEqual([expect.stringMatching(/mixes levels/)]);
    expect(problemsOf('# S {#s}\n\n**[TAP-FOO-1]** It MUST go.\n')).toEqual([expect.stringMatching(/is not TAP-<AREA>-<NNN>/)]);
  });

  it('reports a heading without an anchor and a duplicate anchor', () => {
    expect(problemsOf('# S {#s}\n\n## Part\n\n## Again {#s}\n')).toEqual([
      expect.stringMatching(/^3: heading "Part" has no anchor; write it as "## Part \{#part\}"/),
      expect.stringMatching(/^5: anchor "\{#s\}" is used twice/),
    ]);
  });

  it('ignores fenced code', () => {
    expect(problemsOf('# S {#s}\n\n```text\nIt MUST be ignored.\n# not a heading\n```\n')).toEqual([]);
  });

  it('finds code comments whose spec citation does not resolve', () => {
    const root = mkdtempSync(join(tmpdir(), 'tap-cites-'));
    try {
      writeFileSync(
        join(root, 'a.ts'),
        [
          '/** Good (spec: tasks#sequences). */',
          // Split so that this file does not itself hold a broken citation.
          'const spec: string = "x"; /' + '/ spec: tasks#no-such-anchor',
          ' * see spec: nowhere',
          'function f(spec: Record<string, unknown>) {}',
        ].join('\n'),
      );
      const broken = brokenCites(parseSpec(SPEC_DIR), root, ['.']);
      expect(broken).toEqual([
        { file: 'a.ts', line: 2, cite: 'tasks#no-such-anchor' },
        { file: 'a.ts', line: 3, cite: 'nowhere' },
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
