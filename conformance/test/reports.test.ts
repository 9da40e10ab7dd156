import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESTART_UNDECLARED } from '../case.ts';
import { NO_KEY } from '../cases/nats-durable/bindings-nats.signed-records.ts';
import { checkBaseline, readBaseline, unexpectedFailures } from '../report/baseline.ts';
import { renderBadge } from '../report/badge.ts';
import { failureCounts } from '../report/finish.ts';
import { renderHtml } from '../report/html.ts';
import { renderJson } from '../report/json.ts';
import { renderJunit } from '../report/junit.ts';
import { hintsOf } from '../report/hints.ts';
import { missingSpecSite } from '../report/links.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { buildReport, count, notPerfect, profileVerdict } from '../report/model.ts';
import { progressLine, renderSummary } from '../report/terminal.ts';
import { CONTROL_CHARS } from '../report/text.ts';
import type { CaseResult } from '../runner.ts';
import type { Verdict } from '../verdict.ts';

function result(id: string, verdict: Verdict, level: 'MUST' | 'SHOULD' | 'MAY' = 'MUST', profile = 'core'): CaseResult {
  return {
    id,
    title: `case ${id} <&> "quoted"`,
    level,
    profile,
    spec: 'handshake#init',
    requirement: 'TAP-HS-001',
    requirements: ['TAP-HS-001'],
    quote: 'A requester MUST send handshake.init before any other message of a session except ping.',
    verdict,
    detail: `detail of ${id}`,
    expected: 'handshake.ack',
    observed: 'error <PROTOCOL_VIOLATION>',
    duration_ms: 12,
    violations: verdict === 'FAIL' ? ['agent: the agent wrote a non-protocol line to stdout: "hi"'] : [],
    transcript: [
      { t: 1, conn: 1, dir: 'out', text: '{"type":"handshake.init"}', bytes: 25, type: 'handshake.init' },
      {
        t: 5,
        conn: 1,
        dir: 'in',
        text: '{"type":"error","x":"</pre><script>alert(1)</script>"}',
        bytes: 40,
        type: 'error',
        flags: ['agent fault: bad'],
      },
      { t: 6, conn: 1, dir: 'stderr', text: 'log line \u0001' },
    ],
    replay: `tap-conform --seed 1 --only ${id} ./agent`,
  };
}

const results = [
  result('a.pass', 'PASS'),
  result('a.fail', 'FAIL'),
  result('a.nonstrict', 'NON-STRICT', 'SHOULD'),
  result('b.skip', 'SKIPPED', 'MUST', 'tasks'),
  result('b.unimpl', 'UNIMPLEMENTED', 'MAY', 'tasks'),
  result('b.nottested', 'NOT-TESTED', 'MUST', 'tasks'),
  result('b.error', 'ERROR', 'MUST', 'tasks'),
];

const report = buildReport({
  version: '0.1.0',
  target: './agent',
  transport: 'stdio',
  agent: { agent_id: 'agent-x', name: 'X' },
  seed: 42,
  startedAt: new Date('2025-03-14T09:00:00Z'),
  durationMs: 1234,
  levelTarget: 'may',
  profiles: ['core', 'tasks'],
  allProfiles: ['core', 'tasks'],
  results,
});

/** A small XML parser: enough to prove the JUnit output is well formed and to read it back. */
type El = { name: string; attrs: Record<string, string>; children: El[]; text: string };
function parseXml(xml: string): El {
  const root: El = { name: '#root', attrs: {}, children: [], text: '' };
  const stack = [root];
  const re = /<\?[^>]*\?>|<!--[\s\S]*?-->|<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/g;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(xml))) {
    if (m.index !== at) throw new Error(`unparsable XML at ${at}: ${xml.slice(at, at + 40)}`);
    at = re.lastIndex;
    if (m[5] !== undefined) {
      if (m[5].includes('&') && /&(?!amp;|lt;|gt;|quot;|apos;)/.test(m[5])) throw new Error('a bare & in text');
      stack[stack.length - 1]!.text += m[5];
      continue;
    }
    if (!m[2]) continue;
    if (m[1]) {
      const open = stack.pop()!;
      if (open.name !== m[2]) throw new Error(`</${m[2]}> closes <${open.name}>`);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (m[3] ?? '').matchAll(/([\w:.-]+)="([^"]*)"/g)) attrs[a[1]!] = a[2]!;
    const el: El = { name: m[2], attrs, children: [], text: '' };
    stack[stack.length - 1]!.children.push(el);
    if (!m[4]) stack.push(el);
  }
  if (at !== xml.length || stack.length !== 1) throw new Error('unbalanced XML');
  return root;
}

