/**
 * The docs are tests: every fenced block of README.md and of the Getting Started page carries an
 * annotation, `<!-- test {...} -->` on the line before it, that either names the recipe it belongs
 * to or says why it is not run. A recipe's blocks run in document order, verbatim, in a fresh
 * folder where the packed package is installed — files written, shell blocks run with bash, one
 * process group each — as a user who follows the page would run them.
 *
 * Annotation members: `recipe` (its name), `file` (write the block to this file), `installs` (the
 * block installs the package: the harness has done it from the tarball), `expect` (text the
 * block's output must contain), `waitFor` (text to wait for in the output of what the block left
 * running in the background, before the next block: a person reads "ready" before going on),
 * `skip` (the reason the block is not run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The pages whose blocks are tests. */
export const DOCS = ['README.md', 'tools/site/content/getting-started.md'];

/** What an annotation says of its block. */
export interface Annotation {
  recipe?: string;
  file?: string;
  installs?: boolean;
  expect?: string;
  waitFor?: string;
  skip?: string;
}

/** A fenced block with where it stands and its annotation. */
export interface DocBlock {
  doc: string;
  line: number;
  lang: string;
  code: string;
  test?: Annotation;
}

const ANNOTATION = /^<!-- test (\{.*\}) -->$/;
const MEMBERS = new Set(['recipe', 'file', 'installs', 'expect', 'waitFor', 'skip']);

/** The fenced blocks of a Markdown text, each with the annotation on the line before its fence. */
export function docBlocks(doc: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${doc}:${i + 1}: a code fence that never closes`);
    const before = lines[i - 1] ?? '';
    const m = ANNOTATION.exec(before.trim());
    let test: Annotation | undefined;
    if (m) {
      try {
        test = JSON.parse(m[1]!) as Annotation;
      } catch (err) {
        throw new Error(`${doc}:${i}: the test annotation is not JSON: ${(err as Error).message}`);
      }
      const unknown = Object.keys(test).filter((k) => !MEMBERS.has(k));
      if (unknown.length) throw new Error(`${doc}:${i}: unknown annotation members ${unknown.join(', ')}`);
    }
    blocks.push({ doc, line: i + 1, lang: open[1] ?? '', code: `${lines.slice(i + 1, end).join('\n')}\n`, ...(test ? { test } : {}) });
    i = end;
  }
  return blocks;
}

/** The blocks of every page of DOCS. */
export function allBlocks(root = ROOT): DocBlock[] {
  return DOCS.flatMap((doc) => docBlocks(doc, readFileSync(join(root, doc), 'utf8')));
}

/** A recipe: its steps in order, from the first page that has it. */
export interface Recipe {
  name: string;
  steps: DocBlock[];
}

/**
 * The recipes of the blocks; throws naming every block without an annotation, with a recipe and a
 * skip at once, or a file it cannot write, and every recipe two pages give differently.
 */
export function recipesOf(blocks: DocBlock[]): Recipe[] {
  const problems: string[] = [];
  const byDoc = new Map<string, Map<string, DocBlock[]>>();
  for (const b of blocks) {
    const where = `${b.doc}:${b.line}`;
    if (!b.test) problems.push(`${where}: a \`\`\`${b.lang} block without a test annotation (a recipe, or a skip with its reason)`);
    else if (b.test.recipe && b.test.skip) problems.push(`${where}: a block is in a recipe or skipped, not both`);
    else if (!b.test.recipe && !b.test.skip) problems.push(`${where}: the annotation names no recipe and gives no skip reason`);
    else if (b.test.file && (b.test.file.includes('/') || b.test.file.startsWith('.')))
      problems.push(`${where}: file ${b.test.file} is not a plain name`);
    if (!b.test?.recipe) continue;
    const recipes = byDoc.get(b.doc) ?? new Map<string, DocBlock[]>();
    byDoc.set(b.doc, recipes);
    recipes.set(b.test.recipe, [...(recipes.get(b.test.recipe) ?? []), b]);
  }
  const out = new Map<string, Recipe>();
  const same = (a: DocBlock[], b: DocBlock[]) =>
    a.length === b.length && a.every((x, i) => x.code === b[i]!.code && JSON.stringify(x.test) === JSON.stringify(b[i]!.test));
  for (const recipes of byDoc.values()) {
    for (const [name, steps] of recipes) {
      const seen = out.get(name);
      if (!seen) out.set(name, { name, steps });
      else if (!same(seen.steps, steps))
        problems.push(`recipe "${name}" differs between ${seen.steps[0]!.doc} and ${steps[0]!.doc}: give the same blocks in both`);
    }
  }
  if (problems.length) throw new Error(problems.join('\n'));
  return [...out.values()];
}

/** The outcome of one recipe. */
export interface RecipeRun {
  ok: boolean;
  /** The lines worth showing: each step, its time, and the level lines of certifications. */
  lines: string[];
}

