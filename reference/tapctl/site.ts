/**
 * `tapctl site [<dir>]`: the TAP spec site the package ships in site/ (the chapters of the current
 * version, 1.1, and of 1.0 under 1.0/ with its errata, the message catalogue, the error codes, the task states, the requirement index and the conformance
 * cases, with search; relative links only, so it works offline and from file://). Without a folder
 * it prints where the site is; with one it copies the site there, to publish it or to keep it
 * beside reports whose links point to it (tap-conform --spec-base-url).
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SPEC_SITE_DIR } from '../package.ts';
import { parseOptions } from './cli.ts';
import { CliError, type Command } from './registry.ts';

const HELP = `Usage: tapctl site [<dir>]

The TAP spec site this package ships: the specification (TAP 1.1, the current version, and
TAP 1.0 under 1.0/ with its errata), the message catalogue, the error codes, the task states,
the requirement index and the conformance cases, with search. It works offline and from file://; tap-conform's HTML and Markdown reports link into it by default.

  tapctl site          print the path of the site's index.html
  tapctl site <dir>    copy the site into <dir> (a new or empty folder, or an earlier copy,
                       which is replaced), to publish it or to keep it beside your reports

A report links to a copy with --spec-base-url: the copy's path from the report's folder, or the
URL it is published at. For reports that travel as a CI artefact:

  tapctl site reports/spec
  tap-conform --html reports/report.html --spec-base-url spec/ -- ./my-agent`;

/** Whether `dir` holds a copy of the spec site, of any version (its home page's title ends "· TAP <major>.<minor>"). */
export function isSpecSite(dir: string): boolean {
  const index = join(dir, 'index.html');
  return existsSync(index) && existsSync(join(dir, 'assets', 'site.css')) && /· TAP \d+\.\d+<\/title>/.test(readFileSync(index, 'utf8'));
}

/** The number of files under `dir`. */
function countFiles(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? countFiles(join(dir, e.name)) : 1), 0);
}

/** The built site, or a CliError saying how to get one. */
export function siteSource(from: string = SPEC_SITE_DIR): string {
  if (!isSpecSite(from))
    throw new CliError(`no spec site at ${from}`, {
      where: from,
      hint: 'The published package ships it; in a clone of the repository build it first with `npm run site`.',
      code: 'NO_SITE',
    });
  return from;
}

/**
 * Copies the site from `from` into `to`, replacing an earlier copy but never another folder's
 * files; resolves with the number of files copied.
 */
export function copySite(from: string, to: string): number {
  const source = siteSource(from);
  const target = resolve(to);
  if (target === resolve(source)) throw new CliError(`${to} is the shipped site itself`, { usage: true, hint: 'Give another folder.' });
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new CliError(`${to} is a file, not a folder`, { where: target, hint: 'Give a folder.' });
    if (readdirSync(target).length > 0) {
      if (!isSpecSite(target))
        throw new CliError(`${to} is not empty and holds no copy of the spec site`, {
          where: target,
          hint: 'Give a new or empty folder; tapctl site replaces only an earlier copy of the site.',
        });
      rmSync(target, { recursive: true, force: true });
    }
  }
  cpSync(source, target, { recursive: true });
  return countFiles(target);
}

export const siteCommand: Command = {
  name: 'site',
  summary: 'the spec site the package ships: print where it is, or copy it into a folder',
  help: HELP,
  async run(args, ctx) {
    const { values, positionals } = parseOptions(args, { help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      ctx.io.out(`${HELP}\n`);
      return 0;
    }
    if (positionals.length > 1) throw new CliError(`unexpected argument "${positionals[1]}"`, { usage: true });
    const [dir] = positionals;
    if (dir === undefined) {
      ctx.io.out(`${join(siteSource(), 'index.html')}\n`);
      return 0;
    }
    const files = copySite(SPEC_SITE_DIR, dir);
    const shown = relative(process.cwd(), resolve(dir)) || '.';
    ctx.io.out(
      `wrote the spec site (${files} files) to ${shown}; open ${join(shown, 'index.html')}\n` +
        `a report links to it with --spec-base-url <its path from the report's folder, or its URL>/ (tapctl site --help)\n`,
    );
    return 0;
  },
};
