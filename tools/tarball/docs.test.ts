/** The document checks of the tarball test: README links, report links and README imports (tools/tarball/docs.ts). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokenDocLinks, headingSlug, markdownLinks, readmeImports, reportLinks, repositoryUrl } from './docs.ts';

const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const REPO = 'https://github.com/tap-protocol/tap';

describe('markdownLinks', () => {
  it('finds inline links, images, reference definitions and HTML links, but nothing inside code', () => {
    const text = [
      'See [the spec](spec/1.0/index.md#overview "title") and ![logo](img/logo.svg).',
      '[ref]: https://nodejs.org/en',
      '<a href="site/index.html">site</a>',
      'Not `[a](code.md)`, nor:',
      '```md',
      '[b](fenced.md)',
      '```',
      '[`tap-agent-protocol/workspace`](reference/workspace/README.md)',
    ].join('\n');
    expect(markdownLinks(text)).toEqual([
      'spec/1.0/index.md#overview',
      'img/logo.svg',
      'reference/workspace/README.md',
      'https://nodejs.org/en',
      'site/index.html',
    ]);
  });

  it("gives a heading GitHub's anchor", () => {
    expect(headingSlug('The mesh: routing, fail-over and one trace')).toBe('the-mesh-routing-fail-over-and-one-trace');
    expect(headingSlug('Use it as a `library`')).toBe('use-it-as-a-library');
  });
});

describe('brokenDocLinks', () => {
  let pkg: string;
  beforeAll(() => {
    pkg = mkdtempSync(join(tmpdir(), 'tap-docs-'));
    mkdirSync(join(pkg, 'spec'));
    writeFileSync(join(pkg, 'spec', 'tasks.md'), '# Tasks {#tasks}\n\n## Cancellation {#cancellation}\n');
    mkdirSync(join(pkg, 'site'));
    writeFileSync(join(pkg, 'site', 'index.html'), '<h1 id="top">TAP</h1>');
  });
  afterAll(() => rmSync(pkg, { recursive: true, force: true }));

  const check = (markdown: string) => {
    writeFileSync(join(pkg, 'README.md'), markdown);
    return brokenDocLinks(join(pkg, 'README.md'), { pkg, repoUrl: REPO, repoRoot: ROOT });
  };

  it('accepts files and anchors of the package, headings of the README, the repository and well-known sites', () => {
    expect(
      check(
        [
          '# Title',
          '## Spec site',
          '[a](spec/tasks.md#cancellation) [b](spec/) [c](site/index.html#top) [d](#spec-site)',
          `[e](${REPO}/blob/main/bench/README.md) [f](${REPO}/tree/main/reference) [g](${REPO}/issues) [h](https://www.rfc-editor.org/rfc/rfc8785)`,
        ].join('\n'),
      ),
    ).toEqual([]);
  });

  it('names each link the installed user could not follow, and why', () => {
    expect(
      check(
        [
          '# Title',
          '[a](reference/client/README.md) [b](spec/tasks.md#nowhere) [c](../outside.md) [d](#no-such-heading)',
          `[e](${REPO}/blob/main/no/such/file.md) [f](${REPO}/blob/main/reference) [g](https://example.com/x) [h](${REPO}/blob/main/site/index.html)`,
        ].join('\n'),
      ),
    ).toEqual([
      'README.md: reference/client/README.md — the package has no reference/client/README.md (ship it in package.json "files", or link the repository\'s copy)',
      'README.md: spec/tasks.md#nowhere — spec/tasks.md has no anchor "nowhere"',
      'README.md: ../outside.md — leads outside the package',
      'README.md: #no-such-heading — no heading of README.md has this anchor',
      `README.md: ${REPO}/blob/main/no/such/file.md — no/such/file.md is not a file of the repository (not tracked by git in ${ROOT})`,
      `README.md: ${REPO}/blob/main/reference — reference is a folder: link it with /tree/`,
      `README.md: https://example.com/x — neither the repository (${REPO}) nor a well-known site (WELL_KNOWN_HOSTS)`,
      `README.md: ${REPO}/blob/main/site/index.html — site/index.html is not a file of the repository (not tracked by git in ${ROOT})`,
    ]);
  });

  it("reads the repository's address from package.json", () => {
    expect(repositoryUrl({ type: 'git', url: 'git+https://github.com/tap-protocol/tap.git' })).toBe(REPO);
    expect(repositoryUrl(undefined)).toBeUndefined();
  });
});

describe('reportLinks', () => {
  it('checks the relative links of a report against the files and ids they name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-report-links-'));
    mkdirSync(join(dir, 'site', 'spec'), { recursive: true });
    writeFileSync(join(dir, 'site', 'spec', 'tasks.html'), '<h2 id="cancellation">Cancellation</h2>');
    writeFileSync(
      join(dir, 'report.html'),
      '<a href="#case">in page</a><a href="https://tap.example/">out</a><a href="site/spec/tasks.html#cancellation">ok</a><a href="site/spec/tasks.html#gone">bad id</a><a href="site/errors.html">no file</a>',
    );
    const { links, broken } = reportLinks(join(dir, 'report.html'));
    rmSync(dir, { recursive: true, force: true });
    expect(links).toEqual(['site/spec/tasks.html#cancellation', 'site/spec/tasks.html#gone', 'site/errors.html']);
    expect(broken).toEqual([
      `site/spec/tasks.html#gone — ${join(dir, 'site/spec/tasks.html')} has no id "gone"`,
      `site/errors.html — no file ${join(dir, 'site/errors.html')}`,
    ]);
  });
});

describe('readmeImports', () => {
  it('collects the names imported in code and named "from" a package entry point in prose, types left out', () => {
    const text = [
      "import { createAgent, type TaskContext, withConformanceCapabilities } from 'tap-agent-protocol/agent';",
      'and `openRegistry(nc)` from `tap-agent-protocol/mesh` reads; `connectMesh(url, { agentId })` from',
      '`tap-agent-protocol/mesh` gives',
    ].join('\n');
    expect(Object.fromEntries([...readmeImports(text)].map(([m, names]) => [m, [...names]]))).toEqual({
      'tap-agent-protocol/agent': ['createAgent', 'withConformanceCapabilities'],
      'tap-agent-protocol/mesh': ['openRegistry', 'connectMesh'],
    });
  });
});
