/** The workspace binding: task records in a shared folder, the agent runner, the reaper and the mailbox transport (spec: bindings-workspace). */
export { initWorkspace, openWorkspace } from './workspace.ts';
export type { Workspace } from './workspace.ts';
export { DEFAULT_CONFIG, checkConfig } from './config.ts';
export type { ClaimMode, WorkspaceConfig } from './config.ts';
export { WorkspaceError } from './errors.ts';
export type { WorkspaceErrorCode } from './errors.ts';
export {
  CONFIG_FILE,
  STATUS_DIR,
  TASK_DIRS,
  WorkspacePaths,
  isIdentifier,
  parseAwaitingName,
  parseProcessingName,
  parseRecordName,
} from './layout.ts';
export type { ProcessingEntry, RecordStatus, TaskDir } from './layout.ts';
export { checkRecordBytes, newTaskId, recordFromDraft, rejectedRecord } from './record.ts';
export type { HistoryEntry, RecordCheck, RecordProblem, TaskDraft, TaskRecord } from './record.ts';
export { submitTask } from './submit.ts';
export type { Submitted } from './submit.ts';
export { claimAwaiting, claimPending, returnUnchanged } from './claim.ts';
export type { Claim } from './claim.ts';
export { commitTransition, prepare, renderRecord, settleMarker } from './transition.ts';
export type { ClaimRef, Prepared, TransitionOutcome } from './transition.ts';
export { Reaper, afterFailedAttempt } from './reaper.ts';
export type { ReapAction, ReaperOptions } from './reaper.ts';
export { ArtifactRefused, artifactSyntaxProblem, checkRecordArtifacts, openArtifact, readArtifact, writeArtifact } from './artifacts.ts';
export { appendHistory, fullHistory, historyPath, readHistoryFile } from './history.ts';
export { listAgents, publishAgent, readLease, writeHeartbeat, writeLease } from './agents.ts';
export type { AgentInfo, AgentState, Heartbeat, Lease } from './agents.ts';
export { listRecords, locateTask, readLocated } from './find.ts';
export type { ListedRecord, TaskLocation } from './find.ts';
export { cancelTask } from './cancel.ts';
export { approvalOf, decidePlan, forgetPlan, readDecision, readPlan, submissionProblem } from './approval.ts';
export type { Approval, Decided, FileRead, Plan, PlanDecision } from './approval.ts';
export { workspaceStatus } from './status.ts';
export { watchWorkspace } from './events.ts';
export type { WatchOptions, WorkspaceEvent } from './events.ts';
export type { AwaitingInfo, ClaimInfo, FailedInfo, WorkspaceStatus } from './status.ts';
export { runPhase, pipelineNext } from './phase.ts';
export type { DecidedPlan, PhaseContext, PhaseHandler, PhaseOutcome, PlanSubmitted } from './phase.ts';
export { runWorkspaceAgent } from './runner.ts';
export type { RunnerEvent, WorkspaceAgent, WorkspaceAgentOptions } from './runner.ts';
export { MailboxWriter } from './mailbox-writer.ts';
export { MailboxReader, FileDedupStore } from './mailbox-reader.ts';
export type { DedupStore, MailboxDelivery, MailboxReaderOptions } from './mailbox-reader.ts';
export { MailboxTransport, createMailboxTransport, serveMailboxes } from './mailbox-transport.ts';
export type { MailboxServer, MailboxTransportOptions } from './mailbox-transport.ts';
