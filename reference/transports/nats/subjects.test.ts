import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { DEFAULT_NAMES, deadSubject, eventSubject, resultSubject, taskSubject } from '../../jetstream/names.ts';
import { parseNatsUrl, natsClientOptions } from './url.ts';
import {
  buildSubject,
  inboxPrefixOf,
  jsApiSubject,
  kvSubject,
  maxDeliveriesAdvisory,
  openSubject,
  SubjectPartError,
  subjectsOf,
  Wildcard,
} from './subjects.ts';

/** Values a record, a header or a command line could carry into a subject. */
const HOSTILE: unknown[] = [
  '>',
  '*',
  'a.*',
  'a.>',
  '*.b',
  'a..b',
  '.a',
  'a.',
  '',
  ' ',
  'a b',
  'a\tb',
  'a\nb',
  'a\r\n',
  'a\u0000',
  `x${'y'.repeat(300)}`,
  'é',
  '$JS.API.STREAM.DELETE.TAP_TASKS',
  null,
  undefined,
  42,
  {},
  ['a'],
];

/** Each builder of the binding with one value slot, the value put where a value from outside goes. */
const BUILDERS: Array<[string, (v: never) => unknown]> = [
  ['openSubject (agent id)', (v) => openSubject('tap', v)],
  ['subjectsOf (agent id)', (v) => subjectsOf('tap', v, 'conn1')],
  ['subjectsOf (connection id)', (v) => subjectsOf('tap', 'a.b', v)],
  ['openSubject (prefix)', (v) => openSubject(v, 'a.b')],
  ['taskSubject (capability)', (v) => taskSubject(DEFAULT_NAMES, v)],
  ['resultSubject (task id)', (v) => resultSubject(DEFAULT_NAMES, v)],
  ['eventSubject (task id)', (v) => eventSubject(DEFAULT_NAMES, v)],
  ['deadSubject (capability)', (v) => deadSubject(DEFAULT_NAMES, v)],
  ['taskSubject (prefix)', (v) => taskSubject({ ...DEFAULT_NAMES, prefix: v }, 'tap.test.echo')],
  // No stream at all is $JS.API.INFO: an absent value stands for an empty one here.
  ['jsApiSubject (stream)', (v) => jsApiSubject('STREAM.INFO', v ?? '')],
  ['maxDeliveriesAdvisory (stream)', (v) => maxDeliveriesAdvisory(v, 'tap-x')],
  ['maxDeliveriesAdvisory (consumer)', (v) => maxDeliveriesAdvisory('TAP_TASKS', v)],
  ['kvSubject (bucket)', (v) => kvSubject(v, 'a.b')],
  ['kvSubject (key)', (v) => kvSubject('TAP_REGISTRY', v)],
  ['buildSubject (identifier)', (v) => buildSubject('tap', { id: v, what: 'task id' })],
  ['buildSubject (token)', (v) => buildSubject('tap', { token: v, what: 'stream name' })],
];

describe('the checked subject builder of the NATS binding (spec: bindings-nats#subjects)', () => {
  it('builds the subjects of the spec from valid parts, and wildcards only from the Wildcard constants', () => {
    expect(subjectsOf('tap', 'a.b', 'c-1_X')).toEqual({
      open: 'tap.open.a.b',
      toAgent: 'tap.in.c-1_X.a.b',
      toRequester: 'tap.out.c-1_X.a.b',
    });
    expect(subjectsOf('tap', 'a.b', Wildcard.TOKEN).toAgent).toBe('tap.in.*.a.b');
    expect(resultSubject(DEFAULT_NAMES, 'task-1.x')).toBe('tap.results.task-1.x');
    expect(taskSubject(DEFAULT_NAMES, Wildcard.TAIL)).toBe('tap.tasks.>');
    expect(jsApiSubject('CONSUMER.MSG.NEXT', 'TAP_TASKS', { token: 'tap-tap_test_echo', what: 'consumer' })).toBe(
      '$JS.API.CONSUMER.MSG.NEXT.TAP_TASKS.tap-tap_test_echo',
    );
    expect(maxDeliveriesAdvisory('TAP_TASKS', 'tap-x')).toBe('$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TAP_TASKS.tap-x');
    expect(kvSubject('TAP_REGISTRY', 'a.b')).toBe('$KV.TAP_REGISTRY.a.b');
    expect(openSubject('tap', { template: 'agent_id' })).toBe('tap.open.{agent_id}');
  });

  for (const [name, build] of BUILDERS) {
    it(`refuses every hostile value in ${name} with a SubjectPartError that names it`, () => {
      for (const value of HOSTILE) {
        let thrown: unknown;
        let built: unknown;
        try {
          built = build(value as never);
        } catch (err) {
          thrown = err;
        }
        expect(thrown, `${name} built ${JSON.stringify(built)} from ${JSON.stringify(value)}`).toBeInstanceOf(SubjectPartError);
      }
    });
  }

  it('refuses a fixed part that holds a wildcard or a space, so that no value passed as one gets through', () => {
    for (const bad of ['tap.>', 'tap.*', 'a b', 'tap..x', '']) expect(() => buildSubject(bad)).toThrow(SubjectPartError);
  });

  it('gives each NATS user an inbox prefix of one token, never a wildcard, and none to a client without a user (spec: bindings-nats#security)', () => {
    for (const user of ['alice', 'a.b', '>', '*', 'a b', 'a.>', 'é']) {
      const prefix = inboxPrefixOf(user);
      expect(prefix).toMatch(/^_INBOX_[A-Za-z0-9_-]+$/);
    }
    expect(inboxPrefixOf('tap.reference-agent')).toBe('_INBOX_tap_reference-agent');
    expect(natsClientOptions(parseNatsUrl('nats://u.1:p@127.0.0.1:4222/a'))).toEqual({
      servers: ['nats://127.0.0.1:4222'],
      user: 'u.1',
      pass: 'p',
      inboxPrefix: '_INBOX_u_1',
    });
    expect(natsClientOptions(parseNatsUrl('nats://127.0.0.1:4222/a'))).toEqual({ servers: ['nats://127.0.0.1:4222'] });
  });
});

