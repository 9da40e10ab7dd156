/**
 * tap-conform tells an agent which errata of 1.0 it fails: the in-memory reference agent, broken the
 * way the first 1.0 text required (a fatal UNSUPPORTED_VERSION for a stray minor version, which
 * erratum E1-ver-stray-minor forbids) and in a rule of the first text (a gap in a task's stream),
 * runs the cases of both rules; the text, Markdown, HTML and JSON reports name the erratum of the
 * first failure only, and count one of two failures under errata.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RawTransport } from '../../reference/transports/transport.ts';
import type { Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { errataOf, errataSummary, failsErratum, loadErrata } from '../errata.ts';
import { renderHtml } from '../report/html.ts';
import { renderJson } from '../report/json.ts';
import { md, renderMarkdown } from '../report/markdown.ts';
import { buildReport, type Report } from '../report/model.ts';
import { renderSummary } from '../report/terminal.ts';
import { type CaseResult, runCases } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

afterAll(stopMemoryAgents);

const STRAY_MINOR = 'core.version.after-ack';
const STREAM = 'tasks.lifecycle.echo';
const cases = [STRAY_MINOR, STREAM].map((id): Case => {
  const c = ALL_CASES.find((x) => x.id === id);
  if (!c) throw new Error(`no case ${id}`);
  return c;
});

/** As the first text required: every UNSUPPORTED_VERSION fatal. And a sequence number skipped before every task.result. */
const brokenAsBefore = (t: RawTransport): RawTransport => {
  const send = t.send.bind(t);
  t.send = async (text: string) => {
    const m = JSON.parse(text) as { type: string; sequence?: number; payload?: { code?: string; fatal?: boolean } };
    if (m.type === 'error' && m.payload?.code === 'UNSUPPORTED_VERSION')
      return send(JSON.stringify({ ...m, payload: { ...m.payload, fatal: true } }));
    if (m.type === 'task.result' && m.sequence) return send(JSON.stringify({ ...m, sequence: m.sequence + 1 }));
    return send(text);
  };
  return t;
};

async function reportOf(wrap?: (t: RawTransport) => RawTransport): Promise<Report> {
  const env = await memoryEnv(memoryTarget(wrap), { debug: false });
  const results = await runCases(cases, env, 2, 1);
  return buildReport({
    version: '0.0.0',
    target: 'memory://reference',
    transport: 'websocket',
    seed: 1,
    startedAt: new Date('2026-12-05T00:00:00Z'),
    durationMs: 10,
    levelTarget: 'may',
    profiles: ['core', 'tasks'],
    allProfiles: ['core', 'tasks'],
    results,
  });
}

describe('errata in the reports of tap-conform (spec: conformance#traceability)', () => {
  const erratum = loadErrata().find((e) => e.id === 'E1-ver-stray-minor')!;
  const line = `fails erratum E1-ver-stray-minor of 2026-12-01: ${erratum.summary}`;

  it('names the erratum a failed case falls under, and counts the failures under errata', { timeout: 30_000 }, async () => {
    const report = await reportOf(brokenAsBefore);
    const [stray, stream] = [STRAY_MINOR, STREAM].map((id) => report.cases.find((c) => c.id === id)!);
    expect([stray!.verdict, stream!.verdict]).toEqual(['FAIL', 'FAIL']);
    expect(stray!.errata).toEqual([{ id: 'E1-ver-stray-minor', date: '2026-12-01', summary: erratum.summary }]);
    expect(stream!.errata).toBeUndefined();
    const summary = '1 of 2 failures is an erratum of 1.0 since its first text: an agent certified before it may fail here';
    expect(report.errata).toEqual({ failures: 2, under_errata: 1, summary });

    const text = renderSummary(report, (_style, t) => t);
    expect(text).toContain(`      ${line}`);
    expect(text.split(line)).toHaveLength(2);
    expect(text).toContain(`\n${summary}\n`);

    const markdown = renderMarkdown(report, { specBaseUrl: 'https://tap.example/' });
    expect(markdown).toContain(`- **Erratum** [E1-ver-stray-minor](https://tap.example/errata.html#E1-ver-stray-minor): ${md(line)}`);
    expect(markdown).toContain(`> **Errata:** ${summary} ([errata of 1.0](https://tap.example/errata.html))`);

    const html = renderHtml(report, { specBaseUrl: 'https://tap.example/' });
    const block = html.slice(html.indexOf(`<section class="case" id="${STRAY_MINOR}">`)).split('</section>')[0]!;
    expect(block).toContain(
      `<p class="erratum"><a href="https://tap.example/errata.html#E1-ver-stray-minor"><code>E1-ver-stray-minor</code></a> ${line.replace(/'/g, '&#39;')}</p>`,
    );
    expect(html.slice(html.indexOf(`<section class="case" id="${STREAM}">`)).split('</section>')[0]).not.toContain('class="erratum"');
    expect(html).toContain(`<b>Errata:</b> ${summary}`);

    const json = JSON.parse(renderJson(report)) as Report;
    expect(json.errata).toEqual({ failures: 2, under_errata: 1, summary });
    expect(json.cases.find((c) => c.id === STRAY_MINOR)!.errata).toEqual([
      { date: '2026-12-01', id: 'E1-ver-stray-minor', summary: erratum.summary },
    ]);
  });

  it("names no erratum when the agent passes the erratum's case", { timeout: 30_000 }, async () => {
    const report = await reportOf();
    expect(report.cases.map((c) => c.verdict)).toEqual(['PASS', 'PASS']);
    expect(report.errata).toBeUndefined();
    expect(report.cases.every((c) => c.errata === undefined)).toBe(true);
    expect(renderSummary(report, (_style, t) => t)).not.toContain('erratum');
  });

  it("finds every erratum among a case's requirements, oldest first, and words the count for one or many", () => {
    // TAP-NATS-007 was added with the NATS binding and changed by a later erratum: both apply.
    expect(errataOf(['TAP-NATS-007', 'TAP-HS-001']).map((e) => e.id)).toEqual(['E1-nats-binding', 'E1-nats-gap-skips-refused']);
    expect(errataOf(['TAP-HS-001'])).toEqual([]);
    expect(failsErratum({ id: 'E1-x', date: '2026-12-04', summary: 'It is so.' })).toBe('fails erratum E1-x of 2026-12-04: It is so.');
    expect(errataSummary(0, 11)).toBeNull();
    expect(errataSummary(3, 11)).toBe(
      '3 of 11 failures are errata of 1.0 since its first text: an agent certified before them may fail here',
    );
    expect(errataSummary(1, 1)).toBe('1 failure is an erratum of 1.0 since its first text: an agent certified before it may fail here');
  });
});

