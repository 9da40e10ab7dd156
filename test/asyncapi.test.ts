import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DiagnosticSeverity, fromFile, Parser } from '@asyncapi/parser';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import catalogue from '../schemas/v1/messages.json' with { type: 'json' };
import { Validator } from '@cfworker/json-schema';
import { createAjv, validateWith } from '../tools/validate-fixtures.ts';
import { ajvJudge, cfworkerJudge, exampleCases } from './validators.testkit.ts';
import { openSubject, subjectsOf } from '../reference/transports/nats/subjects.ts';
import { DEFAULT_NAMES, deadSubject, eventSubject, resultSubject, taskSubject } from '../reference/jetstream/streams.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FILE = `${ROOT}asyncapi.yaml`;
const TYPES = catalogue.messages.map((m) => m.type);
const ofDirection = (...dirs: string[]) =>
  catalogue.messages
    .filter((m) => dirs.includes(m.direction))
    .map((m) => m.type)
    .sort();

type Ref = { $ref: string };
interface Doc {
  asyncapi: string;
  servers: Record<string, { protocol: string; description?: string; bindings?: unknown; 'x-tap-subprotocol'?: string }>;
  channels: Record<string, { messages: Record<string, Ref>; bindings?: { ws?: { headers?: unknown } } }>;
  operations: Record<string, { action: string; channel: Ref; messages: Ref[]; reply?: { messages: Ref[] }; tags?: { name: string }[] }>;
  components: {
    messages: Record<
      string,
      { name: string; payload: { schemaFormat: string; schema: Ref }; examples?: { name: string; payload: unknown }[] }
    >;
  };
}
const raw = parseYaml(readFileSync(FILE, 'utf8')) as Doc;
const names = (refs: Ref[]) => refs.map((r) => r.$ref.split('/').pop()!).sort();

