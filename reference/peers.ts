/**
 * The optional peer dependencies of the package (ARCHITECTURE.md, "Package shape"): a stdio or
 * WebSocket user installs neither the NATS client nor json-schema-to-typescript. Each is loaded on
 * first use; when it is absent, the use fails with one sentence that names the npm command.
 */

/** The NATS client's packages, as package.json's peerDependencies name them. */
export const NATS_PEERS = ['@nats-io/transport-node@^3.3.1', '@nats-io/jetstream@^3.3.1', '@nats-io/kv@^3.3.1'] as const;

/** The TypeScript type generator's package (tapctl gen-types --lang ts). */
export const TYPESCRIPT_GENERATOR_PEER = 'json-schema-to-typescript@^16.0.0';

/** A use of an optional peer dependency that is not installed. */
export class MissingPeerError extends Error {
  /** The command that installs what is missing. */
  readonly install: string;
  constructor(what: string, packages: readonly string[]) {
    const install = `npm install ${packages.map((p) => `'${p}'`).join(' ')}`;
    super(
      `${what} needs ${packages.map((p) => p.replace(/@[^@]*$/, '')).join(', ')}, optional peer dependencies of tap-agent-protocol that are not installed here: run ${install}`,
    );
    this.name = 'MissingPeerError';
    this.install = install;
  }
}

/** True for the error of an import whose package (or one it needs) is not installed. */
export function isModuleNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** Imports an optional peer: its module, or undefined when it is not installed (any other failure is thrown). */
export async function optionalImport<T>(load: () => Promise<T>): Promise<T | undefined> {
  try {
    return await load();
  } catch (err) {
    if (isModuleNotFound(err)) return undefined;
    throw err;
  }
}