describe('the report model (spec: conformance#verdicts)', () => {
  it('judges a profile FAIL before ERROR before NOT-TESTED before NON-STRICT', () => {
    expect(
      profileVerdict([
        { verdict: 'ERROR', level: 'MUST' },
        { verdict: 'FAIL', level: 'MUST' },
      ]),
    ).toBe('FAIL');
    expect(
      profileVerdict([
        { verdict: 'NOT-TESTED', level: 'MUST' },
        { verdict: 'ERROR', level: 'MUST' },
      ]),
    ).toBe('ERROR');
    expect(
      profileVerdict([
        { verdict: 'NOT-TESTED', level: 'MUST' },
        { verdict: 'NON-STRICT', level: 'SHOULD' },
      ]),
    ).toBe('NOT-TESTED');
    expect(
      profileVerdict([
        { verdict: 'PASS', level: 'MUST' },
        { verdict: 'NON-STRICT', level: 'SHOULD' },
      ]),
    ).toBe('NON-STRICT');
    expect(profileVerdict([{ verdict: 'UNIMPLEMENTED', level: 'MUST' }])).toBe('UNIMPLEMENTED');
    expect(
      profileVerdict([
        { verdict: 'PASS', level: 'MUST' },
        { verdict: 'SKIPPED', level: 'MUST' },
      ]),
    ).toBe('PASS');
  });

  it('certifies only without FAIL, ERROR or an untested MUST, and strictly only without NON-STRICT', () => {
    expect(report.certified).toBe(false);
    expect(report.level).toBe('Not certified');
    const ok = buildReport({
      ...{
        version: '1',
        target: 't',
        transport: 'stdio',
        seed: 1,
        startedAt: new Date(),
        durationMs: 1,
        levelTarget: 'may',
        profiles: ['core'],
        allProfiles: ['core'],
      },
      results: [result('x', 'PASS'), result('y', 'NON-STRICT', 'SHOULD')],
    });
    expect(ok.certified).toBe(true);
    expect(ok.strict).toBe(false);
    expect(ok.level).toBe('TAP 1.0 Certified, non-strict, over stdio — WebSocket not tested; NATS not tested');
  });
});

const base = {
  version: '1',
  target: './agent',
  transport: 'stdio' as const,
  seed: 1,
  startedAt: new Date('2025-03-14T09:00:00Z'),
  durationMs: 1,
  levelTarget: 'may' as const,
  profiles: ['core', 'tasks', 'plans'],
  allProfiles: ['core', 'tasks', 'plans'],
};

