/**
 * Hints: one line when several failures share one cause, so that a person fixes the cause once
 * instead of reading the same failure ten times (see conformance/INTERPRETING.md).
 */
import type { Report, ReportCase } from './model.ts';
import { count } from './model.ts';

/** A hint and the cases it explains. */
export interface Hint {
  text: string;
  cases: string[];
}

/** A detail with its ids, numbers and quoted values blanked, so that equal causes compare equal. */
export function causeOf(detail: string): string {
  return detail
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\b[a-z]{2}-[a-z0-9]{6,}-\d+\b/gi, '<id>')
    .replace(/\d+(\.\d+)?/g, '<n>')
    .trim();
}

const failed = (c: ReportCase) => c.verdict === 'FAIL' || c.verdict === 'ERROR';

/** The hints of a report, most specific first; a case is explained by one hint at most. */
export function hintsOf(report: Pick<Report, 'cases' | 'transport'>): Hint[] {
  const hints: Hint[] = [];
  const explained = new Set<string>();
  const integrity = report.cases.filter((c) => c.profile === 'integrity' && c.verdict !== 'SKIPPED' && c.verdict !== 'UNIMPLEMENTED');
  const integrityFailed = integrity.filter(failed);
  if (integrityFailed.length >= 2 && integrityFailed.length === integrity.length) {
    const how =
      report.transport === 'stdio'
        ? 'the harness starts the agent with TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER in its environment: does the agent read them and accept the key they name?'
        : 'start the agent with TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER and run tap-conform with the same three set (or pass them as --hmac-key-id, --hmac-key and --hmac-peer)';
    hints.push({
      text: `every integrity case fails (${integrityFailed.length}), most likely for one reason: ${how} (spec: conformance#key-provisioning)`,
      cases: integrityFailed.map((c) => c.id),
    });
    for (const c of integrityFailed) explained.add(c.id);
  }
  // A signed handshake the agent calls wrongly signed: the two hold keys of one id and other bytes.
  const otherKey = report.cases.filter(
    (c) => failed(c) && !explained.has(c.id) && /refused the handshake: error INVALID_SIGNATURE/.test(c.detail),
  );
  if (otherKey.length >= 1) {
    hints.push({
      text: `the agent refused tap-conform's signed handshake as wrongly signed in ${count(otherKey.length, 'case')}: most likely it holds a key of that id with other bytes (else it checks signatures wrongly); give the agent and tap-conform the same TAP_HMAC_KEY (or --hmac-key) (spec: conformance#key-provisioning)`,
      cases: otherKey.map((c) => c.id),
    });
    for (const c of otherKey) explained.add(c.id);
  }
  const untested = report.cases.filter((c) => c.verdict === 'NOT-TESTED' && /does not offer the conformance capability/.test(c.detail));
  if (untested.length >= 2) {
    const how =
      report.transport === 'stdio'
        ? 'tap-conform started it with TAP_CONFORMANCE=1: an agent built on tap-agent-protocol offers them then (or give withConformanceCapabilities); any other agent should offer them when that variable is set'
        : 'start the agent with TAP_CONFORMANCE=1 in its environment (an agent built on tap-agent-protocol then offers them), or offer them another way when it runs for testing';
    hints.push({
      text: `${untested.length} cases were not tested because the agent offers no conformance capabilities tap.test.*: ${how} (spec: conformance#test-capabilities)`,
      cases: untested.map((c) => c.id),
    });
  }
  const byCause = new Map<string, ReportCase[]>();
  for (const c of report.cases) {
    if (!failed(c) || explained.has(c.id)) continue;
    const key = causeOf(c.detail);
    byCause.set(key, [...(byCause.get(key) ?? []), c]);
  }
  for (const group of byCause.values()) {
    if (group.length < 3) continue;
    hints.push({
      text: `${count(group.length, 'case')} fail the same way (“${group[0]!.detail.slice(0, 160)}”): probably one cause; fix it and rerun`,
      cases: group.map((c) => c.id),
    });
  }
  return hints;
}
