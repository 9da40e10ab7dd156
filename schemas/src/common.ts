/**
 * Scalar building blocks shared by every TAP schema.
 * A schema carrying `$id` here is emitted as its own file and referenced by relative `$ref`.
 */
import { Type, type Static, type TLiteral, type TUnion } from '@sinclair/typebox';

/**
 * Ends a pattern at the very end of the string in ECMA-262 and in Python's `re` alike: Python's `$`
 * also matches before a final line feed, which the look-ahead refuses (spec: envelope#identifiers).
 */
export const END = '$(?!\\n)';

/** The characters no name, identifier or path may hold: C0 and C1 controls, DEL, U+2028 and U+2029. */
export const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029';

/** A one-line string: no control character, line break or line/paragraph separator. */
export const SINGLE_LINE = `^[^${CONTROL}]*${END}`;

/** A pattern that must match the whole string: `^` + body + {@link END}. */
export const whole = (body: string): string => `^${body}${END}`;

/** A one-line name or label of free text (spec: envelope#identifiers). */
export const Label = (options: { description?: string; minLength?: number; maxLength: number }) =>
  Type.String({ ...options, pattern: SINGLE_LINE });

/** Ids that may become file names: task, agent, plan and key ids (spec: envelope#identifiers). */
export const Identifier = Type.String({
  $id: 'identifier.schema.json',
  title: 'Identifier',
  description:
    'An id that may become a file name: lowercase ASCII letters, digits, "_" and "-", in dot-separated segments, starting with a letter or digit; 1 to 128 bytes.',
  pattern: whole('[a-z0-9][a-z0-9_-]*(\\.[a-z0-9_-]+)*'),
  minLength: 1,
  maxLength: 128,
});
export type Identifier = Static<typeof Identifier>;

/** A message id: unique per sender within a session (spec: envelope#message-id). */
export const MessageId = Type.String({
  title: 'MessageId',
  description: 'Unique per sender within a session; 1 to 128 characters of [A-Za-z0-9._:-].',
  pattern: whole('[A-Za-z0-9._:-]{1,128}'),
});

const MONTH_DAY = ['(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])', '(0[469]|11)-(0[1-9]|[12][0-9]|30)', '02-(0[1-9]|1[0-9]|2[0-8])'].join('|');
const LEAP_YEAR = '[0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00';
const TIME = '([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]|23:59:60';

/**
 * An RFC 3339 date-time in UTC (spec: envelope#timestamps). The pattern alone decides it, calendar
 * included, so validators that do not assert `format` give the same verdict as those that do.
 */
export const TIMESTAMP_PATTERN = whole(`([0-9]{4}-(${MONTH_DAY})|(${LEAP_YEAR})-02-29)T(${TIME})(\\.[0-9]+)?Z`);

/** An RFC 3339 timestamp in UTC (spec: envelope#timestamps). */
export const Timestamp = Type.String({
  title: 'Timestamp',
  description:
    'An RFC 3339 date-time in UTC: "YYYY-MM-DDThh:mm:ss", optional fractional seconds, a trailing "Z"; uppercase "T" and "Z", a real calendar date.',
  format: 'date-time',
  pattern: TIMESTAMP_PATTERN,
});

/** A dotted capability name, e.g. "repository.inspect". */
export const CapabilityName = Type.String({
  title: 'CapabilityName',
  description: 'A dotted lowercase capability name, e.g. "repository.inspect".',
  pattern: whole('[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+'),
  maxLength: 128,
});

/** A permission name, e.g. "repository.read". */
export const PermissionName = Type.String({
  title: 'PermissionName',
  description: 'A dotted lowercase permission name, e.g. "repository.read".',
  pattern: whole('[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+'),
  maxLength: 128,
});

/** "MAJOR.MINOR" protocol version, e.g. "1.0". */
export const Version = Type.String({
  title: 'Version',
  description: 'A protocol version as MAJOR.MINOR, e.g. "1.0".',
  pattern: whole('(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})'),
});

/** An I-JSON safe non-negative integer. */
export const Count = (description: string, minimum = 0) => Type.Integer({ minimum, maximum: 9007199254740991, description });

/** A registered error code, e.g. "TASK_TERMINAL"; receivers accept codes added by later minors. */
export const ErrorCode = Type.String({
  title: 'ErrorCode',
  description: 'An error code from the registry (error-codes.json); later minor versions may add codes.',
  pattern: whole('[A-Z][A-Z0-9_]*'),
  maxLength: 64,
});

/** An anyOf of string consts whose static type is the union of `values`: the schema and the type are one list. */
export const literals = <const T extends readonly string[]>(values: T, description: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { description },
  ) as TUnion<{ -readonly [I in keyof T]: TLiteral<T[I]> }>;

/** Any JSON value (task input and output). */
export const JsonValue = Type.Unknown({ description: 'Any JSON value.' });

/** An open JSON object. */
export const JsonObject = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });
