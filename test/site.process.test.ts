/**
 * The spec site: Markdown rendering (anchors, requirement badges, RFC 2119 keywords), the
 * requirement → case links, field tables that follow $refs, the state diagram layout, the link
 * check and a whole build, its errata page included, and the versions it publishes: the newest
 * folder of spec/ (1.1) as the current text at the root, each older one (1.0) under <version>/
 * (the getting-started agent is certified by the docs step from the tarball).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSite, type BuildResult } from '../tools/site/build.ts';
import { checkSite } from '../tools/site/check-links.ts';
import { SiteContext } from '../tools/site/context.ts';
import { fieldRows } from '../tools/site/fields.ts';
import { errataPage } from '../tools/site/page-errata.ts';
import { renderMarkdown, type RenderContext } from '../tools/site/markdown.ts';
import { coverage, linkRequirements, type CaseRef } from '../tools/site/requirement-links.ts';
import { loadCases, readEditions, readSources, ROOT, specVersions } from '../tools/site/sources.ts';
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
    const current = specVersions().at(-1)!;
    expect(result.warnings).toEqual([
      `case tasks.fake.three names TAP-NOPE-999, which is not a requirement of TAP ${current} (${specVersions()
        .map((v) => `spec/${v}/requirements.json`)
        .join(' + ')})`,
      `case tasks.fake.four cites tasks#no-such-section, which names no chapter or anchor of spec/${current}`,
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

  it('renders the errata page from errata.json, linked from the 1.0 index and from each requirement an erratum names', () => {
    const errata = JSON.parse(readFileSync(join(ROOT, 'spec/1.0/errata.json'), 'utf8')).errata as Array<{
      id: string;
      requirements: string[];
    }>;
    const page = read('errata.html');
    const index = read('requirements.html');
    expect(read('1.0/index.html')).toMatch(/<a href="\.\.\/errata\.html">errata<\/a>/);
    expect(read('index.html')).toContain('<a href="errata.html">its errata</a>');
    expect(page).toContain('<h2 id="first-text">');
    for (const e of errata) {
      expect(page).toContain(`<h2 id="${e.id}">`);
      for (const r of e.requirements) {
        const row = index.slice(index.indexOf(`<tr id="${r}"`)).split('</tr>')[0];
        expect(row).toContain(`erratum <a href="errata.html#${e.id}">${e.id}</a>`);
      }
    }
    // A requirement of the first text that an erratum changed shows what it read before.
    const shut = page.slice(page.indexOf('<h2 id="E1-shut-plan-rejection">'));
    expect(shut).toContain(
      'Before (the first text): From the start of the sequence, the agent MUST answer with SHUTTING_DOWN, marked retryable, every task.request that would create a task and every plan.decision that passes',
    );
    // A case the site does not list is named, not linked; one it lists is linked.
    const stray = (html: string) => html.slice(html.indexOf('<h2 id="E1-ver-stray-minor">')).split('</section>')[0]!;
    expect(stray(page)).toContain('Checked by</strong> <code>core.version.after-ack</code>');
    const listed: CaseRef = {
      id: 'core.version.after-ack',
      title: 'Stray minor',
      level: 'MUST',
      profile: 'core',
      spec: 'versioning#stray-minor',
      requirements: ['TAP-VER-040'],
    };
    const withCase = errataPage(new SiteContext(readSources([...FAKE_CASES, listed]))).body;
    expect(stray(withCase)).toContain(
      'Checked by</strong> <a class="case-link" href="cases.html#core.version.after-ack"><code>core.version.after-ack</code></a>',
    );
    // The list itself ships beside the page.
    expect(read('spec/errata.json')).toBe(readFileSync(join(ROOT, 'spec/1.0/errata.json'), 'utf8'));
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

describe('the versions the site publishes (spec: versioning#tap-1-1)', () => {
  const versions = specVersions();
  const current = versions.at(-1)!;
  const older = versions.slice(0, -1);
  /** The requirements each version adds, from its own requirements.json (1.0's lists all of its own). */
  const added = (v: string) =>
    (
      JSON.parse(readFileSync(join(ROOT, 'spec', v, 'requirements.json'), 'utf8')) as {
        requirements: Array<{ id: string; chapter: string }>;
      }
    ).requirements;
  const chapters = (v: string) =>
    readdirSync(join(ROOT, 'spec', v))
      .filter((f) => f.endsWith('.md') && f !== 'index.md')
      .map((f) => f.slice(0, -3));
  // A case of 1.1: it names a requirement 1.1 adds and cites a section only 1.1 has.
  const listCase: CaseRef = {
    id: 'core.fake.list',
    title: 'Lists',
    level: 'MUST',
    profile: 'core',
    spec: 'tasks#listing',
    requirements: ['TAP-LIST-101'],
  };
  let out: string;
  let result: BuildResult;
  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'tap-site-versions-'));
    result = await buildSite({ out, cases: [listCase] });
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  const read = (p: string) => readFileSync(join(out, p), 'utf8');

  it('finds the versions under spec/: 1.0 and, as the current one, 1.1 or later', () => {
    expect(versions[0]).toBe('1.0');
    expect(older.length).toBeGreaterThan(0);
    expect(current).not.toBe('1.0');
    expect(result.report.broken).toEqual([]);
    expect(result.warnings).toEqual([]);
  });

  it('publishes every chapter of the current version at the root and of each older one under <version>/', () => {
    for (const name of chapters(current)) expect(result.pages, `spec/${current}/${name}.md`).toContain(`spec/${name}.html`);
    for (const v of older) {
      expect(result.pages).toContain(`${v}/index.html`);
      expect(result.pages).toContain(`${v}/requirements.html`);
      for (const name of chapters(v)) expect(result.pages, `spec/${v}/${name}.md`).toContain(`${v}/spec/${name}.html`);
    }
    expect(read('index.html')).toContain(`<title>TAP ${current} specification · TAP ${current}</title>`);
    expect(read('1.0/index.html')).toContain('<title>TAP 1.0 specification · TAP 1.0</title>');
  });

  it('knows every id the current version adds: its sentence is an anchor of its chapter, and the index lists it since that version', () => {
    const ids = added(current);
    expect(ids.map((r) => r.id)).toEqual(expect.arrayContaining(['TAP-LIST-101', 'TAP-VER-101']));
    const index = read('requirements.html');
    const docs = JSON.parse(read('assets/search-index.json')).docs as Array<{ t: string; u: string }>;
    for (const r of ids) {
      expect(read(`spec/${r.chapter}.html`)).toContain(`id="${r.id}" href="../requirements.html#${r.id}"`);
      const row = index.slice(index.indexOf(`<tr id="${r.id}"`)).split('</tr>')[0]!;
      expect(row, r.id).toContain(`data-since="${current}"`);
      expect(row).toContain(`href="spec/${r.chapter}.html#${r.id}"`);
      expect(row).toContain(`since ${current}</span>`);
      expect(docs.some((d) => d.t === r.id && d.u === `spec/${r.chapter}.html#${r.id}`)).toBe(true);
      // An older version has not got it.
      for (const v of older) {
        expect(read(`${v}/requirements.html`)).not.toContain(`id="${r.id}"`);
        if (existsSync(join(out, v, 'spec', `${r.chapter}.html`)))
          expect(read(`${v}/spec/${r.chapter}.html`)).not.toContain(`id="${r.id}"`);
      }
    }
    // Every requirement of 1.0 holds in the current index, and a case of the current version links to its id.
    for (const r of added('1.0')) expect(index).toContain(`<tr id="${r.id}"`);
    expect(index.slice(index.indexOf('<tr id="TAP-LIST-101"')).split('</tr>')[0]).toContain('href="cases.html#core.fake.list"');
    expect(read('cases.html')).toContain('<a href="spec/tasks.html#listing"><code>tasks#listing</code></a>');
  });

  it('links the changes page from the home page and every page of the current version, and each version to the others', () => {
    expect(read('spec/changes.html')).toContain('<h1 id="changes">');
    expect(read('index.html')).toContain('<a class="card" href="spec/changes.html">');
    expect(read('spec/tasks.html')).toContain('<a href="changes.html">');
    // The version switch: on a chapter, the same chapter in each version; on the home page, each home page.
    expect(read('index.html')).toContain('<a href="1.0/index.html" data-version="1.0">TAP 1.0</a>');
    expect(read('spec/tasks.html')).toContain('<a href="../1.0/spec/tasks.html" data-version="1.0">TAP 1.0</a>');
    const old = read('1.0/spec/tasks.html');
    expect(old).toContain(
      `<a href="../../spec/tasks.html" data-version="${current}">TAP ${current} <span class="muted">(current)</span></a>`,
    );
    expect(old).toContain(`The current version is TAP ${current}: read <a href="../../spec/tasks.html">this chapter in TAP ${current}</a>`);
    expect(old).toContain('<a href="../requirements.html">Requirement index</a>');
    expect(old).toContain('<a href="../../errata.html">Errata of 1.0</a>');
    // The requirement index of 1.0 is 1.0's, with its errata.
    expect(read('1.0/requirements.html')).toContain(`All ${added('1.0').length} requirements of TAP 1.0`);
    expect(read('1.0/requirements.html')).toContain('erratum <a href="../errata.html#');
  });

  it('marks the message types and error codes a later version adds, from "since" in schemas/v1', () => {
    const messages = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/messages.json'), 'utf8')).messages as Array<{
      type: string;
      since?: string;
    }>;
    const codes = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/error-codes.json'), 'utf8')).codes as Array<{
      code: string;
      since?: string;
    }>;
    expect(messages.filter((m) => m.since).map((m) => m.type)).toEqual(expect.arrayContaining(['task.list', 'task.page']));
    expect(codes.filter((c) => c.since).map((c) => c.code)).toEqual(expect.arrayContaining(['INVALID_CURSOR', 'CAPABILITY_FAILED']));
    const catalogue = read('messages/index.html');
    for (const m of messages) {
      const row = catalogue.slice(catalogue.indexOf(`<tr id="${m.type}"`)).split('</tr>')[0]!;
      if (m.since) {
        expect(row, m.type).toContain(`since ${m.since}</span>`);
        expect(read(`messages/${m.type}.html`)).toContain(`<dt>Since</dt><dd>TAP ${m.since}`);
      } else expect(row, m.type).not.toContain('class="tag since"');
    }
    const registry = read('errors.html');
    for (const c of codes) {
      const row = registry.slice(registry.indexOf(`<tr id="${c.code}"`)).split('</tr>')[0]!;
      if (c.since) expect(row, c.code).toContain(`since ${c.since}</span>`);
      else expect(row, c.code).not.toContain('class="tag since"');
    }
  });

  it('the real conformance cases name only requirements and cite only sections the current version has', async () => {
    const ctx = new SiteContext(readSources(await loadCases()));
    expect(ctx.links.unknown).toEqual([]);
    expect(ctx.sources.cases.filter((c) => !ctx.citeExists(c.spec)).map((c) => `${c.id} → ${c.spec}`)).toEqual([]);
  }, 120_000);
});

