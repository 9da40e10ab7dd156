/**
 * A Mesh on a NATS server: one NATS connection for the registry's watch and every session, the
 * registry bucket opened (spec: registry#nats), and the Mesh on top. Closing the Mesh closes it.
 */
import { connect } from '../transports/nats/client.ts';
import { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from '../transports/nats/url.ts';
import type { TrustFile } from '../trust.ts';
import { Mesh, type MeshOptions } from './mesh.ts';
import { viewOf } from './registry-view.ts';
import { openRegistry, type OpenRegistryOptions } from './registry.ts';
import { MissingPeerError } from '../peers.ts';
import { requireAgentId } from '../client/options.ts';

/** Options of `connectMesh`: the Mesh's, without the registry and connection it makes itself. */
export type ConnectMeshOptions = Omit<MeshOptions, 'registry' | 'connect'> & {
  registry?: OpenRegistryOptions;
  /** Route only to agents whose entries their key signed, by this trust file (spec: registry#signatures). */
  trust?: TrustFile;
  requestTimeoutMs?: number;
};

/** Connects to the NATS server at `url` and returns a Mesh reading its registry. */
export async function connectMesh(url: string, options: ConnectMeshOptions): Promise<Mesh> {
  requireAgentId(options, 'connectMesh', 'my.coordinator');
  const address = parseNatsUrl(url);
  const nc = await connect({
    ...natsClientOptions(address),
    name: `tap mesh requester ${options.agentId}`,
    ...LEAN_CLIENT,
  }).catch((err: Error) => {
    // Without the NATS client there is nothing to connect with: say what to install (reference/peers.ts).
    if (err instanceof MissingPeerError) throw err;
    throw new Error(`could not connect to the mesh's NATS server at ${address.servers.join(',')}: ${err.message}`, { cause: err });
  });
  try {
    const registry = await openRegistry(nc, { ...options.registry, ...(options.trust ? { trust: options.trust } : {}) });
    const view = await viewOf(registry);
    const { registry: _r, trust: _t, requestTimeoutMs, ...rest } = options;
    const mesh = new Mesh({
      ...rest,
      registry: view,
      nats: { nc, ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}) },
      onClose: async () => {
        view.stop();
        await nc.drain().catch(() => undefined);
      },
    });
    return mesh;
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw err;
  }
}
