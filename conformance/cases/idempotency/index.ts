/** The idempotency profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as idempotencyDuplicateMessages from './idempotency.duplicate-messages.ts';
import * as idempotencyRepeatedInit from './idempotency.repeated-init.ts';
import * as idempotencyIdempotencyKeys from './idempotency.idempotency-keys.ts';
import * as idempotencyTaskIdReuse from './idempotency.task-id-reuse.ts';
import * as idempotencyRetryableEndings from './idempotency.retryable-endings.ts';
import * as idempotencyDuplicateTable from './idempotency.duplicate-table.ts';
import * as conformanceTargets from './conformance.targets.ts';

export const idempotencyCases: readonly Case[] = [
  idempotencyDuplicateMessages,
  idempotencyRepeatedInit,
  idempotencyIdempotencyKeys,
  idempotencyTaskIdReuse,
  idempotencyRetryableEndings,
  idempotencyDuplicateTable,
  conformanceTargets,
].flatMap((file) => file.cases);