describe('reading the versions of spec/', () => {
  // A copy of spec/ beside links to the rest of the repository, which the chapters link to.
  let dir: string;
  let root: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tap-spec-versions-'));
    root = join(dir, 'spec');
    for (const v of specVersions()) cpSync(join(ROOT, 'spec', v), join(root, v), { recursive: true });
    for (const entry of readdirSync(ROOT)) if (entry !== 'spec' && entry !== '.git') symlinkSync(join(ROOT, entry), join(dir, entry));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes whatever requirements a version states and indexes at build time, and names an id its index lacks', () => {
    const v = specVersions().at(-1)!;
    const file = join(root, v, 'requirements.json');
    const index = JSON.parse(readFileSync(file, 'utf8')) as { requirements: Array<Record<string, string>> };
    const last = Math.max(...index.requirements.filter((r) => r.area === 'LIST').map((r) => Number(r.id!.slice(-3))));
    const id = `TAP-LIST-${last + 1}`;
    const text = `An agent MUST keep the order of a listing across pages.`;
    const chapter = join(root, v, 'tasks.md');
    writeFileSync(chapter, `${readFileSync(chapter, 'utf8')}\n## Listing order {#listing-order}\n\n**[${id}]** ${text}\n`);

    // Stated but not indexed yet: the site names it.
    expect(readEditions(root)[0]!.unindexed).toEqual([id]);

    index.requirements.push({ id, level: 'MUST', area: 'LIST', chapter: 'tasks', anchor: 'tasks#listing-order', text, since: v });
    writeFileSync(file, JSON.stringify(index));
    const [now, ...before] = readEditions(root);
    expect(now!.version).toBe(v);
    expect(now!.current).toBe(true);
    expect(now!.unindexed).toEqual([]);
    const req = now!.requirements.find((r) => r.id === id);
    expect(req).toMatchObject({ chapter: 'tasks', since: v });
    // Listed with its chapter's other requirements, in the order of the requirement parser.
    expect(now!.requirements.filter((r) => r.chapter === 'tasks').map((r) => r.id)).toContain(id);
    for (const e of before) {
      expect(e.prefix).toBe(`${e.version}/`);
      expect(e.requirements.some((r) => r.id === id)).toBe(false);
    }
  });
});