/** A running shell step: its process group, the output so far, and its exit. */
interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function shell(script: string, cwd: string, env: NodeJS.ProcessEnv): Running {
  // Its own process group (detached): what the block leaves running in the background is stopped with it.
  const child = spawn('bash', ['-e', '-c', script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    child.on('error', () => resolve(127));
  });
  return { child, output: () => output, exited };
}

function until(check: () => boolean, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const started = Date.now();
    const tick = setInterval(() => {
      if (check() || Date.now() - started > ms) {
        clearInterval(tick);
        resolve(check());
      }
    }, 50);
  });
}

/** Stops a step's process group: SIGTERM, then SIGKILL after `graceMs`. */
async function stopGroup(r: Running, graceMs = 5000): Promise<void> {
  const pid = r.child.pid;
  if (pid === undefined) return;
  const alive = (): boolean => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {}
  if (!(await until(() => !alive(), graceMs))) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
}

const STEP_TIMEOUT_MS = 300_000;
const WAIT_FOR_MS = 60_000;

/** The lines of a step's output that say what a certification reached. */
const levelLines = (output: string): string[] => output.split('\n').filter((l) => /^(Level: |tap-conform: )/.test(l));

/**
 * The failed cases of a certification's output, each with the lines that explain it (what was
 * observed, the rule, what was expected): a failed step's last lines hold only the summary.
 */
export function failedCases(output: string): string[] {
  const lines = output.split('\n');
  const out: string[] = [];
  lines.forEach((line, i) => {
    if (!/^ {2}(FAIL|ERROR) +\S/.test(line)) return;
    out.push(line.trim());
    for (let j = i + 1; j < lines.length && j <= i + 4 && /^ {6}\S/.test(lines[j]!); j++) out.push(`  ${lines[j]!.trim()}`);
  });
  return out;
}

/**
 * Runs a recipe in a fresh folder whose node_modules is the installed project's: files written,
 * shell steps run in turn (the environment a step exports carries to the next, as in one
 * terminal), everything stopped at the end.
 */
export async function runRecipe(recipe: Recipe, project: string, log: (line: string) => void = () => {}): Promise<RecipeRun> {
  const dir = mkdtempSync(join(tmpdir(), `tap-docs-${recipe.name}-`));
  symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'));
  const envFile = join(dir, '.env.sh');
  writeFileSync(envFile, '');
  // The user's environment, without anything of this run's own TAP_* settings.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP_') && k !== 'NO_COLOR'));
  // What a step puts in the temporary folder (the README's `nats-server -sd "$(mktemp -d)"`)
  // goes with the recipe's folder.
  env.TMPDIR = join(dir, 'tmp');
  mkdirSync(env.TMPDIR);
  const running: Running[] = [];
  const lines: string[] = [];
  let ok = true;
  try {
    for (const step of recipe.steps) {
      const where = `${relative(ROOT, join(ROOT, step.doc))}:${step.line}`;
      const t = step.test!;
      if (t.installs) {
        lines.push(`  ${where} installs the package: done from the tarball`);
        continue;
      }
      if (t.file) {
        writeFileSync(join(dir, t.file), step.code);
        continue;
      }
      const started = Date.now();
      log(`docs: recipe ${recipe.name}, ${where}`);
      // As in one terminal: what the steps before exported is there; what this one exports goes on.
      const r = shell(`source ${JSON.stringify(envFile)}\n${step.code}\nexport -p > ${JSON.stringify(envFile)}\n`, dir, env);
      running.push(r);
      const code = await Promise.race([
        r.exited,
        new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), STEP_TIMEOUT_MS).unref()),
      ]);
      const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
      const tail = () => [...failedCases(r.output()), ...r.output().trim().split('\n').slice(-12)].join('\n      ');
      if (code !== 0) {
        lines.push(
          `  FAIL ${where}: ${code === 'timeout' ? `still running after ${STEP_TIMEOUT_MS / 1000} s` : `exit ${code}`} (${took})\n      ${tail()}`,
        );
        ok = false;
        break;
      }
      if (t.waitFor && !(await until(() => r.output().includes(t.waitFor!), WAIT_FOR_MS))) {
        lines.push(`  FAIL ${where}: "${t.waitFor}" never appeared in its output within ${WAIT_FOR_MS / 1000} s\n      ${tail()}`);
        ok = false;
        break;
      }
      if (t.expect && !r.output().includes(t.expect)) {
        lines.push(`  FAIL ${where}: its output lacks "${t.expect}"\n      ${tail()}`);
        ok = false;
        break;
      }
      const levels = levelLines(r.output()).filter((l) => l.startsWith('Level: '));
      lines.push(`  ok   ${where} (${took})${levels.length ? ` — ${levels.join('; ')}` : ''}`);
    }
  } finally {
    await Promise.all(running.map((r) => stopGroup(r)));
    rmSync(dir, { recursive: true, force: true });
  }
  return { ok, lines };
}