describe('certification cannot mislead (spec: conformance#verdicts)', () => {
  it('the final line counts each verdict apart, and says a SHOULD case counts only at a strict level', () => {
    const failures = [
      { id: 'core.a', verdict: 'FAIL', level: 'MUST' },
      { id: 'core.b', verdict: 'FAIL', level: 'MUST' },
      { id: 'plans.c', verdict: 'NON-STRICT', level: 'SHOULD' },
    ];
    expect(failureCounts(failures, 'may')).toBe(
      '3 cases did not pass: 2 FAIL (core.a, core.b), 1 NON-STRICT (plans.c); 1 of them is a SHOULD case, counted because --level may judges strictly (--level must does not)',
    );
    expect(failureCounts([{ id: 'x.e', verdict: 'ERROR', level: 'MUST' }], 'must')).toBe(
      '1 case did not pass: 1 ERROR (x.e; harness errors, rerun with --debug)',
    );
  });

  const partial = buildReport({
    ...base,
    results: [result('core.one', 'PASS')],
    suiteCases: 224,
    filters: { profiles: [], level: 'may', only: ['core.one'] },
  });

  it('a filtered run is partial, never certified, and says so in its level, its JSON and its badge', () => {
    expect(partial.certified).toBe(false);
    expect(partial.strict).toBe(false);
    expect(partial.partial).toBe(true);
    expect(partial.level).toBe('Focused run: 1 of 224 cases — a certification needs the whole suite');
    const json = JSON.parse(renderJson(partial));
    expect(json).toMatchObject({ certified: false, partial: true, scope: { cases: 1, of: 224, only: ['core.one'] } });
    const svg = renderBadge(partial);
    expect(svg).toContain('>partial<');
    expect(svg).not.toContain('certified<');
    expect(renderSummary(partial, (_s, x) => x)).toContain('Level: Focused run: 1 of 224 cases — a certification needs the whole suite');
    expect(renderHtml(partial, { specBaseUrl: '' })).toContain('Focused run: 1 of 224 cases — a certification needs the whole suite');
    expect(renderMarkdown(partial, { specBaseUrl: '' })).toContain('Focused run: 1 of 224 cases — a certification needs the whole suite');
  });

  it('a run that skips cases is partial and names what it skipped', () => {
    const skipped = buildReport({
      ...base,
      results: [result('core.one', 'PASS')],
      suiteCases: 224,
      filters: { profiles: [], level: 'may', only: [], skip: ['core.limits.*'] },
    });
    expect(skipped).toMatchObject({ certified: false, partial: true, scope: { cases: 1, of: 224, skip: ['core.limits.*'] } });
    expect(renderSummary(skipped, (_s, x) => x)).toContain('--skip core.limits.*');
  });

  it('a run of the whole suite names its binding and what it did not cover', () => {
    const whole = buildReport({
      ...base,
      results: [
        result('core.one', 'PASS'),
        result('tasks.one', 'PASS', 'MUST', 'tasks'),
        result('plans.one', 'UNIMPLEMENTED', 'MUST', 'plans'),
      ],
      suiteCases: 3,
    });
    expect(whole.partial).toBe(false);
    expect(whole.certified).toBe(true);
    expect(whole.level).toBe('TAP 1.0 Certified over stdio — plans not offered; WebSocket not tested; NATS not tested');
    expect(whole.not_covered).toEqual(['plans not offered', 'WebSocket not tested', 'NATS not tested']);
    expect(renderBadge(whole)).toContain('>certified<');
    // The summary names the profile as the level line does; its cases keep their verdict.
    const summary = renderSummary(whole, (_s, x) => x);
    expect(summary).toMatch(/^not offered {3}plans {2}1 UNIMPLEMENTED$/m);
    expect(summary).not.toMatch(/^UNIMPLEMENTED +plans/m);
  });

  it('words the fixed reasons a level line puts in brackets without brackets of their own', () => {
    for (const why of [RESTART_UNDECLARED, NO_KEY.detail]) expect(why).not.toMatch(/[()]/);
  });

  it('keeps a reason made of runtime text inside the one pair of brackets of the level line', () => {
    const odd = { ...result('tasks.odd', 'UNIMPLEMENTED', 'MUST', 'tasks'), detail: 'the server said (code 10077)\nstream not found' };
    const r = buildReport({
      ...base,
      results: [result('core.one', 'PASS'), result('tasks.one', 'PASS', 'MUST', 'tasks'), odd],
      suiteCases: 3,
    });
    expect(r.not_covered?.[0]).toBe('1 case UNIMPLEMENTED (the server said [code 10077] stream not found)');
    expect(r.level).toMatch(/— 1 case UNIMPLEMENTED \([^()]*\);/);
  });

  it('names, by reason, the other cases a certification did not cover, in one pair of brackets', () => {
    const restart = {
      ...result('tasks.restart', 'UNIMPLEMENTED', 'MUST', 'tasks'),
      detail: RESTART_UNDECLARED,
    };
    const r = buildReport({
      ...base,
      results: [result('core.one', 'PASS'), result('tasks.one', 'PASS', 'MUST', 'tasks'), restart],
      suiteCases: 3,
    });
    expect(r.not_covered).toEqual([`1 case UNIMPLEMENTED (${RESTART_UNDECLARED})`, 'WebSocket not tested', 'NATS not tested']);
    expect(r.not_covered?.[0]).toMatch(/^1 case UNIMPLEMENTED \(the agent card does not declare durability "restart"; [^()]*\)$/);
  });

  it('a combined run over both bindings certifies over both', () => {
    const both = buildReport({ ...base, results: [result('core.one', 'PASS')], suiteCases: 1, bindings: ['stdio', 'websocket'] });
    expect(both.level).toBe('TAP 1.0 Certified over stdio and WebSocket — NATS not tested');
  });

  it('a failing partial run is partial too, and the badge says partial', () => {
    const r = buildReport({ ...base, results: [result('core.one', 'FAIL')], suiteCases: 5 });
    expect(r.partial).toBe(true);
    expect(renderBadge(r)).toContain('>partial<');
  });
});

