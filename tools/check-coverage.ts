/**
 * Requirement coverage of the conformance suite (spec: conformance#traceability): every MUST of
 * spec/1.0/requirements.json needs at least one case of tap-conform, or an entry in
 * conformance/untestable.json ({ id, reason }) saying why no case can test it from outside.
 * Fails (exit 1) listing what is uncovered, and on cases or entries that name unknown ids.
 * With --verbose it also prints the covered requirements and the cases that cover each.
 */
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Case } from '../conformance/case.ts';
import { ALL_CASES } from '../conformance/cases/index.ts';
import { repoPath } from '../conformance/paths.ts';

interface Requirement {
  id: string;
  level: 'MUST' | 'SHOULD' | 'MAY';
  anchor: string;
  text: string;
}

interface Untestable {
  id: string;
  reason: string;
}

export interface CoverageReport {
  uncovered: Requirement[];
  unknownInCases: { case: string; id: string }[];
  unknownUntestable: string[];
  emptyReasons: string[];
  coveredBy: Map<string, string[]>;
  untestable: Map<string, string>;
  total: { must: number; covered: number; untestable: number };
}

/** Every case the suite has: the message-protocol cases and, when present, the workspace cases. */
export async function allCases(): Promise<readonly Case[]> {
  const workspace = repoPath('conformance/workspace/cases/index.ts');
  if (!existsSync(workspace)) return ALL_CASES;
  const mod = (await import(pathToFileURL(workspace).href)) as Record<string, unknown>;
  const extra = Object.values(mod).find((v): v is Case[] => Array.isArray(v) && v.every((c) => typeof (c as Case)?.id === 'string'));
  return extra ? [...ALL_CASES, ...extra] : ALL_CASES;
}

/** Compares the requirement index with the cases and the untestable list. */
export function coverage(requirements: readonly Requirement[], cases: readonly Case[], untestable: readonly Untestable[]): CoverageReport {
  const known = new Set(requirements.map((r) => r.id));
  const coveredBy = new Map<string, string[]>();
  const unknownInCases: { case: string; id: string }[] = [];
  for (const c of cases) {
    for (const id of c.requirements) {
      if (!known.has(id)) unknownInCases.push({ case: c.id, id });
      else coveredBy.set(id, [...(coveredBy.get(id) ?? []), c.id]);
    }
  }
  const excused = new Map(untestable.map((u) => [u.id, u.reason]));
  const musts = requirements.filter((r) => r.level === 'MUST');
  return {
    uncovered: musts.filter((r) => !coveredBy.has(r.id) && !excused.has(r.id)),
    unknownInCases,
    unknownUntestable: untestable.filter((u) => !known.has(u.id)).map((u) => u.id),
    emptyReasons: untestable.filter((u) => !u.reason || u.reason.trim().length < 10).map((u) => u.id),
    coveredBy,
    untestable: excused,
    total: {
      must: musts.length,
      covered: musts.filter((r) => coveredBy.has(r.id)).length,
      untestable: musts.filter((r) => !coveredBy.has(r.id) && excused.has(r.id)).length,
    },
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { verbose: { type: 'boolean', short: 'v' } } });
  // 1.0's requirements and those 1.1 adds (spec: versioning#tap-1-1).
  const requirements = ['spec/1.0/requirements.json', 'spec/1.1/requirements.json']
    .filter((file) => existsSync(repoPath(file)))
    .flatMap((file) => (JSON.parse(readFileSync(repoPath(file), 'utf8')) as { requirements: Requirement[] }).requirements);
  const untestableFile = repoPath('conformance/untestable.json');
  const untestable = existsSync(untestableFile) ? (JSON.parse(readFileSync(untestableFile, 'utf8')) as Untestable[]) : [];
  const r = coverage(requirements, await allCases(), untestable);
  const out: string[] = [];
  if (values.verbose) {
    for (const req of requirements) {
      const by = r.coveredBy.get(req.id);
      out.push(
        `${req.id} ${req.level.padEnd(6)} ${by ? by.join(', ') : r.untestable.has(req.id) ? `untestable: ${r.untestable.get(req.id)}` : '—'}`,
      );
    }
  }
  for (const u of r.uncovered) out.push(`uncovered MUST ${u.id} (${u.anchor}): ${u.text}`);
  for (const u of r.unknownInCases)
    out.push(`case ${u.case} names ${u.id}, which neither spec/1.0/requirements.json nor spec/1.1/requirements.json defines`);
  for (const id of r.unknownUntestable)
    out.push(`conformance/untestable.json names ${id}, which neither spec/1.0/requirements.json nor spec/1.1/requirements.json defines`);
  for (const id of r.emptyReasons) out.push(`conformance/untestable.json gives no real reason for ${id}`);
  const bad = r.uncovered.length + r.unknownInCases.length + r.unknownUntestable.length + r.emptyReasons.length;
  out.push(
    `${r.total.must} MUST requirements: ${r.total.covered} covered by cases, ${r.total.untestable} declared untestable, ${r.uncovered.length} uncovered` +
      (bad ? ` — add a case to conformance/cases/ or a { id, reason } to conformance/untestable.json` : ''),
  );
  (bad ? process.stderr : process.stdout).write(`${out.join('\n')}\n`);
  return bad ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main();
}
