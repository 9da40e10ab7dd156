/**
 * The spec site in a real browser: builds the site, serves it on 127.0.0.1, and drives Debian's
 * chromium (playwright-core) through the home page, a message page, the state diagram, the
 * navigation, the requirement index and search, the version switch between the current text
 * (1.1, at the root) and 1.0 (under 1.0/), failing on any console error, page error,
 * failed request or HTTP error. It also opens the site from file:// and on a phone-sized screen
 * (390 × 844), where the content must come first and the chapter list fold behind a button. Screenshots go to
 * test-output/screenshots/. Without /usr/bin/chromium the tests are skipped (CI installs it:
 * apt-get install -y chromium).
 */
import { CHROMIUM, lacks, needing } from './system-tools.testkit.ts';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildSite } from '../tools/site/build.ts';
import { ROOT, specVersions } from '../tools/site/sources.ts';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SHOTS = join(ROOT, 'test-output', 'screenshots');
/** The current version of the spec: the newest folder of spec/, published at the site's root. */
const CURRENT = specVersions().at(-1)!;
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
};

/** Serves a folder on 127.0.0.1 with an OS-chosen port. */
function serve(dir: string): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let file = normalize(join(dir, decodeURIComponent(url.pathname)));
    if (file !== dir && !file.startsWith(dir + sep)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.skipIf(lacks('chromium'))(needing('chromium', 'the spec site in chromium'), () => {
  let out: string;
  let profile: string;
  let server: Server;
  let base: string;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'tap-site-browser-'));
    const built = await buildSite({ out });
    expect(built.report.broken).toEqual([]);
    server = await serve(out);
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    profile = mkdtempSync(join(tmpdir(), 'tap-chromium-profile-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: ARGS,
      headless: true,
      viewport: { width: 1366, height: 900 },
    });
    context.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error on ${m.location().url}: ${m.text()}`);
    });
    context.on('weberror', (e) => problems.push(`page error: ${e.error().message}`));
    context.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
    context.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    page = context.pages()[0] ?? (await context.newPage());
    mkdirSync(SHOTS, { recursive: true });
  }, 180_000);

  afterEach(() => {
    const seen = problems.splice(0);
    expect(seen, 'console errors, page errors and failed requests').toEqual([]);
  });

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => server?.close(resolve));
    for (const d of [out, profile]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('opens the home page with its navigation and follows a card to the message catalogue', async () => {
    await page.goto(base);
    await expect(page.title()).resolves.toBe(`TAP ${CURRENT} specification · TAP ${CURRENT}`);
    expect(await page.locator('.sidebar a').count()).toBeGreaterThan(25);
    await page.screenshot({ path: join(SHOTS, 'home.png') });
    await page.click('a.card:has-text("Message catalogue")');
    await page.waitForURL(/messages\/index\.html$/);
    expect(await page.locator('table tbody tr').count()).toBe(
      JSON.parse(readFileSync(join(ROOT, 'schemas/v1/messages.json'), 'utf8')).messages.length,
    );
  });

  it('shows a message page: catalogue facts, field tables, examples, and links to its replies', async () => {
    await page.goto(`${base}messages/task.request.html`);
    await expect(page.locator('dl.facts').textContent()).resolves.toContain('requester → agent');
    expect(await page.locator('table.fields').count()).toBe(2);
    expect(await page.locator('pre.code').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'message-task.request.png') });
    await page.screenshot({ path: join(SHOTS, 'message-task.request-full.png'), fullPage: true });
    await page.click('dl.facts a:has-text("task.accepted")');
    await page.waitForURL(/messages\/task\.accepted\.html$/);
    await page.click('a[href$="schemas/index.html#envelope"] >> nth=0');
    await page.waitForURL(/schemas\/index\.html#envelope$/);
    await expect(page.locator('#envelope').isVisible()).resolves.toBe(true);
  });

  it('draws the task state diagram as SVG with every state and transition', async () => {
    await page.goto(`${base}states.html`);
    const table = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/task-states.json'), 'utf8'));
    expect(await page.locator('svg.state-diagram .sd-node').count()).toBe(table.states.length);
    expect(await page.locator('svg.state-diagram .sd-g').count()).toBe(table.transitions.length);
    expect(await page.locator('table tbody tr').count()).toBe(table.transitions.length);
    const box = await page.locator('svg.state-diagram').boundingBox();
    expect(box!.width).toBeGreaterThan(400);
    await page.locator('figure.diagram').screenshot({ path: join(SHOTS, 'task-states.png') });
  });

  it('follows every link of the sidebar', async () => {
    await page.goto(`${base}spec/tasks.html`);
    const hrefs = await page.locator('.sidebar a').evaluateAll((as) => as.map((a) => (a as unknown as { href: string }).href));
    for (const href of new Set(hrefs.map((h) => h.replace(/#.*$/, '')))) {
      const response = await page.goto(href);
      expect(response?.status(), href).toBe(200);
      await expect(page.locator('main h1').count()).resolves.toBe(1);
    }
  }, 120_000);

  it('follows every link of the sidebar of a 1.0 chapter', async () => {
    await page.goto(`${base}1.0/spec/tasks.html`);
    const hrefs = await page.locator('.sidebar a').evaluateAll((as) => as.map((a) => (a as unknown as { href: string }).href));
    expect(hrefs).toContain(`${base}1.0/spec/conventions.html`);
    expect(hrefs).toContain(`${base}1.0/requirements.html`);
    expect(hrefs).toContain(`${base}errata.html`);
    for (const href of new Set(hrefs.map((h) => h.replace(/#.*$/, '')))) {
      const response = await page.goto(href);
      expect(response?.status(), href).toBe(200);
      await expect(page.locator('main h1').count()).resolves.toBe(1);
    }
  }, 120_000);

  it(`switches versions: a ${CURRENT} chapter, the same chapter of 1.0 and back; 1.0's home page leads to its errata`, async () => {
    await page.goto(`${base}spec/tasks.html`);
    await expect(page.locator('[id="TAP-LIST-101"]').isVisible()).resolves.toBe(true);
    await expect(page.locator('.brand .version').textContent()).resolves.toBe(CURRENT);
    await page.click('.sidebar .versions a[data-version="1.0"]');
    await page.waitForURL(/\/1\.0\/spec\/tasks\.html$/);
    await expect(page.locator('.brand .version').textContent()).resolves.toBe('1.0');
    expect(await page.locator('[id="TAP-LIST-101"]').count()).toBe(0);
    await expect(page.locator('[id="TAP-TASK-004"]').isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(SHOTS, 'tasks-1.0.png') });
    await page.click(`.version-note a:has-text("this chapter in TAP ${CURRENT}")`);
    await page.waitForURL(/127\.0\.0\.1:\d+\/spec\/tasks\.html$/);
    await expect(page.locator('[id="TAP-LIST-101"]').isVisible()).resolves.toBe(true);

    await page.goto(`${base}1.0/index.html`);
    await page.click('.versions-box a:has-text("its errata")');
    await page.waitForURL(/\/errata\.html$/);
    await expect(page.locator('main h1').textContent()).resolves.toContain('Errata of TAP 1.0');
  });

  it(`reaches the changes page from the home page, and its requirement ids resolve to their sentences`, async () => {
    await page.goto(base);
    await page.click('a.card[href="spec/changes.html"]');
    await page.waitForURL(/\/spec\/changes\.html$/);
    await page.screenshot({ path: join(SHOTS, 'changes.png') });
    await page.click('a.code-ref:has-text("TAP-VER-101") >> nth=0');
    await page.waitForURL(/\/requirements\.html#TAP-VER-101$/);
    const row = page.locator('tr[id="TAP-VER-101"]');
    await expect(row.isVisible()).resolves.toBe(true);
    await expect(row.locator('.tag.since').textContent()).resolves.toBe(`since ${CURRENT}`);
    await row.locator('a.req-id').click();
    await page.waitForURL(/\/spec\/versioning\.html#TAP-VER-101$/);
    await expect(page.locator('[id="TAP-VER-101"]').isVisible()).resolves.toBe(true);
  });

  it('marks what 1.1 adds in the message catalogue and the error registry', async () => {
    await page.goto(`${base}messages/index.html`);
    await expect(page.locator('tr[id="task.list"] .tag.since').isVisible()).resolves.toBe(true);
    expect(await page.locator('tr[id="task.request"] .tag.since').count()).toBe(0);
    await page.goto(`${base}errors.html`);
    await expect(page.locator('tr[id="INVALID_CURSOR"] .tag.since').isVisible()).resolves.toBe(true);
    expect(await page.locator('tr[id="UNKNOWN_TASK"] .tag.since').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'errors.png') });
  });

  it('links a requirement badge in a chapter to its entry in the requirement index, which filters by level', async () => {
    await page.goto(`${base}spec/handshake.html`);
    const badge = page.locator('a.req-id').first();
    const id = await badge.getAttribute('id');
    await badge.click();
    await page.waitForURL(new RegExp(`requirements\\.html#${id}$`));
    await expect(page.locator(`tr[id="${id}"]`).isVisible()).resolves.toBe(true);
    await page.click('[data-filter="SHOULD"]');
    expect(await page.locator('table.requirements tr[data-level="MUST"]:visible').count()).toBe(0);
    expect(await page.locator('table.requirements tr[data-level="SHOULD"]:visible').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'requirements.png') });
  });

  it('searches: typing shows results, Enter opens the first, and a requirement id finds its sentence', async () => {
    await page.goto(base);
    await page.fill('#search-input', 'idempotency key');
    await page.waitForSelector('#search-results:not([hidden]) li a');
    expect(await page.locator('#search-results li a').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, 'search.png') });
    await page.press('#search-input', 'Enter');
    await page.waitForURL((u) => u.href !== base);

    await page.fill('#search-input', 'TAP-TASK-004');
    await page.waitForSelector('#search-results:not([hidden]) li a');
    await page.click('#search-results li a >> nth=0');
    await page.waitForURL(/spec\/tasks\.html#TAP-TASK-004$/);
    await expect(page.locator('[id="TAP-TASK-004"]').isVisible()).resolves.toBe(true);

    await page.fill('#search-input', 'TAP-LIST-101');
    await page.waitForSelector('#search-results:not([hidden]) li a');
    await page.click('#search-results li a >> nth=0');
    await page.waitForURL(/spec\/tasks\.html#TAP-LIST-101$/);
    await expect(page.locator('[id="TAP-LIST-101"]').isVisible()).resolves.toBe(true);

    await page.fill('#search-input', 'zzqqxx-nothing');
    await expect(page.locator('#search-results .empty').textContent()).resolves.toContain('No results');
  });

  it('on a 390 × 844 phone screen shows the content first, the chapter list folded behind a button that opens it', async () => {
    const phone = await context.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      for (const path of ['spec/tasks.html', 'index.html']) {
        await phone.goto(`${base}${path}`);
        const heading = await phone.locator('main h1').boundingBox();
        expect(heading, `${path}: main h1`).not.toBeNull();
        expect(heading!.y + heading!.height, `${path}: the bottom of the first heading, in px from the top`).toBeLessThan(844);
        await expect(phone.locator('.sidebar a[href$="errors.html"]').first().isVisible()).resolves.toBe(false);
        await phone.screenshot({ path: join(SHOTS, `phone-${path.replace(/\//g, '-').replace(/\.html$/, '')}.png`) });
      }
      const toggle = phone.locator('.sidebar button.nav-toggle');
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
      await toggle.click();
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('true');
      const errors = phone.locator('.sidebar a[href$="errors.html"]').first();
      await expect(errors.isVisible()).resolves.toBe(true);
      await phone.screenshot({ path: join(SHOTS, 'phone-navigation-open.png') });
      await errors.click();
      await phone.waitForURL(/errors\.html$/);
      const heading = await phone.locator('main h1').boundingBox();
      expect(heading!.y + heading!.height).toBeLessThan(844);
      // A section link of the page's own contents closes the list, so the section is what shows.
      await phone.goto(`${base}spec/tasks.html`);
      await toggle.click();
      const section = phone.locator('.sidebar .toc a').nth(1);
      const anchor = (await section.getAttribute('href'))!;
      await section.click();
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
      const target = await phone.locator(`[id="${anchor.slice(1)}"]`).boundingBox();
      expect(target!.y).toBeGreaterThanOrEqual(0);
      expect(target!.y).toBeLessThan(844);
    } finally {
      await phone.close();
    }
  });

  it('keeps the desktop layout: the chapter list open beside the content, no toggle', async () => {
    await page.goto(`${base}spec/tasks.html`);
    await expect(page.locator('.sidebar button.nav-toggle').isVisible()).resolves.toBe(false);
    const sidebar = (await page.locator('.sidebar').boundingBox())!;
    const heading = (await page.locator('main h1').boundingBox())!;
    expect(sidebar.x).toBe(0);
    expect(sidebar.width).toBeGreaterThan(200);
    expect(heading.x).toBeGreaterThan(sidebar.x + sidebar.width);
    expect(heading.y).toBeLessThan(200);
    await expect(page.locator('.sidebar a[href$="errors.html"]').first().isVisible()).resolves.toBe(true);
  });

  it('works from file:// as well: pages, styles and search', async () => {
    await page.goto(pathToFileURL(join(out, 'messages', 'ping.html')).href);
    // The stylesheet loaded: the header is sticky.
    const position = await page
      .locator('.site-header')
      .evaluate((e) => (globalThis as unknown as { getComputedStyle(x: unknown): { position: string } }).getComputedStyle(e).position);
    expect(position).toBe('sticky');
    await page.fill('#search-input', 'UNKNOWN_TASK');
    await page.waitForSelector('#search-results:not([hidden]) li a');
    await page.click('#search-results li a >> nth=0');
    await page.waitForURL(/errors\.html#UNKNOWN_TASK$/);
  });
});