describe('reports people act on', () => {
  const r = buildReport({
    ...base,
    results: [result('core.a', 'PASS'), result('core.b', 'SKIPPED'), result('core.c', 'FAIL')],
    suiteCases: 3,
  });

  it('says "not run" for profiles none of whose cases ran, and counts per verdict', () => {
    expect(r.profiles).toEqual({ core: 'FAIL', tasks: 'not run', plans: 'not run' });
    const text = renderSummary(r, (_s, x) => x);
    expect(text).toContain('core  1 PASS, 1 SKIPPED, 1 FAIL');
    expect(text).toMatch(/not run\s+tasks, plans/);
    expect(text).not.toMatch(/\b0\/0\b/);
    const html = renderHtml(r, { specBaseUrl: '' });
    expect(html).toContain('<td>tasks</td><td><span class="v v-not-run">not run</span></td><td>—</td>');
    expect(html).toContain('1 PASS, 1 SKIPPED, 1 FAIL');
  });

  it("links spec anchors and requirement ids, relative to the package's spec site unless --spec-base-url says otherwise", () => {
    const rel = renderHtml(r, { file: join(process.cwd(), 'reports', 'r.html') });
    expect(rel).toContain('href="../site/spec/handshake.html#init"');
    expect(rel).toContain('href="../site/requirements.html#TAP-HS-001"');
    const abs = renderHtml(r, { specBaseUrl: 'https://tap.example/1.0' });
    expect(abs).toContain('href="https://tap.example/1.0/spec/handshake.html#init"');
    const md = renderMarkdown(r, { specBaseUrl: 'https://tap.example/1.0/' });
    expect(md).toContain('[TAP-HS-001](https://tap.example/1.0/requirements.html#TAP-HS-001)');
    expect(md).toContain('(https://tap.example/1.0/spec/handshake.html#init)');
  });

  it('says when the default links would lead to a spec site not built yet, and how to build it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-site-'));
    expect(missingSpecSite(dir)).toBe(
      `its spec links point to ${dir}, where no site is built: run \`npm run site\` in ${tmpdir()}, or pass --spec-base-url <url>`,
    );
    writeFileSync(join(dir, 'index.html'), '<!doctype html>');
    expect(missingSpecSite(dir)).toBeUndefined();
    rmSync(dir, { recursive: true, force: true });
  });

  it('escapes control bytes and folds long transcript lines in HTML', () => {
    const long = result('core.long', 'FAIL');
    long.transcript.push({ t: 9, conn: 1, dir: 'in', text: `{"x":"${'y'.repeat(600)}"}`, bytes: 610 });
    const html = renderHtml(buildReport({ ...base, results: [long], suiteCases: 1 }), { specBaseUrl: '' });
    expect(html.replace(CONTROL_CHARS, '')).toBe(html);
    expect(html).toContain('log line <span class="ctl">\\x01</span>');
    expect(html).toContain('<details class="fold"><summary>');
    expect(html).toMatch(/white-space:pre-wrap/);
  });

  it('writes a Markdown report: summary table, then each failure with requirement, expected, observed and replay', () => {
    const md = renderMarkdown(r, { specBaseUrl: '' });
    expect(md).toMatch(/^## tap-conform: Not certified\n/);
    expect(md).toContain('| profile | verdict | cases |');
    expect(md).toContain('| core | FAIL | 1 PASS, 1 SKIPPED, 1 FAIL |');
    expect(md).toContain('| tasks | not run | — |');
    expect(md).toContain('### 1 case that needs attention');
    expect(md).toContain('#### FAIL `core.c`');
    expect(md).toContain('- **Expected:** handshake.ack');
    expect(md).toContain('- **Observed:** error \\<PROTOCOL\\_VIOLATION\\>');
    expect(md).toContain('  tap-conform --seed 1 --only core.c ./agent');
    expect(md.replace(CONTROL_CHARS, '')).toBe(md);
  });

  it('gives one hint when every integrity case fails, naming TAP_HMAC_*', () => {
    const integrity = ['a', 'b', 'c'].map((x) => ({ ...result(`integrity.${x}`, 'FAIL', 'MUST', 'integrity'), detail: `refused ${x}` }));
    const rep = buildReport({ ...base, allProfiles: ['integrity'], profiles: ['integrity'], results: integrity, suiteCases: 3 });
    const hints = hintsOf(rep);
    expect(hints).toHaveLength(1);
    expect(hints[0]!.text).toContain('TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER');
    expect(hints[0]!.cases).toEqual(['integrity.a', 'integrity.b', 'integrity.c']);
    expect(renderSummary(rep, (_s, x) => x).match(/^hint: /gm)).toHaveLength(1);
  });

  it('says the keys differ when the agent refuses the signed handshake as wrongly signed', () => {
    const refused = ['a', 'b'].map((x) => ({
      ...result(`core.${x}`, 'FAIL'),
      detail: 'the agent refused the handshake: error INVALID_SIGNATURE ("the signature is wrong")',
    }));
    const rep = buildReport({ ...base, results: [...refused, result('core.c', 'PASS')], suiteCases: 3 });
    const hints = hintsOf(rep);
    expect(hints).toHaveLength(1);
    expect(hints[0]!.text).toMatch(
      /^the agent refused tap-conform's signed handshake as wrongly signed in 2 cases: most likely it holds a key of that id with other bytes \(else it checks signatures wrongly\); give the agent and tap-conform the same TAP_HMAC_KEY/,
    );
    expect(hints[0]!.cases).toEqual(['core.a', 'core.b']);
  });

  it('gives one hint when three or more failures read the same but for ids and numbers', () => {
    const same = [1, 2, 3].map((n) => ({
      ...result(`tasks.${n}`, 'FAIL', 'MUST', 'tasks'),
      detail: `no reply to ping tc-abcdefgh-${n} within ${n}000 ms`,
    }));
    const rep = buildReport({ ...base, results: [...same, result('core.x', 'FAIL')], suiteCases: 4 });
    const hints = hintsOf(rep);
    expect(hints).toHaveLength(1);
    expect(hints[0]!.cases).toEqual(['tasks.1', 'tasks.2', 'tasks.3']);
    expect(hints[0]!.text).toMatch(/^3 cases fail the same way/);
  });

  it('writes counts with the right number: "1 case", "2 cases"', () => {
    expect(count(1, 'case')).toBe('1 case');
    expect(count(2, 'case')).toBe('2 cases');
    expect(count(1, 'entry', 'entries')).toBe('1 entry');
    const one = buildReport({ ...base, results: [result('core.a', 'PASS')], suiteCases: 1 });
    expect(renderSummary(one, (_s, x) => x)).toMatch(/^1 case in /m);
  });
});

