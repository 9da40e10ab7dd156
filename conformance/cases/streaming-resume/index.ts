/** The streaming-resume profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as resumeTaskResume from './resume.task-resume.ts';
import * as resumeRetention from './resume.retention.ts';
import * as resumeReconnect from './resume.reconnect.ts';
import * as resumeDeclinedResume from './resume.declined-resume.ts';
import * as resumeResumeVersion from './resume.resume-version.ts';
import * as idempotencyDuplicateMessages from './idempotency.duplicate-messages.ts';
import * as resumeAttachment from './resume.attachment.ts';
import * as resumeReplayedResume from './resume.replayed-resume.ts';
import * as resumeOrphans from './resume.orphans.ts';
import * as conformanceTargets from './conformance.targets.ts';

export const streamingResumeCases: readonly Case[] = [
  resumeTaskResume,
  resumeRetention,
  resumeReconnect,
  resumeDeclinedResume,
  resumeResumeVersion,
  idempotencyDuplicateMessages,
  resumeAttachment,
  resumeReplayedResume,
  resumeOrphans,
  conformanceTargets,
].flatMap((file) => file.cases);
