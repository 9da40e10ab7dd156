/**
 * The harness's own view of schemas/v1: validators compiled from the published JSON Schema
 * files and the three data tables, read at run time and never restated (spec: schemas).
 * The validators are compiled from the published files themselves, never from the reference's
 * source, so the harness checks agents against the published text rather than against any
 * implementation's reading of it; the build compiles them ahead of time (tools/emit-validators.ts,
 * HARNESS), as it does the reference's, instead of every tap-conform process at its first message.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { HARNESS } from '../reference/core/validators.generated.js';
import { repoPath } from './paths.ts';

/** One schema violation: where, which keyword, and what. */
export interface Issue {
  path: string;
  keyword: string;
  message: string;
}

/** Rows of messages.json and error-codes.json, typed by the tables' source. */
import type { ErrorCodeEntry, MessageEntry } from '../schemas/src/tables.ts';
export type { MessageEntry };
export type ErrorEntry = ErrorCodeEntry;

export interface StateTable {
  initial: string;
  states: string[];
  terminal: string[];
  transitions: { from: string; to: string; trigger: string }[];
}

const SCHEMA_DIR = repoPath('schemas/v1');

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as T;
}

/** The message catalogue (schemas/v1/messages.json). */
export const CATALOGUE: readonly MessageEntry[] = readJson<{ messages: MessageEntry[] }>('messages.json').messages;
/** The error registry (schemas/v1/error-codes.json). */
export const ERROR_REGISTRY: readonly ErrorEntry[] = readJson<{ codes: ErrorEntry[] }>('error-codes.json').codes;
/** The task state table (schemas/v1/task-states.json). */
export const STATE_TABLE: StateTable = readJson<StateTable>('task-states.json');

const byType = new Map(CATALOGUE.map((m) => [m.type, m]));
const byCode = new Map(ERROR_REGISTRY.map((e) => [e.code, e]));

/** The catalogue entry of a message type, if the type exists. */
export function messageEntry(type: string): MessageEntry | undefined {
  return byType.get(type);
}

/** The registry entry of an error code, if registered. */
export function errorEntry(code: string): ErrorEntry | undefined {
  return byCode.get(code);
}

/** True if `type` is a terminal task state. */
export function isTerminal(state: string): boolean {
  return STATE_TABLE.terminal.includes(state);
}

/** True if the state table allows from → to. */
export function canTransition(from: string, to: string): boolean {
  return STATE_TABLE.transitions.some((t) => t.from === from && t.to === to);
}

function validator(file: string): ValidateFunction {
  const v = HARNESS[file];
  if (!v) throw new Error(`schemas/v1/${file} is missing (or its validator is not built: run npm run build)`);
  return v;
}

function issuesOf(v: ValidateFunction): Issue[] {
  return (v.errors ?? []).map((e) => ({
    path: e.instancePath || '/',
    keyword: e.keyword,
    message: e.message ?? e.keyword,
  }));
}

/** Validates a value against one schema file of schemas/v1; null when valid. */
export function validateAgainst(file: string, value: unknown): Issue[] | null {
  const v = validator(file);
  return v(value) ? null : issuesOf(v);
}

/**
 * Validates a decoded message: the envelope, then the full per-type schema when the type is in
 * the catalogue. An unknown type is reported as an issue of its own.
 */
export function validateMessage(value: unknown): Issue[] | null {
  const env = validateAgainst('envelope.schema.json', value);
  if (env) return env;
  const type = (value as { type: string }).type;
  if (!byType.has(type)) return [{ path: '/type', keyword: 'catalogue', message: `"${type}" is not a TAP 1.0 message type` }];
  return validateAgainst(`${type}.schema.json`, value);
}

/** The pattern of identifier.schema.json, which a person reads better as words. */
const IDENTIFIER_PATTERN = readJson<{ pattern: string }>('identifier.schema.json').pattern;

/** The member of `value` at a JSON pointer ("/payload/agent/agent_id"), if there is one. */
function at(value: unknown, pointer: string): unknown {
  let v = value;
  for (const part of pointer.split('/').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return v;
}

/** One issue for a person; with the message it came from, a bad pattern match quotes the value. */
function describeIssue(i: Issue, value: unknown): string {
  if (i.keyword !== 'pattern' || value === undefined) return `${i.path} ${i.message}`;
  const bad = JSON.stringify(at(value, i.path));
  if (i.message === `must match pattern "${IDENTIFIER_PATTERN}"`)
    return `${i.path} ${bad} is not an identifier (lowercase letters, digits, "_" and "-", in dot-separated segments)`;
  return `${i.path} ${bad} ${i.message}`;
}

/**
 * Formats issues for a person: "/payload/status must be equal to one of the allowed values; …".
 * Repeats and the "must match "then"/"else" schema" lines of conditional schemas are left out;
 * given the message, a value that fails a pattern is quoted.
 */
export function describeIssues(issues: readonly Issue[], max = 3, value?: unknown): string {
  const lines = [...new Set(issues.filter((i) => i.keyword !== 'if').map((i) => describeIssue(i, value)))];
  const shown = lines.slice(0, max);
  if (lines.length > max) shown.push(`and ${lines.length - max} more`);
  return shown.join('; ');
}
