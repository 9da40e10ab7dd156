/**
 * The JUnit XML report: one <testsuite> per profile, one <testcase> per case. FAIL and
 * NOT-TESTED are <failure>, ERROR is <error>, SKIPPED and UNIMPLEMENTED are <skipped>;
 * NON-STRICT passes with a note in <system-out>.
 */
import type { Report, ReportCase } from './model.ts';
import { escapeMarkup, plainTranscript } from './text.ts';

/** Escapes text for XML character data and attribute values; drops characters XML 1.0 forbids. */
export function xmlEscape(text: string): string {
  return escapeMarkup(text.replace(/[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '\ufffd'));
}

function body(c: ReportCase): string {
  const lines = [c.detail];
  if (c.quote) lines.push(`Requirement ${c.requirements.join(', ')} (${c.spec}): ${c.quote}`);
  if (c.expected !== undefined) lines.push(`Expected: ${c.expected}`);
  if (c.observed !== undefined) lines.push(`Observed: ${c.observed}`);
  lines.push(`Replay: ${c.replay}`);
  if (c.transcript?.length) lines.push('', 'Wire transcript:', plainTranscript(c.transcript));
  return lines.join('\n');
}

function testcase(c: ReportCase): string {
  const attrs = `classname="${xmlEscape(`tap-conform.${c.profile}`)}" name="${xmlEscape(`${c.id} [${c.level}] ${c.title}`)}" time="${(c.duration_ms / 1000).toFixed(3)}"`;
  const msg = xmlEscape(`${c.verdict}: ${c.detail}`);
  switch (c.verdict) {
    case 'FAIL':
    case 'NOT-TESTED':
      return `    <testcase ${attrs}>\n      <failure message="${msg}" type="${c.verdict}">${xmlEscape(body(c))}</failure>\n    </testcase>`;
    case 'ERROR':
      return `    <testcase ${attrs}>\n      <error message="${msg}" type="ERROR">${xmlEscape(body(c))}</error>\n    </testcase>`;
    case 'SKIPPED':
    case 'UNIMPLEMENTED':
      return `    <testcase ${attrs}>\n      <skipped message="${msg}"/>\n    </testcase>`;
    case 'NON-STRICT':
      return `    <testcase ${attrs}>\n      <system-out>${xmlEscape(body(c))}</system-out>\n    </testcase>`;
    default:
      return `    <testcase ${attrs}/>`;
  }
}

/** The report as JUnit XML. */
export function renderJunit(report: Report): string {
  const profiles = [...new Set(report.cases.map((c) => c.profile))];
  const suites = profiles.map((p) => {
    const cases = report.cases.filter((c) => c.profile === p);
    const n = (vs: string[]) => cases.filter((c) => vs.includes(c.verdict)).length;
    const time = cases.reduce((s, c) => s + c.duration_ms, 0) / 1000;
    return [
      `  <testsuite name="${xmlEscape(p)}" tests="${cases.length}" failures="${n(['FAIL', 'NOT-TESTED'])}" errors="${n(['ERROR'])}" skipped="${n(['SKIPPED', 'UNIMPLEMENTED'])}" time="${time.toFixed(3)}">`,
      ...cases.map(testcase),
      '  </testsuite>',
    ].join('\n');
  });
  const s = report.summary;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlEscape(`tap-conform ${report.version}: ${report.target} (${report.level})`)}" tests="${s.total}" failures="${s.FAIL + s['NOT-TESTED']}" errors="${s.ERROR}" skipped="${s.SKIPPED + s.UNIMPLEMENTED}" time="${(report.duration_ms / 1000).toFixed(3)}">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}
