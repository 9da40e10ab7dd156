import { describe, expect, it } from 'vitest';
import { checkReplicas, clusterSize, replicasFor } from './replicas.ts';

const server = (info: { cluster?: string; connect_urls?: string[] } | undefined) => ({ info }) as Parameters<typeof clusterSize>[0];
const urls = (n: number): string[] => Array.from({ length: n }, (_, i) => `127.0.0.1:${4222 + i}`);

describe('replicas of the streams and buckets a member creates (spec: bindings-nats#replicas, TAP-NATS-070, TAP-REG-065)', () => {
  it('gives one replica on a single server, whatever it lists', () => {
    expect(replicasFor(server({}))).toBe(1);
    expect(replicasFor(server({ connect_urls: urls(3) }))).toBe(1);
    expect(replicasFor(server(undefined))).toBe(1);
  });

  it('gives three on a cluster of three servers or more, as many as it has below that', () => {
    expect(replicasFor(server({ cluster: 'c', connect_urls: urls(3) }))).toBe(3);
    expect(replicasFor(server({ cluster: 'c', connect_urls: urls(5) }))).toBe(3);
    expect(replicasFor(server({ cluster: 'c', connect_urls: urls(2) }))).toBe(2);
    // A server that lists itself twice, or no one (no_advertise), counts as what it lists, at least itself.
    expect(clusterSize(server({ cluster: 'c', connect_urls: ['a:1', 'a:1'] }))).toBe(1);
    expect(clusterSize(server({ cluster: 'c' }))).toBe(1);
  });

  it('takes the number an option gives, and refuses one JetStream cannot keep', () => {
    expect(replicasFor(server({}), 3)).toBe(3);
    expect(replicasFor(server({ cluster: 'c', connect_urls: urls(3) }), 1)).toBe(1);
    expect(() => checkReplicas(0)).toThrow(/from 1 to 5, not 0/);
    expect(() => checkReplicas(2.5)).toThrow(/whole number/);
    expect(() => checkReplicas(6)).toThrow(/from 1 to 5/);
  });
});