/** The TypeScript modules the scan reads: reference/ and conformance/, not tests and not the broken agents of the self-test. */
function modules(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && path !== join(ROOT, 'conformance', 'test')) modules(path, out);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const ROOT = join(new URL('.', import.meta.url).pathname, '..', '..', '..');
/** Where subjects may be written out: the builder itself. */
const BUILDER_FILES = new Set(['reference/transports/nats/subjects.ts']);
/** Calls and members whose first argument or value is a subject. */
const SUBJECT_CALLS = new Set(['subscribe', 'publish', 'request', 'respondMessage']);
const SUBJECT_MEMBERS = new Set(['last_by_subj', 'next_by_subj', 'filter_subject', 'filter_subjects', 'subjects', 'subjects_filter']);
/** Text that only a subject of the binding holds. */
const SUBJECT_TEXT = /(^|\.)(open|in|out|tasks|results|events|dead)\.$|^\.(open|in|out|tasks|results|events|dead)\.|\$JS\.|\$KV\.|_INBOX/;

/** Where a module writes a subject by hand: a template or a `+` where a subject goes, or subject text in a template. */
function handBuilt(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const at = (node: ts.Node): string =>
    `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText().slice(0, 100)}`;
  const composed = (node: ts.Node | undefined): boolean =>
    !!node && (ts.isTemplateExpression(node) || (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken));
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && SUBJECT_CALLS.has(node.expression.name.text)) {
      if (composed(node.arguments[0])) found.push(at(node));
    }
    if (ts.isPropertyAssignment(node) && SUBJECT_MEMBERS.has(node.name.getText().replace(/['"]/g, ''))) {
      const v = node.initializer;
      if (composed(v) || (ts.isArrayLiteralExpression(v) && v.elements.some((e) => composed(e)))) found.push(at(node));
    }
    if (ts.isTemplateExpression(node)) {
      const texts = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)];
      if (texts.some((t) => SUBJECT_TEXT.test(t))) found.push(at(node));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the NATS code builds every subject with the checked builder', () => {
  it('writes no subject by hand anywhere in reference/ or conformance/: no template or + where a subject goes', () => {
    const found = [...modules(join(ROOT, 'reference')), ...modules(join(ROOT, 'conformance'))]
      .map((path) => relative(ROOT, path))
      .filter((file) => !BUILDER_FILES.has(file))
      .flatMap((file) => handBuilt(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('finds a subject written by hand, so that the scan above can fail', () => {
    // Source text for the scan, not templates of this file: "$" and "{" are joined so that nothing is interpolated.
    const sample = [
      'nc.subscribe(`$PREFIX.in.$ID.$AGENT`);',
      "js.publish('tap.results.' + taskId, data);",
      'jsm.streams.getMessage(s, { last_by_subj: `$P.events.$TASK` });',
      'const advisory = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.$STREAM.$C`;',
    ]
      .join('\n')
      .replace(/\$([A-Z]+)/g, (all, name: string) => (name === 'JS' ? all : `\${${name.toLowerCase()}}`));
    const lines = new Set(handBuilt('sample.ts', sample).map((f) => f.split(':')[1]));
    expect([...lines].sort()).toEqual(['1', '2', '3', '4']);
  });
});
