/**
 * The tarball checks of the documents an installed user has: the README's links and the names it
 * imports, the spec site the package ships (found and copied by tapctl site), and the spec links of
 * tap-conform's reports (the rules are in ./docs.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkSite, formatReport } from '../site/check-links.ts';
import { brokenDocLinks, markdownLinks, readmeImports, reportLinks, repositoryUrl } from './docs.ts';
import { type Check, ok, run, snapshot } from './run.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Quick cases of the reference agent that cite sections of six chapters, for a report with spec links. */
const QUICK_CASES = [
  'core.handshake.params-omitted',
  'core.handshake.version-unsupported',
  'core.handshake.ack-card',
  'core.envelope.target-star-elsewhere',
  'core.envelope.protocol-version',
  'core.version.major-refused',
  'core.limits.nesting',
  'core.limits.retention-per-principal',
  'core.errors.target-before-session',
  'core.errors.registry-retryable',
  'core.message.unknown-type',
];

export interface DocumentTarget {
  /** The installed package's folder. */
  pkg: string;
  /** The project it is installed in. */
  project: string;
  /** The path of an installed bin. */
  bin: (name: string) => string;
  /** package.json's `repository`. */
  repository: unknown;
}

/** The checks of the installed package's documents. */
export function documentChecks({ pkg, project, bin, repository }: DocumentTarget): Check[] {
  return [
    [
      "every link of the installed README resolves in the package, to the repository's files or to a well-known site",
      async () => {
        const repoUrl = repositoryUrl(repository);
        if (!repoUrl) throw new Error('package.json has no repository URL, so the README cannot link files the package does not ship');
        const readme = join(pkg, 'README.md');
        const broken = brokenDocLinks(readme, { pkg, repoUrl, repoRoot: ROOT });
        if (broken.length) throw new Error(`${broken.length} broken: ${broken.join('; ')}`);
        const text = readFileSync(readme, 'utf8');
        const imports = readmeImports(text);
        const probe = [...imports]
          .map(
            ([module, names], i) =>
              `import * as m${i} from '${module}';\nfor (const n of ${JSON.stringify([...names])}) if (!(n in m${i})) missing.push('${module}: ' + n);`,
          )
          .join('\n');
        writeFileSync(join(project, 'readme-imports.mjs'), `const missing = [];\n${probe}\nconsole.log(JSON.stringify(missing));\n`);
        const r = ok(await run(process.execPath, ['readme-imports.mjs'], { cwd: project }), 'node readme-imports.mjs');
        const missing = JSON.parse(r.stdout) as string[];
        if (missing.length) throw new Error(`the README imports names the package does not export: ${missing.join(', ')}`);
        const names = [...imports.values()].reduce((n, set) => n + set.size, 0);
        return `${markdownLinks(text).length} links resolve; the ${names} names it imports from ${imports.size} entry points are exported`;
      },
    ],
    [
      'tapctl site finds the shipped spec site and copies it, and every link of the copy resolves',
      async () => {
        const where = ok(await run(bin('tapctl'), ['site'], { cwd: project }), 'tapctl site').stdout.trim();
        if (where !== join(pkg, 'site', 'index.html')) throw new Error(`tapctl site printed "${where}"`);
        const copy = join(project, 'reports', 'spec');
        ok(await run(bin('tapctl'), ['site', copy], { cwd: project }), `tapctl site ${copy}`);
        const report = checkSite(copy);
        if (report.broken.length || report.pages < 40) throw new Error(formatReport(report));
        const shipped = snapshot(join(pkg, 'site')).size;
        const copied = snapshot(copy).size;
        if (copied !== shipped) throw new Error(`copied ${copied} of the ${shipped} files of the site`);
        return `${formatReport(report)}; ${copied} files copied`;
      },
    ],
    [
      "tap-conform's HTML and Markdown reports link into the shipped spec site by default",
      async () => {
        // The reference agent passes: the HTML report links every case to its spec section. An agent
        // that answers with a line that is not TAP fails: both reports link the failure's requirements.
        writeFileSync(
          join(project, 'not-tap.mjs'),
          "process.stdin.once('data', () => process.stdout.write('not TAP\\n'));\nprocess.stdin.resume();\n",
        );
        const runs: [string, string[], number][] = [
          ['passing', [...QUICK_CASES.flatMap((id) => ['--only', id]), '--', bin('tap-reference-agent')], 0],
          ['failing', ['--only', 'core.handshake.complete', '--timeout', '1000', '--', process.execPath, 'not-tap.mjs'], 1],
        ];
        const counts = new Map<string, number>();
        for (const [name, target, status] of runs) {
          const html = `reports/${name}.html`;
          const md = `reports/${name}.md`;
          const r = await run(bin('tap-conform'), ['--html', html, '--markdown', md, ...target], { cwd: project, timeoutMs: 120_000 });
          if (r.code !== status)
            throw new Error(`tap-conform on the ${name} agent exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
          if (/no site is built/.test(r.stderr)) throw new Error(`tap-conform found no spec site: ${r.stderr.trim()}`);
          for (const file of [html, md]) {
            const { links, broken } = reportLinks(join(project, file));
            const outside = links.filter((l) => !l.startsWith('../node_modules/tap-agent-protocol/site/'));
            if (outside.length) throw new Error(`${file}: links outside the shipped site: ${outside.slice(0, 3).join(', ')}`);
            if (broken.length) throw new Error(`${file}: ${broken.length} broken: ${broken.slice(0, 5).join('; ')}`);
            counts.set(file.slice('reports/'.length), links.length);
          }
        }
        const note = [...counts].map(([file, n]) => `${file} ${n}`).join(', ');
        if (counts.get('passing.html')! < QUICK_CASES.length || counts.get('failing.md')! < 2)
          throw new Error(`too few spec links to prove anything (${note})`);
        return `spec links, each resolving in the shipped site: ${note}`;
      },
    ],
  ];
}
