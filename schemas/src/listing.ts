/** Task listing, TAP 1.1: task.list and its reply task.page (spec: tasks#listing). */
import { Type } from '@sinclair/typebox';
import { CapabilityName, Count, Identifier, Label, Timestamp } from './common.ts';
import { TaskStateSchema } from './tasks.ts';

/** The most tasks one task.page holds, and the largest `limit` a task.list may ask for (spec: tasks#listing). */
export const MAX_PAGE_TASKS = 100;

/** An opaque cursor: what a task.page gives in `next_cursor`, handed back unchanged in the next task.list. */
export const Cursor = Label({
  minLength: 1,
  maxLength: 1024,
  description: "An opaque cursor of the agent's making: the next_cursor of a task.page, handed back unchanged.",
});

export const TaskListPayload = Type.Object(
  {
    state: Type.Optional(TaskStateSchema),
    capability: Type.Optional(CapabilityName),
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_PAGE_TASKS, description: 'The most tasks the page may hold; the agent may give fewer.' }),
    ),
  },
  {
    $id: 'task.list.payload.schema.json',
    title: 'TaskListPayload',
    description:
      "Payload of task.list (TAP 1.1): the filter (a state, a capability; both when both are given), the cursor of the page after the previous one, and the page's largest size.",
  },
);

export const TaskSummary = Type.Object(
  {
    task_id: Identifier,
    capability: CapabilityName,
    state: TaskStateSchema,
    created_at: Timestamp,
    updated_at: Timestamp,
    last_sequence: Count('The last sequence already sent for the task.', 1),
  },
  { title: 'TaskSummary', description: 'One task of a task.page, as it stands when the page is sent.' },
);

export const TaskPagePayload = Type.Object(
  {
    tasks: Type.Array(TaskSummary, {
      maxItems: MAX_PAGE_TASKS,
      description: "The page's tasks of the session's principal that match the filter, in the order the agent accepted them.",
    }),
    next_cursor: Type.Optional(Cursor),
  },
  {
    $id: 'task.page.payload.schema.json',
    title: 'TaskPagePayload',
    description:
      'Payload of task.page (TAP 1.1): one page of the listing; next_cursor is present when more tasks may follow and absent on the last page.',
  },
);

export { Identifier };
