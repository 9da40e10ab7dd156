/**
 * The errata section of CHANGELOG.md, generated from spec/1.0/errata.json between two markers so
 * that the list has one source: written by tools/check-errata.ts --write, checked without it.
 */
import type { Erratum } from '../../conformance/errata.ts';

export const BEGIN = '<!-- errata: generated from spec/1.0/errata.json by npx tsx tools/check-errata.ts --write; do not edit -->';
export const END = '<!-- errata: end -->';

/** The section between the markers (markers excluded): one line per erratum, oldest first. */
export function changelogSection(errata: readonly Erratum[]): string {
  const lines = [
    `${errata.length} normative changes to TAP 1.0 since its first text of 2026-11-29, oldest first; the protocol string stays \`tap/1.0\`. [spec/1.0/errata.json](spec/1.0/errata.json) is their source (each with its requirements, their sentences, why and the cases that check it), and \`tap-conform\` names the erratum a failed case falls under.`,
    '',
    ...errata.map((e) => `- **${e.id}** (${e.date}, ${e.kind}: ${e.requirements.join(', ')}): ${e.summary}`),
  ];
  return lines.join('\n');
}

/** Where the markers are, or why they cannot be used. */
function markers(changelog: string): { from: number; to: number } | string {
  const from = changelog.indexOf(BEGIN);
  const to = changelog.indexOf(END);
  if (from === -1 || to === -1 || to < from)
    return `CHANGELOG.md has no errata section: put the lines\n${BEGIN}\n${END}\nunder a heading of the release, then run npx tsx tools/check-errata.ts --write`;
  if (changelog.indexOf(BEGIN, from + 1) !== -1) return 'CHANGELOG.md has two errata sections: keep one pair of markers';
  return { from: from + BEGIN.length, to };
}

/** The changelog with its errata section written from the errata. */
export function withChangelogSection(changelog: string, errata: readonly Erratum[]): string {
  const m = markers(changelog);
  if (typeof m === 'string') throw new Error(m);
  return `${changelog.slice(0, m.from)}\n${changelogSection(errata)}\n${changelog.slice(m.to)}`;
}

/** What is wrong with the changelog's errata: a section out of date, or an erratum id the list does not have. */
export function changelogProblems(changelog: string, errata: readonly Erratum[]): string[] {
  const m = markers(changelog);
  if (typeof m === 'string') return [m];
  const out: string[] = [];
  if (changelog.slice(m.from, m.to) !== `\n${changelogSection(errata)}\n`)
    out.push('the errata section of CHANGELOG.md is out of date with spec/1.0/errata.json: run npx tsx tools/check-errata.ts --write');
  const known = new Set(errata.map((e) => e.id));
  const unknown = [...new Set([...changelog.matchAll(/\bE1-[a-z0-9]+(?:-[a-z0-9]+)*/g)].map((x) => x[0]))].filter((id) => !known.has(id));
  for (const id of unknown)
    out.push(`CHANGELOG.md names erratum ${id}, which spec/1.0/errata.json does not have: fix the id or add the erratum`);
  return out;
}
