/** The workspace task record: a task as a file (spec: bindings-workspace#task-record). */
import { Type, type Static } from '@sinclair/typebox';
import { CONTROL, Count, ErrorCode, Identifier, JsonValue, Label, literals, Timestamp, whole } from './common.ts';

const Phase = Type.String({ pattern: whole('[a-z0-9][a-z0-9_-]*(\\.[a-z0-9_-]+)*'), maxLength: 128, description: 'A phase name.' });

/**
 * A path relative to artifacts/ (spec: bindings-workspace#artifacts): not absolute (no leading "/",
 * no drive letter), no ".." segment, no backslash, no control character or line separator. The
 * character class excludes every line terminator, so "." in the look-ahead sees the whole string.
 */
const ArtifactPath = Type.String({
  description:
    'A path relative to artifacts/: not absolute (no leading "/", no drive letter), no ".." segment, no backslash, no control character, line break or line/paragraph separator.',
  minLength: 1,
  maxLength: 1024,
  pattern: whole(`(?!/)(?![A-Za-z]:)(?!(.*/)?\\.\\.(/|$))[^\\\\${CONTROL}]+`),
});

export const HistoryEntry = Type.Object(
  {
    agent: Identifier,
    phase: Phase,
    timestamp: Timestamp,
    input: JsonValue,
    output: JsonValue,
    artifacts: Type.Array(ArtifactPath, { description: 'Artifacts the phase produced.' }),
    summary: Type.Optional(Type.Boolean({ description: 'True for the entry that summarizes compacted history.' })),
    epoch: Type.Optional(Count('The claim that ran this phase.')),
    attempts: Type.Optional(Count('Claims of this phase that ended without finishing it, before this one.')),
  },
  { title: 'HistoryEntry', description: 'What one agent did in one phase.' },
);

export const TaskRecord = Type.Object(
  {
    protocol: Type.String({
      pattern: whole('tap/(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})'),
      description: 'The protocol version of the record.',
    }),
    task_id: Identifier,
    created_at: Timestamp,
    current_phase: Type.Union([Phase, Type.Null()], { description: 'The phase last finished, or null before the first.' }),
    next_phase: Type.Union([Phase, Type.Null()], { description: 'The phase to run next, or null when the task is finished.' }),
    metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'Open metadata.' }),
    context: Type.Object(
      {
        history: Type.Array(HistoryEntry, { description: 'What happened so far, oldest first (older entries may be compacted).' }),
        current_input: JsonValue,
        environment: Type.Object(
          {
            working_directory: Label({ maxLength: 4096, description: 'Where the agent works.' }),
            allowed_tools: Type.Array(Label({ maxLength: 256 }), { description: 'Tools the agent may use.' }),
          },
          { description: 'The environment the agent works in.' },
        ),
      },
      { description: 'What the next agent needs to know.' },
    ),
    requirements: Type.Object(
      {
        target_agent: Type.Union([Identifier, Type.Literal('')], {
          description: 'The agent that must take the task, or "" for any agent serving the phase.',
        }),
        expected_output_format: Label({ maxLength: 256, description: 'The format the output should have.' }),
        validation_rules: Type.Array(Type.String({ maxLength: 4096 }), { description: 'Rules the output must satisfy.' }),
        timeout_seconds: Count('How long one phase may take.', 1),
      },
      { description: 'What the task requires of the agent.' },
    ),
    state: Type.Object(
      {
        attempts: Count('How many times the task was claimed without finishing its phase.'),
        epoch: Count('Incremented by every claim; the fencing token of the claim.'),
        last_error: Type.Union(
          [Type.Null(), Type.Object({ code: ErrorCode, message: Type.String({ maxLength: 8192 }), at: Type.Optional(Timestamp) })],
          { description: 'The last error, or null.' },
        ),
        checkpoint: Type.Union([Type.Null(), Type.Record(Type.String(), Type.Unknown())], { description: 'The last checkpoint, or null.' }),
        processed_by: Type.Union([Identifier, Type.Null()], { description: 'The agent that holds or last held the task.' }),
        status: Type.Optional(
          literals(
            ['pending', 'running', 'cancelling', 'awaiting_approval', 'completed', 'failed', 'timed_out', 'cancelled'],
            'The task state the record is in.',
          ),
        ),
      },
      { description: 'Bookkeeping of claims and failures.' },
    ),
    history_ref: Type.Optional(
      Type.String({
        pattern: whole('[a-z0-9][a-z0-9_.-]*\\.jsonl'),
        maxLength: 160,
        description: 'A bare file name under tasks/history/ holding compacted history.',
      }),
    ),
  },
  {
    $id: 'task-record.schema.json',
    title: 'TaskRecord',
    description: 'A task in the workspace binding: tasks/<dir>/<task_id>.tap.json.',
  },
);
export type TaskRecord = Static<typeof TaskRecord>;

/** tap-workspace.json: the settings a workspace is created with (spec: bindings-workspace#configuration). */
export const WorkspaceConfig = Type.Object(
  {
    protocol: Type.String({
      pattern: whole('tap/(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})'),
      description: 'The protocol version of the workspace.',
    }),
    claim_mode: Type.Union([Type.Literal('rename'), Type.Literal('lock')], {
      description: 'How claims are made: atomic rename, or link-count lock files for file systems where rename is not atomic.',
    }),
    lease_ms: Count('How long a claim lives without renewal before the reaper may return it.', 100),
    max_attempts: Count('Claims of one phase before the task becomes a dead letter (MAX_ATTEMPTS).', 1),
    history_limit: Count('History entries kept in the record before older ones are compacted.', 2),
  },
  { $id: 'workspace-config.schema.json', title: 'WorkspaceConfig', description: 'The settings of a workspace, fixed when it is created.' },
);
export type WorkspaceConfig = Static<typeof WorkspaceConfig>;