describe('the JSON report', () => {
  it('has every field the harness promises, with sorted keys', () => {
    const json = JSON.parse(renderJson(report));
    for (const f of [
      'tool',
      'version',
      'spec_version',
      'target',
      'transport',
      'seed',
      'started_at',
      'duration_ms',
      'summary',
      'profiles',
      'level',
      'certified',
      'cases',
    ]) {
      expect(json).toHaveProperty(f);
    }
    for (const f of ['id', 'title', 'level', 'profile', 'spec', 'requirement', 'verdict', 'detail', 'duration_ms'])
      expect(json.cases[0]).toHaveProperty(f);
    expect(json.summary.FAIL).toBe(1);
    expect(json.summary.total).toBe(7);
    expect(Object.keys(json)).toEqual([...Object.keys(json)].sort());
    expect(renderJson(report)).toBe(renderJson(JSON.parse(renderJson(report))));
  });
});

describe('the JUnit report', () => {
  it('is well-formed XML with failures as <failure> and errors as <error>', () => {
    const doc = parseXml(renderJunit(report));
    const suites = doc.children[0]!;
    expect(suites.name).toBe('testsuites');
    expect(suites.attrs.tests).toBe('7');
    const cases = suites.children.flatMap((s) => s.children);
    expect(cases).toHaveLength(7);
    const byName = (id: string) => cases.find((c) => c.attrs.name!.startsWith(id))!;
    expect(byName('a.fail').children[0]!.name).toBe('failure');
    expect(byName('b.nottested').children[0]!.name).toBe('failure');
    expect(byName('b.error').children[0]!.name).toBe('error');
    expect(byName('b.skip').children[0]!.name).toBe('skipped');
    expect(byName('a.pass').children).toHaveLength(0);
    expect(byName('a.fail').children[0]!.text).toContain('TAP-HS-001');
  });
});

