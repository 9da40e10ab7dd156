/** nats-durable profile, Replicas (spec: bindings-nats#replicas). */
import type { Case } from '../../case.ts';
import { clusterSize } from '../../../reference/transports/nats/replicas.ts';
import { DEFAULT_NAMES as S } from '../../../reference/jetstream/names.ts';
import { check, verdictOf } from '../kit.ts';
import { skipped } from '../../verdict.ts';
import { durableCase, replicaProblems, STREAMS, wantedReplicas } from './kit.ts';

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.queue.replicas',
    title: 'On a cluster of three servers or more, the durable streams and TAP_IDEMPOTENCY have three replicas',
    requirements: ['TAP-NATS-070'],
    capability: 'tap.test.echo',
    run: async (_ctx, view) => {
      // spec: bindings-nats#replicas: the cluster's size is what the server's INFO lists.
      const servers = clusterSize(view.nc);
      if (servers === 1)
        return skipped(
          "the agent's server is not part of a cluster, where every stream has one replica: run against an agent on a cluster of three servers to test TAP-NATS-070",
        );
      const found: Array<{ name: string; replicas: number | undefined }> = [];
      for (const name of [...STREAMS.map((s) => s.name), `KV_${S.idempotency}`]) {
        const info = await view.jsm.streams.info(name).catch(() => null);
        if (info) found.push({ name, replicas: info.config.num_replicas });
      }
      const problems = replicaProblems(servers, found);
      return verdictOf(
        `${wantedReplicas(servers)} replicas of each`,
        check(
          problems.length === 0,
          `${problems.join('; ')} (a deployment may choose another number: then this is no fault of the agent's)`,
          `${wantedReplicas(servers)} replicas of ${found.map((f) => f.name).join(', ')}`,
          `${problems.length} differences`,
        ),
      );
    },
  }),
];