describe('certification to the first text of 1.0 (spec/1.0/errata.json)', () => {
  const result = (id: string, verdict: 'PASS' | 'FAIL', requirements: string[]): CaseResult => ({
    id,
    title: id,
    level: 'MUST',
    profile: 'core',
    spec: 'limits#nesting',
    requirement: requirements[0]!,
    requirements,
    quote: '',
    verdict,
    detail: verdict === 'FAIL' ? 'broke' : 'ok',
    duration_ms: 1,
    violations: [],
    transcript: [],
    replay: '',
  });
  const report = (results: CaseResult[], specVersion?: string) =>
    buildReport({
      version: '0.0.0',
      target: 'python3 agent.py',
      transport: 'stdio',
      seed: 1,
      startedAt: new Date('2026-12-05T00:00:00Z'),
      durationMs: 10,
      levelTarget: 'may',
      profiles: ['core'],
      allProfiles: ['core'],
      allBindings: ['stdio'],
      results,
      ...(specVersion ? { specVersion } : {}),
    });

  it('certifies an agent that fails only cases of rules errata added, to the first text, naming those errata', () => {
    const r = report([result('a', 'PASS', ['TAP-HS-001']), result('core.limits.nesting', 'FAIL', ['TAP-LIM-013', 'TAP-LIM-015'])]);
    expect(r.certified).toBe(true);
    expect(r.first_text_only).toEqual(['core.limits.nesting']);
    expect(r.level).toBe('TAP 1.0 Certified to its first text, over stdio — fails 1 erratum of 1.0 since its first text (E1-lim-nesting)');
  });

  it('certifies nobody who fails a rule of the first text, nor a 1.1 agent that fails an erratum (1.1 includes them)', () => {
    expect(report([result('core.handshake.init', 'FAIL', ['TAP-HS-001'])]).level).toBe('Not certified');
    const amendedIn11 = report([result('core.limits.nesting', 'FAIL', ['TAP-LIM-013'])], '1.1');
    expect([amendedIn11.certified, amendedIn11.first_text_only]).toEqual([false, undefined]);
  });

  it('names no erratum of 1.0 beside the failures of a 1.1 run: they speak to agents certified to 1.0 as first written', () => {
    const r = report([result('core.limits.nesting', 'FAIL', ['TAP-LIM-013', 'TAP-LIM-015'])], '1.1');
    expect([r.errata, r.cases[0]!.errata]).toEqual([undefined, undefined]);
    expect(report([result('core.limits.nesting', 'FAIL', ['TAP-LIM-013'])], '1.0').cases[0]!.errata?.map((e) => e.id)).toEqual([
      'E1-lim-nesting',
    ]);
  });
});