describe('asyncapi.yaml', () => {
  let diagnostics: { severity: number; code: string | number; message: string; path: (string | number)[] }[] = [];
  let messageIds: string[] = [];
  let parsedMessages: { id: string; schema: object; examples: unknown[] }[] = [];
  let operations: { id: string; description: string }[] = [];

  beforeAll(async () => {
    const parsed = await fromFile(new Parser(), FILE).parse();
    diagnostics = parsed.diagnostics;
    messageIds =
      parsed.document
        ?.allMessages()
        .all()
        .map((m) => m.id()) ?? [];
    parsedMessages =
      parsed.document
        ?.allMessages()
        .all()
        .map((m) => ({
          id: m.id(),
          schema: (m.payload()!.json() as { schema: object }).schema,
          examples: m
            .examples()
            .all()
            .map((e) => e.payload()),
        })) ?? [];
    operations =
      parsed.document
        ?.operations()
        .all()
        .map((o) => ({ id: o.id() ?? '(no id)', description: o.description() ?? '' })) ?? [];
  }, 60_000);

  it('parses with @asyncapi/parser 3 without error diagnostics', () => {
    const errors = diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error);
    expect(errors.map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([]);
    expect(raw.asyncapi).toBe('3.0.0');
  });

  it('describes every message of the catalogue, and nothing else', () => {
    expect([...new Set(messageIds)].sort()).toEqual([...TYPES].sort());
    expect(Object.keys(raw.components.messages).sort()).toEqual([...TYPES].sort());
    expect(Object.keys(raw.channels.session!.messages).sort()).toEqual([...TYPES].sort());
  });

  it('takes every payload from schemas/v1 through a relative $ref to a file that exists', () => {
    for (const [type, m] of Object.entries(raw.components.messages)) {
      expect(m.name).toBe(type);
      expect(m.payload.schemaFormat).toBe('application/schema+json;version=2020-12');
      expect(m.payload.schema.$ref).toBe(`./schemas/v1/${type}.schema.json`);
      expect(existsSync(`${ROOT}${m.payload.schema.$ref.slice(2)}`)).toBe(true);
    }
  });

  it('gives each message an example that is a valid fixture', () => {
    const ajv = createAjv();
    for (const [type, m] of Object.entries(raw.components.messages)) {
      const ex = m.examples?.[0];
      expect(ex, type).toBeDefined();
      expect(validateWith(ajv, `${type}.schema.json`, ex!.payload)).toBeNull();
      const fixture = JSON.parse(readFileSync(`${ROOT}fixtures/messages/${type}/${ex!.name}.json`, 'utf8')) as unknown;
      expect(ex!.payload).toEqual(fixture);
    }
  });

  it('declares a stdio server (custom protocol) and a WebSocket server with subprotocol tap.v1', () => {
    expect(raw.servers.stdio!.protocol).toBe('stdio');
    expect(raw.servers.stdio!.description).toContain('not a protocol registered');
    expect(raw.servers.websocket!.protocol).toBe('ws');
    expect(raw.servers.websocket!['x-tap-subprotocol']).toBe('tap.v1');
    expect(JSON.stringify(raw.channels.session!.bindings?.ws?.headers)).toContain('tap.v1');
  });

  it('declares a NATS server whose subjects are those the reference uses (spec: bindings-nats#subjects)', () => {
    const nats = raw.servers.nats as { protocol: string; 'x-tap-subjects'?: Record<string, string> };
    expect(nats.protocol).toBe('nats');
    const agent = { template: 'agent_id' };
    const s = subjectsOf('tap', agent, { template: 'connection' });
    expect(nats['x-tap-subjects']).toMatchObject({
      open: openSubject('tap', agent),
      toAgent: s.toAgent,
      toRequester: s.toRequester,
      tasks: taskSubject(DEFAULT_NAMES, { template: 'capability' }),
      results: resultSubject(DEFAULT_NAMES, { template: 'task_id' }),
      events: eventSubject(DEFAULT_NAMES, { template: 'task_id' }),
      dead: deadSubject(DEFAULT_NAMES, { template: 'capability' }),
    });
  });

  it('describes both roles: each direction is sent by one role and received by the other', () => {
    const ops = raw.operations;
    const toAgent = ofDirection('requester_to_agent', 'both');
    const toRequester = ofDirection('agent_to_requester', 'both');
    expect([ops.agentReceive!.action, names(ops.agentReceive!.messages)]).toEqual(['receive', toAgent]);
    expect([ops.requesterSend!.action, names(ops.requesterSend!.messages)]).toEqual(['send', toAgent]);
    expect([ops.agentSend!.action, names(ops.agentSend!.messages)]).toEqual(['send', toRequester]);
    expect([ops.requesterReceive!.action, names(ops.requesterReceive!.messages)]).toEqual(['receive', toRequester]);
    const roles = new Set(Object.values(ops).flatMap((o) => (o.tags ?? []).map((t) => t.name)));
    expect(roles).toEqual(new Set(['role:agent', 'role:requester']));
  });

  it('pairs every request with the replies the catalogue allows (spec: messages#replies)', () => {
    const withReply = Object.values(raw.operations).filter((o) => o.reply);
    for (const m of catalogue.messages.filter((x) => x.replies.length > 0)) {
      const op = withReply.find((o) => names(o.messages).join() === m.type);
      expect(op, m.type).toBeDefined();
      expect(names(op!.reply!.messages)).toEqual([...m.replies].sort());
    }
  });

  it('describes every operation', () => {
    expect(operations.length).toBe(Object.keys(raw.operations).length);
    for (const o of operations) expect(o.description.trim().length, o.id).toBeGreaterThan(40);
  });

  it('states the WebSocket close codes of the spec, with 1009 only above the hard ceiling (spec: bindings-websocket#close-codes)', () => {
    const chapter = readFileSync(`${ROOT}spec/1.0/bindings-websocket.md`, 'utf8');
    const table = chapter.slice(chapter.indexOf('{#close-codes}'));
    const codes = [...table.matchAll(/^\| (\d{4}) \|/gm)].map((m) => m[1]!);
    expect(codes).toContain('1009');
    const text = raw.servers.websocket!.description!.replace(/\s+/g, ' ');
    for (const code of codes) expect(text, code).toContain(code);
    expect(text).toMatch(/1009 only for a frame above the hard ceiling/);
    expect(text).toMatch(
      /above max_message_bytes but within the endpoint's hard ceiling .* answered with MESSAGE_TOO_LARGE and the session stays open/,
    );
    expect(text).not.toMatch(/1009 for a message above max_message_bytes/);
  });

  it('validates each message example against its payload schema as the AsyncAPI parser resolved it', () => {
    expect(parsedMessages.map((m) => m.id).sort()).toEqual([...TYPES].sort());
    for (const m of parsedMessages) {
      expect(m.examples.length, m.id).toBeGreaterThan(0);
      const validator = new Validator(m.schema as never, '2020-12', false);
      for (const ex of m.examples) {
        expect(validator.validate(ex).errors, m.id).toEqual([]);
        // The resolved schema is the real one: the same example with a broken envelope fails it.
        expect(validator.validate({ ...(ex as object), timestamp: 'yesterday Z' }).valid, m.id).toBe(false);
      }
    }
  });

  it('validates each message example in Ajv and @cfworker/json-schema against the file its payload names (python-jsonschema: asyncapi-python.process.test.ts)', () => {
    const cases = exampleCases(raw);
    expect(cases.length).toBeGreaterThanOrEqual(TYPES.length);
    expect(ajvJudge('bundle')(cases)).toEqual(cases.map(() => true));
    expect(cfworkerJudge('files')(cases)).toEqual(cases.map(() => true));
  });
});