describe('the HTML report', () => {
  const html = renderHtml(report);
  it('is one self-contained file: inline style, no scripts, no external assets', () => {
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain('<style>');
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/\b(src|href)="(https?:)?\/\//i);
    expect(html).not.toMatch(/url\((?!#)/);
  });
  it('shows, per failed case, the requirement, expected vs observed and the transcript (escaped)', () => {
    expect(html).toContain('A requester MUST send handshake.init');
    expect(html).toContain('error &lt;PROTOCOL_VIOLATION&gt;');
    expect(html).toContain('&lt;/pre&gt;&lt;script&gt;');
    expect(html).toContain('tap-conform --seed 1 --only a.fail ./agent');
  });
});

describe('the badge', () => {
  it('is an SVG naming the level', () => {
    const svg = renderBadge(report);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('not certified');
    expect(() => parseXml(svg)).not.toThrow();
  });
});

describe('expected-failures baselines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tc-baseline-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const known = new Set(results.map((r) => r.id).concat(['gone.case']));

  it('tolerates listed failures', () => {
    const check = checkBaseline('b.json', [{ id: 'a.fail', reason: 'known' }], results, known, 'may');
    expect(check.matched).toEqual(['a.fail']);
    expect(check.stale).toEqual([]);
    expect(unexpectedFailures(results, 'may', check).map((r) => r.id)).not.toContain('a.fail');
  });

  it('fails on a stale entry: a listed case that now passes, or no longer exists', () => {
    const check = checkBaseline(
      'b.json',
      [
        { id: 'a.pass', reason: 'was broken' },
        { id: 'no.such', reason: '' },
      ],
      results,
      known,
      'may',
    );
    expect(check.stale.map((s) => s.id)).toEqual(['a.pass', 'no.such']);
  });

  it('reads a JSON list of { id, reason } and says what is wrong with a bad file', () => {
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify([{ id: 'a.fail', reason: 'tracked in #12' }]));
    expect(readBaseline(good)).toEqual([{ id: 'a.fail', reason: 'tracked in #12' }]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"nope": 1}');
    expect(() => readBaseline(bad)).toThrow(/JSON array/);
    expect(() => readBaseline(join(dir, 'missing.json'))).toThrow(/no such file/);
  });
});

describe('progress', () => {
  const sink = (isTTY: boolean) => {
    const written: string[] = [];
    return { written, stream: { isTTY, columns: 60, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream };
  };

  it('off a terminal: one plain line per tenth of the cases, and the last', () => {
    const { written, stream } = sink(false);
    let t = 0;
    const p = progressLine(
      stream,
      (_s, x) => x,
      () => t,
    );
    for (let done = 0; done <= 25; done++) {
      t = done * 1000;
      p.update(done, 25, ['case.a']);
    }
    p.clear();
    expect(written).toEqual([3, 6, 9, 12, 15, 18, 21, 24, 25].map((n) => `tap-conform: ${n}/25 cases done (${n} s)\n`));
  });

  it('on a terminal: one line rewritten in place, cleared at the end', () => {
    const { written, stream } = sink(true);
    const p = progressLine(stream, (_s, x) => x);
    p.update(1, 2, ['case.a', 'case.b']);
    p.clear();
    expect(written).toEqual(['\r\x1b[2K[1/2] case.a case.b', '\r\x1b[2K']);
  });
});

describe('notPerfect', () => {
  it('keeps every verdict but PASS, except cases skipped as belonging to the other binding', () => {
    const cases = [
      { id: 'a', verdict: 'PASS', detail: 'ok' },
      { id: 'b', verdict: 'SKIPPED', detail: 'applies to the websocket binding only' },
      { id: 'c', verdict: 'SKIPPED', detail: 'the agent offers no tap.test.stream' },
      { id: 'd', verdict: 'UNIMPLEMENTED', detail: 'the agent card does not declare durability "restart"' },
      { id: 'e', verdict: 'NON-STRICT', detail: 'late' },
      { id: 'f', verdict: 'FAIL', detail: 'broken' },
    ] as { id: string; verdict: Verdict; detail: string }[];
    expect(notPerfect(cases).map((c) => c.id)).toEqual(['c', 'd', 'e', 'f']);
  });
});

describe('terminal summary', () => {
  it('counts the cases of a profile per verdict, so that skipped cases never read as failed', () => {
    const r = buildReport({
      ...{
        version: '1',
        target: 't',
        transport: 'stdio',
        seed: 1,
        startedAt: new Date(),
        durationMs: 1,
        levelTarget: 'may',
        profiles: ['core'],
        allProfiles: ['core'],
      },
      results: [result('a', 'PASS'), result('b', 'PASS'), result('c', 'SKIPPED')],
    });
    expect(renderSummary(r, (_s, x) => x)).toContain('core  2 PASS, 1 SKIPPED');
  });
});
