/**
 * The spec site: Markdown rendering (anchors, requirement badges, RFC 2119 keywords), the
 * requirement → case links, field tables that follow $refs, the state diagram layout, the link
 * check and a whole build (the getting-started agent is certified by the docs step from the tarball).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSite, type BuildResult } from '../tools/site/build.ts';
import { checkSite } from '../tools/site/check-links.ts';
import { SiteContext } from '../tools/site/context.ts';
import { fieldRows } from '../tools/site/fields.ts';
import { renderMarkdown, type RenderContext } from '../tools/site/markdown.ts';
import { coverage, linkRequirements, type CaseRef } from '../tools/site/requirement-links.ts';
import { readSources, ROOT } from '../tools/site/sources.ts';
import { layout, stateDiagramSvg } from '../tools/site/state-diagram.ts';
import type { Requirement } from '../tools/requirements.ts';

const plain: RenderContext = {
  link: (h) => h,
  codeLink: (c) => (c === 'ping' ? 'messages/ping.html' : null),
  requirement: (id) => (id === 'TAP-HS-001' ? { href: 'requirements.html#TAP-HS-001', level: 'MUST' } : null),
};

const FAKE_CASES: CaseRef[] = [
  { id: 'core.fake.one', title: 'One', level: 'MUST', profile: 'core', spec: 'handshake#init', requirements: ['TAP-HS-001'] },
  { id: 'core.fake.two', title: 'Two', level: 'MUST', profile: 'core', spec: 'handshake#init', requirements: ['TAP-HS-001', 'TAP-HS-002'] },
  { id: 'tasks.fake.three', title: 'Three', level: 'SHOULD', profile: 'tasks', spec: 'tasks#states', requirements: ['TAP-NOPE-999'] },
  { id: 'tasks.fake.four', title: 'Four', level: 'MAY', profile: 'tasks', spec: 'tasks#no-such-section', requirements: [] },
];

describe('Markdown rendering (spec: conventions#anchors)', () => {
  it('gives every heading its {#anchor} as id and a self-link', () => {
    const { html, headings } = renderMarkdown('# Title {#top}\n\n## Version negotiation {#version-negotiation}\n\ntext', plain);
    expect(html).toContain('<h2 id="version-negotiation">Version negotiation<a class="anchor" href="#version-negotiation"');
    expect(html).not.toContain('{#');
    expect(headings.map((h) => h.anchor)).toEqual(['top', 'version-negotiation']);
  });

  it('turns **[TAP-XXX-NNN]** into a badge that links to the requirement index and is itself an anchor', () => {
    const { html } = renderMarkdown('**[TAP-HS-001]** A requester MUST send it.', plain);
    expect(html).toContain('<a class="req-id req-must" id="TAP-HS-001" href="requirements.html#TAP-HS-001"');
    expect(html).toContain('<span class="kw kw-must">MUST</span>');
  });

  it('marks RFC 2119 keywords by level, but not quoted ones or those in code (spec: conventions#requirement-language)', () => {
    const { html } = renderMarkdown('It MUST NOT, SHOULD and MAY. The words "MUST" and `SHOULD` are quoted.', plain);
    expect(html).toContain('<span class="kw kw-must">MUST NOT</span>');
    expect(html).toContain('<span class="kw kw-should">SHOULD</span>');
    expect(html).toContain('<span class="kw kw-may">MAY</span>');
    expect(html).toContain('&quot;MUST&quot;');
    expect(html).toContain('<code>SHOULD</code>');
  });

  it('links inline code that names a message type, but never inside another link', () => {
    const { html } = renderMarkdown('Send `ping`; see [`ping`](limits.md).', plain);
    expect(html).toContain('<a class="code-ref" href="messages/ping.html"><code>ping</code></a>');
    expect(html).toContain('<a href="limits.md"><code>ping</code></a>');
  });
});

describe('requirement → conformance case links (spec: conventions#requirement-ids)', () => {
  const reqs = [
    { id: 'TAP-HS-001', level: 'MUST', area: 'HS', chapter: 'handshake', anchor: 'handshake#init', text: 'a' },
    { id: 'TAP-HS-002', level: 'MUST', area: 'HS', chapter: 'handshake', anchor: 'handshake#init', text: 'b' },
    { id: 'TAP-TASK-001', level: 'SHOULD', area: 'TASK', chapter: 'tasks', anchor: 'tasks#states', text: 'c' },
  ] as Requirement[];

  it('lists, for each requirement, the cases that name it, in case order', () => {
    const links = linkRequirements(reqs, FAKE_CASES);
    expect(links.checkedBy.get('TAP-HS-001')?.map((c) => c.id)).toEqual(['core.fake.one', 'core.fake.two']);
    expect(links.checkedBy.get('TAP-HS-002')?.map((c) => c.id)).toEqual(['core.fake.two']);
    expect(links.checkedBy.has('TAP-TASK-001')).toBe(false);
    expect(links.bySection.get('tasks#states')?.map((c) => c.id)).toEqual(['tasks.fake.three']);
  });

  it('reports ids a case names that are not in the index, and counts coverage per level', () => {
    const links = linkRequirements(reqs, FAKE_CASES);
    expect(links.unknown).toEqual([{ caseId: 'tasks.fake.three', requirement: 'TAP-NOPE-999' }]);
    expect(coverage(reqs, links)).toEqual({
      MUST: { total: 2, checked: 2 },
      SHOULD: { total: 1, checked: 0 },
      MAY: { total: 0, checked: 0 },
    });
  });
});

describe('field tables', () => {
  const ctx = new SiteContext(readSources(FAKE_CASES));
  const fctx = ctx.fieldContext('messages/x.html');

  it('follow $refs: a shared schema becomes a link, an inline object becomes dotted rows', () => {
    const rows = fieldRows(ctx.sources.schemas.get('handshake.init.payload.schema.json')!, fctx);
    const byPath = new Map(rows.map((r) => [r.path, r]));
    expect(byPath.get('agent')!.type).toContain('../schemas/index.html#agent-card');
    expect(byPath.get('params.integrity.alg')!.type).toContain('hmac-sha256');
    expect(byPath.get('resume.tasks[].last_sequence')!.presence).toBe('required');
    expect(byPath.get('versions')!.constraints.join(' ')).toContain('at least 1 item');
  });

  it('merge the envelope into a message schema, with the message type as a constant', () => {
    const rows = fieldRows(ctx.sources.schemas.get('task.request.schema.json')!, fctx);
    const names = rows.map((r) => r.path);
    for (const member of ['protocol', 'message_id', 'type', 'source', 'target', 'timestamp', 'payload', 'task_id'])
      expect(names).toContain(member);
    expect(rows.find((r) => r.path === 'type')!.type).toContain('task.request');
    expect(rows.find((r) => r.path === 'task_id')!.presence).toBe('required');
  });
});

describe('task state diagram (spec: tasks#states)', () => {
  const table = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/task-states.json'), 'utf8'));

  it('is the same drawing every time', () => {
    expect(stateDiagramSvg(table)).toBe(stateDiagramSvg(JSON.parse(JSON.stringify(table))));
  });

  it('draws every state once, terminal states distinct, and every transition as a numbered arrow', () => {
    const svg = stateDiagramSvg(table);
    for (const s of table.states) expect(svg).toContain(`id="state-${s}"`);
    expect(svg.match(/class="sd-term"/g)?.length).toBe(table.terminal.length * 2);
    table.transitions.forEach((t: { from: string; to: string }, i: number) => {
      expect(svg).toContain(`<g class="sd-g" id="t-${i + 1}"><title>${i + 1}. ${t.from} → ${t.to}:`);
    });
  });

  it('places no label on a box or on another label', () => {
    const l = layout(table);
    for (const e of l.edges) {
      for (const b of l.boxes) expect(e.label.x > b.x && e.label.x < b.x + b.w && e.label.y > b.y && e.label.y < b.y + b.h).toBe(false);
      for (const o of l.edges) if (o !== e) expect(Math.hypot(o.label.x - e.label.x, o.label.y - e.label.y)).toBeGreaterThanOrEqual(18);
    }
  });
});

describe('link check', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tap-links-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(
      join(dir, 'assets', 'search-index.json'),
      JSON.stringify({ docs: [{ t: 'x', u: 'a.html#missing-from-index', k: '', x: '' }] }),
    );
    writeFileSync(
      join(dir, 'a.html'),
      '<h2 id="here">x</h2><a href="b.html#there">ok</a><a href="#here">ok</a><a href="https://example.org/">external link</a>',
    );
    writeFileSync(
      join(dir, 'b.html'),
      '<p id="there"></p><a href="a.html#nowhere">bad anchor</a><a href="c.html">no file</a><a href="../README.md">a repository file</a><script src="https://cdn.example/x.js"></script><svg><path marker-end="url(#gone)"/></svg>',
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds missing files, missing anchors, links out of the site, external assets and broken search entries, and nothing else', () => {
    const report = checkSite(dir);
    expect(report.broken.map((b) => `${b.page} ${b.href}`).sort()).toEqual(
      [
        'assets/search-index.json a.html#missing-from-index',
        'b.html #gone',
        'b.html a.html#nowhere',
        'b.html c.html',
        'b.html ../README.md',
        'b.html https://cdn.example/x.js',
      ].sort(),
    );
  });
});

describe('the built site', () => {
  let out: string;
  let result: BuildResult;
  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'tap-site-'));
    result = await buildSite({ out, cases: FAKE_CASES });
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  const read = (p: string) => readFileSync(join(out, p), 'utf8');

  it('has no broken internal link or anchor and no external asset, the getting-started page included', () => {
    expect(result.report.broken).toEqual([]);
    expect(result.report.pages).toBeGreaterThan(40);
    expect(result.pages).toContain('getting-started.html');
  });

  it('has a page per message type with direction, replies, field tables and its fixtures', () => {
    const messages = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/messages.json'), 'utf8')).messages as Array<{
      type: string;
      replies: string[];
    }>;
    for (const m of messages) {
      const html = read(`messages/${m.type}.html`);
      expect(html).toContain('<dt>Direction</dt>');
      expect(html).toContain('id="payload"');
      for (const r of m.replies) expect(html).toContain(`href="${r}.html"`);
    }
    expect(read('messages/task.request.html')).toContain('id="example-echo"');
    expect(read('messages/task.request.html')).toMatch(/<dt>AsyncAPI<\/dt><dd>.*requestTaskRequest/);
    expect(read('messages/task.accepted.html')).toContain('requestTaskRequest</code> <span class="muted">(send, as a reply)');
  });

  it('renders every requirement in its chapter and in the index, linked to the cases that name it, and warns about bad case citations', () => {
    const index = read('requirements.html');
    for (const r of readSources(FAKE_CASES).requirements) {
      expect(index).toContain(`<tr id="${r.id}"`);
      expect(read(`spec/${r.chapter}.html`)).toContain(`id="${r.id}"`);
    }
    expect(index).toContain('href="cases.html#core.fake.two"');
    expect(result.warnings).toEqual([
      'case tasks.fake.three names TAP-NOPE-999, which is not in spec/1.0/requirements.json',
      'case tasks.fake.four cites tasks#no-such-section, which names no chapter or anchor of spec/1.0',
    ]);
    expect(read('cases.html')).toContain('<code>tasks#no-such-section</code> <span class="muted">(no such section in the spec)</span>');
  });

  it('has the error table, the state diagram and a search index that covers messages, errors and requirements', () => {
    expect(read('errors.html')).toContain('<tr id="UNKNOWN_TASK">');
    expect(read('states.html')).toContain('<svg xmlns="http://www.w3.org/2000/svg" class="state-diagram"');
    const docs = JSON.parse(read('assets/search-index.json')).docs as Array<{ t: string; k: string }>;
    expect(docs.some((d) => d.t === 'task.request' && d.k === 'Message')).toBe(true);
    expect(docs.some((d) => d.t === 'UNKNOWN_TASK')).toBe(true);
    expect(docs.some((d) => d.t === 'TAP-HS-001')).toBe(true);
    expect(read('assets/search-index.js')).toMatch(/^window\.TAP_SEARCH = \{/);
  });

  it('serves every schema file at the path of its $id, and the bundle and data tables beside them', () => {
    const dir = join(ROOT, 'schemas/v1');
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files).toContain('bundle.json');
    for (const f of files) {
      const text = readFileSync(join(dir, f), 'utf8');
      const id = (JSON.parse(text) as { $id?: string }).$id;
      if (f.endsWith('.schema.json') || f === 'bundle.json') expect(id).toBe(`https://schemas.tap-protocol.org/v1/${f}`);
      expect(read(id ? new URL(id).pathname.slice(1) : `v1/${f}`)).toBe(text);
    }
  });

  it('refuses to replace a folder that is not a site', async () => {
    const other = mkdtempSync(join(tmpdir(), 'tap-not-a-site-'));
    writeFileSync(join(other, 'precious.txt'), 'keep me');
    await expect(buildSite({ out: other, cases: FAKE_CASES })).rejects.toThrow(/holds no site/);
    expect(existsSync(join(other, 'precious.txt'))).toBe(true);
    rmSync(other, { recursive: true, force: true });
  }, 60_000);
});
