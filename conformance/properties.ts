/**
 * Property-based cases: fast-check command models of the handshake and of the task lifecycle,
 * with a scheduler that reorders independent requests (spec: conformance#properties). The
 * models and fast-check load only when one of these cases runs (property-runs.ts).
 */
import { defineCase, type Case } from './case.ts';

/** core.property.handshake: random handshake sequences on fresh connections. */
export const handshakeProperty = defineCase({
  id: 'core.property.handshake',
  title: 'Random sequences of handshake messages get exactly the replies the handshake rules give (property-based)',
  profile: 'core',
  requirements: ['TAP-HS-014', 'TAP-HS-015', 'TAP-HS-009', 'TAP-HS-011', 'TAP-MSG-002'],
  budgetMs: 60_000,
  run: async (ctx) => (await import('./property-runs.ts')).runHandshakeProperty(ctx),
});

/** tasks.property.lifecycle: random task operations on one session, checked as a whole. */
export const lifecycleProperty = defineCase({
  id: 'tasks.property.lifecycle',
  title: 'Random submits, duplicates, keyed retries, cancels, status and resume requests keep every task rule (property-based)',
  profile: 'tasks',
  requirements: ['TAP-TASK-005', 'TAP-TASK-007', 'TAP-EVT-004', 'TAP-IDEM-001', 'TAP-IDEM-005', 'TAP-CAN-007', 'TAP-RES-002'],
  needs: { capabilities: ['tap.test.counter', 'tap.test.sleep'] },
  // At most three sleeps running (the model's check) and a scheduled pair of counters.
  tasks: 5,
  budgetMs: 70_000,
  run: async (ctx) => (await import('./property-runs.ts')).runLifecycleProperty(ctx),
});

export const propertyCases: Case[] = [handshakeProperty, lifecycleProperty];
