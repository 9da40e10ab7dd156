/**
 * Scalar building blocks shared by every TAP schema.
 * A schema carrying `$id` here is emitted as its own file and referenced by relative `$ref`.
 */
import { Type, type Static } from '@sinclair/typebox';

/** Ids that may become file names: task, agent, plan and key ids (spec: envelope#identifiers). */
export const Identifier = Type.String({
  $id: 'identifier.schema.json',
  title: 'Identifier',
  description:
    'An id that may become a file name: lowercase ASCII letters, digits, "_" and "-", in dot-separated segments, starting with a letter or digit; 1 to 128 bytes.',
  pattern: '^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9_-]+)*$',
  minLength: 1,
  maxLength: 128,
});
export type Identifier = Static<typeof Identifier>;

/** A message id: unique per sender within a session (spec: envelope#message-id). */
export const MessageId = Type.String({
  title: 'MessageId',
  description: 'Unique per sender within a session; 1 to 128 characters of [A-Za-z0-9._:-].',
  pattern: '^[A-Za-z0-9._:-]{1,128}$',
});

/** An RFC 3339 timestamp in UTC (spec: envelope#timestamps). */
export const Timestamp = Type.String({
  title: 'Timestamp',
  description: 'An RFC 3339 date-time in UTC, written with a trailing "Z".',
  format: 'date-time',
  pattern: 'Z$',
});

/** A dotted capability name, e.g. "repository.inspect". */
export const CapabilityName = Type.String({
  title: 'CapabilityName',
  description: 'A dotted lowercase capability name, e.g. "repository.inspect".',
  pattern: '^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$',
  maxLength: 128,
});

/** A permission name, e.g. "repository.read". */
export const PermissionName = Type.String({
  title: 'PermissionName',
  description: 'A dotted lowercase permission name, e.g. "repository.read".',
  pattern: '^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$',
  maxLength: 128,
});

/** "MAJOR.MINOR" protocol version, e.g. "1.0". */
export const Version = Type.String({
  title: 'Version',
  description: 'A protocol version as MAJOR.MINOR, e.g. "1.0".',
  pattern: '^(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})$',
});

/** An I-JSON safe non-negative integer. */
export const Count = (description: string, minimum = 0) => Type.Integer({ minimum, maximum: 9007199254740991, description });

/** A registered error code, e.g. "TASK_TERMINAL"; receivers accept codes added by later minors. */
export const ErrorCode = Type.String({
  title: 'ErrorCode',
  description: 'An error code from the registry (error-codes.json); later minor versions may add codes.',
  pattern: '^[A-Z][A-Z0-9_]*$',
  maxLength: 64,
});

/** Any JSON value (task input and output). */
export const JsonValue = Type.Unknown({ description: 'Any JSON value.' });

/** An open JSON object. */
export const JsonObject = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });
