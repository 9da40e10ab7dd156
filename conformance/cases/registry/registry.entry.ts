/** registry profile, Entries (spec: registry#entry). */
import { type Case, defineCase } from '../../case.ts';
import { currentEntry, REG, withBucket } from './kit.ts';
import { check, jsonEqual, show, verdictOf } from '../kit.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { targetTls } from '../../target.ts';
import { MAX_ENTRY_BYTES } from '../../../reference/mesh/entry.ts';
import { parseNatsUrl } from '../../../reference/transports/nats/url.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.entry.card',
    title: 'The agent keeps a valid entry under its agent id whose card is its handshake card',
    profile: 'registry',
    requirements: ['TAP-REG-001', 'TAP-REG-002', 'TAP-REG-003', 'TAP-REG-005', 'TAP-REG-007', 'TAP-REG-039', 'TAP-REG-047'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry, write } = await currentEntry(kv, agentId);
        const card = ctx.card;
        return verdictOf(
          'the entry is valid and carries the handshake card',
          check(entry.agent_id === agentId, 'the entry under the agent id names another agent', agentId, show(entry.agent_id)),
          check(
            jsonEqual(entry.card, card),
            'the registered card differs from the card of handshake.ack',
            show(card, 200),
            show(entry.card, 200),
          ),
          check(
            entry.load.max_concurrent_tasks === card?.limits?.max_concurrent_tasks,
            'load.max_concurrent_tasks differs from the card limits.max_concurrent_tasks',
            show(card?.limits?.max_concurrent_tasks),
            show(entry.load.max_concurrent_tasks),
          ),
          check(
            entry.versions.includes('1.0'),
            'versions leaves out 1.0, the version the handshake chose',
            '["1.0"]',
            show(entry.versions),
          ),
          check(
            write.bytes <= MAX_ENTRY_BYTES,
            `the entry is ${write.bytes} bytes of JSON, more than an entry may be`,
            `<= ${MAX_ENTRY_BYTES} bytes`,
            `${write.bytes} bytes`,
          ),
        );
      }),
  }),
  defineCase({
    id: 'registry.entry.endpoints',
    title: "Every endpoint of the entry accepts connections, and a NATS endpoint names the agent's id",
    profile: 'registry',
    requirements: ['TAP-REG-004', 'TAP-REG-044'],
    needs: REG,
    run: (ctx) =>
      withBucket(ctx, async (kv, agentId) => {
        const { entry } = await currentEntry(kv, agentId);
        const problems: (Outcome | null)[] = [];
        const tls = targetTls(ctx.env.target);
        for (const ep of entry.endpoints) {
          try {
            if (ep.binding === 'nats') {
              const path = parseNatsUrl(ep.url).agentId;
              problems.push(
                check(path === agentId, `the NATS endpoint ${ep.url} does not name the agent id in its path`, agentId, show(path)),
              );
              const { connectNatsTransport } = await import('../../../reference/transports/nats/connect.ts');
              const t = await connectNatsTransport(ep.url, {
                timeoutMs: ctx.scaled(5000),
                ...(ep.prefix ? { prefix: ep.prefix } : {}),
                ...(tls ? { tls } : {}),
              });
              t.terminate();
            } else if (ep.binding === 'websocket') {
              const { connectWebSocket } = await import('../../../reference/transports/websocket.ts');
              const t = await connectWebSocket(ep.url, {
                protocols: ['tap.v1'],
                handshakeTimeout: ctx.scaled(5000),
                ...(tls ? { tls } : {}),
              });
              await t.close({ code: 1000, reason: 'checked' });
            }
            ctx.note(`${ep.binding} endpoint ${ep.url} accepted a connection`);
          } catch (err) {
            problems.push(
              fail(`the ${ep.binding} endpoint ${ep.url} accepts no connection: ${(err as Error).message}`, 'a connection', 'refused'),
            );
          }
        }
        return verdictOf(`${entry.endpoints.length} endpoint(s) accept connections`, ...problems);
      }),
  }),
];
