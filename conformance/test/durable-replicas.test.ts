import { describe, expect, it } from 'vitest';
import { replicaProblems, wantedReplicas } from '../cases/nats-durable/kit.ts';

describe('nats-durable.queue.replicas judges the replicas by the size of the cluster (spec: bindings-nats#replicas, TAP-NATS-070)', () => {
  it('asks three on a cluster of three or more, as many as there are below that', () => {
    expect([1, 2, 3, 5].map(wantedReplicas)).toEqual([1, 2, 3, 3]);
  });

  it('names each stream of one replica on a cluster of three, and why it matters', () => {
    const problems = replicaProblems(3, [
      { name: 'TAP_TASKS', replicas: 3 },
      { name: 'TAP_RESULTS', replicas: 1 },
      { name: 'KV_TAP_IDEMPOTENCY', replicas: undefined },
    ]);
    expect(problems).toEqual([
      'TAP_RESULTS has 1 replica on a cluster of 3 servers, not 3: the loss of the server holding it stops the durable tasks',
      'KV_TAP_IDEMPOTENCY has 1 replica on a cluster of 3 servers, not 3: the loss of the server holding it stops the durable tasks',
    ]);
  });

  it('passes three replicas of each on a cluster of three', () => {
    expect(replicaProblems(3, [{ name: 'TAP_TASKS', replicas: 3 }])).toEqual([]);
    expect(replicaProblems(4, [{ name: 'TAP_TASKS', replicas: 5 }])).toEqual(['TAP_TASKS has 5 replicas on a cluster of 4 servers, not 3']);
  });
});
