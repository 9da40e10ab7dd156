/** tapctl site: prints where the shipped spec site is, and copies it into a folder without ever overwriting another folder's files. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliError } from './registry.ts';
import { copySite, isSpecSite, siteSource } from './site.ts';
import { tapctl } from './tapctl.testkit.ts';

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'tapctl-site-'));
  made.push(d);
  return d;
}

/** A small stand-in for the built site: a home page, the stylesheet and one chapter. */
function fakeSite(): string {
  const dir = join(scratch(), 'site');
  mkdirSync(join(dir, 'assets'), { recursive: true });
  mkdirSync(join(dir, 'spec'));
  writeFileSync(join(dir, 'index.html'), '<title>TAP 1.1 specification · TAP 1.1</title>');
  writeFileSync(join(dir, 'assets', 'site.css'), 'body {}');
  writeFileSync(join(dir, 'spec', 'tasks.html'), '<h1 id="tasks">Tasks</h1>');
  return dir;
}

describe('tapctl site', () => {
  it('copies the site into a new folder, every file as it is', () => {
    const site = fakeSite();
    const to = join(scratch(), 'reports', 'spec');
    expect(copySite(site, to)).toBe(3);
    expect(readFileSync(join(to, 'spec', 'tasks.html'), 'utf8')).toBe('<h1 id="tasks">Tasks</h1>');
    expect(isSpecSite(to)).toBe(true);
  });

  it('knows a copy of the site of any version, and no other folder', () => {
    const dir = fakeSite();
    for (const [title, site] of [
      ['TAP 1.1 specification · TAP 1.1', true],
      ['TAP 1.0 specification · TAP 1.0', true],
      ['My notes · TAP', false],
      ['Home', false],
    ] as const) {
      writeFileSync(join(dir, 'index.html'), `<title>${title}</title>`);
      expect(isSpecSite(dir), title).toBe(site);
    }
  });

  it('replaces an earlier copy, leaving none of its old files', () => {
    const site = fakeSite();
    const to = join(scratch(), 'spec');
    copySite(site, to);
    writeFileSync(join(to, 'stale.html'), 'from an older version');
    copySite(site, to);
    expect(existsSync(join(to, 'stale.html'))).toBe(false);
    expect(readdirSync(to).sort()).toEqual(['assets', 'index.html', 'spec']);
  });

  it('refuses a folder that holds other files, and leaves them alone', () => {
    const site = fakeSite();
    const to = scratch();
    writeFileSync(join(to, 'index.html'), '<title>my own page</title>');
    expect(() => copySite(site, to)).toThrow(/is not empty and holds no copy of the spec site/);
    expect(readFileSync(join(to, 'index.html'), 'utf8')).toBe('<title>my own page</title>');
  });

  it('says how to build the site when there is none (a clone before npm run site)', () => {
    const nowhere = join(scratch(), 'site');
    let caught: unknown;
    try {
      siteSource(nowhere);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).message).toBe(`no spec site at ${nowhere}`);
    expect((caught as CliError).hint).toContain('npm run site');
    expect(() => copySite(nowhere, join(scratch(), 'to'))).toThrow(`no spec site at ${nowhere}`);
  });

  it('prints its help, and refuses a second folder as a usage error', async () => {
    const help = await tapctl('site', '--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: tapctl site [<dir>]');
    const two = await tapctl('site', 'a', 'b');
    expect(two.code).toBe(2);
    expect(two.err).toContain('unexpected argument "b"');
  });
});
