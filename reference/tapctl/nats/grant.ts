/**
 * tapctl nats permissions: writes the nats-server users and permissions of a deployment's
 * principals (spec: bindings-nats#security), an Ed25519 key for each, the trust file that holds
 * their public halves (spec: bindings-nats#signed-records), and each user's password. Keys and
 * passwords already in the keys folder are kept, so that adding a principal rotates no one else's.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { newSigningKey, readSigningKey, trustOf, type SigningKey } from '../../trust.ts';
import { CliError, type CommandContext } from '../registry.ts';
import { printJson } from '../workspace/format.ts';
import { permissionsOf, serverConfig, type Deployment, type UserPermissions } from './permissions.ts';

/** Options of `tapctl nats permissions` after parsing. */
export interface GrantOptions extends Deployment {
  out: string;
  keysDir?: string;
  /** nats://host:port of the server, to write each principal's URL with its credentials. */
  url?: string;
  json: boolean;
}

/** The credentials file: each principal's NATS user, password and roles (and URL when --url is given). */
interface Credentials {
  principals: Record<string, { user: string; password: string; roles: string[]; url?: string }>;
}

/** Writes a file only its owner may read. */
function writePrivate(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
  chmodSync(path, 0o600);
}

function readCredentials(path: string): Credentials {
  if (!existsSync(path)) return { principals: {} };
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Credentials;
    if (typeof parsed?.principals !== 'object' || parsed.principals === null) throw new Error('it has no "principals" object');
    return parsed;
  } catch (err) {
    throw new CliError(`the credentials file ${path} cannot be read: ${(err as Error).message}`, {
      hint: 'Move it away to generate new passwords for every principal.',
    });
  }
}

/** The key of `principal` in the keys folder, made when missing. */
function keyOf(dir: string, principal: string): { key: SigningKey; made: boolean } {
  const path = join(dir, `${principal}.key.json`);
  if (existsSync(path)) {
    let key: SigningKey;
    try {
      key = readSigningKey(path);
    } catch (err) {
      throw new CliError((err as Error).message, { hint: 'Move the file away to generate a new key.' });
    }
    if (key.principal !== principal) throw new CliError(`${path} holds the key of ${key.principal}, not of ${principal}`);
    return { key, made: false };
  }
  const key = newSigningKey(principal);
  writePrivate(path, `${JSON.stringify(key, null, 2)}\n`);
  return { key, made: true };
}

/** The URL of a principal: the server's with the user and password in it. */
function urlOf(server: string, user: string, password: string): string {
  const m = /^(nats|tls):\/\/(?:[^@/]*@)?([^/]+)\/?$/i.exec(server);
  if (!m) throw new CliError(`--url ${server} is not nats://host:port`, { usage: true });
  return `${m[1]}://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${m[2]}`;
}

/** Runs `tapctl nats permissions`. */
export async function runGrant(o: GrantOptions, ctx: CommandContext): Promise<number> {
  let users: UserPermissions[];
  try {
    users = permissionsOf(o);
  } catch (err) {
    throw new CliError((err as Error).message, { usage: true });
  }
  const out = resolve(o.out);
  const keysDir = resolve(o.keysDir ?? join(dirname(out), 'keys'));
  mkdirSync(dirname(out), { recursive: true });
  mkdirSync(keysDir, { recursive: true, mode: 0o700 });
  const credentialsPath = join(keysDir, 'credentials.json');
  const previous = readCredentials(credentialsPath);
  const credentials: Credentials = { principals: {} };
  const passwords = new Map<string, string>();
  const keys: SigningKey[] = [];
  const madeKeys: string[] = [];
  for (const u of users) {
    const password = previous.principals[u.user]?.password ?? randomBytes(24).toString('base64url');
    passwords.set(u.user, password);
    credentials.principals[u.user] = { user: u.user, password, roles: u.roles, ...(o.url ? { url: urlOf(o.url, u.user, password) } : {}) };
    const { key, made } = keyOf(keysDir, u.user);
    keys.push(key);
    if (made) madeKeys.push(u.user);
  }
  const header = `nats-server users and permissions of a TAP deployment (spec: bindings-nats#security), by tapctl nats permissions; start with nats-server -js -c ${o.out}`;
  writePrivate(out, serverConfig(users, passwords, header));
  writePrivate(credentialsPath, `${JSON.stringify(credentials, null, 2)}\n`);
  const trustPath = join(keysDir, 'trust.json');
  writeFileSync(trustPath, `${JSON.stringify(trustOf(keys), null, 2)}\n`);
  const summary = {
    config: out,
    keys_dir: keysDir,
    trust_file: trustPath,
    credentials: credentialsPath,
    users: users.map((u) => ({
      user: u.user,
      roles: u.roles,
      key: join(keysDir, `${u.user}.key.json`),
      new_key: madeKeys.includes(u.user),
    })),
  };
  if (o.json) {
    printJson(ctx.io, summary);
    return 0;
  }
  let text = `Wrote ${out}: ${users.length} NATS user${users.length === 1 ? '' : 's'} with the permissions of their roles.\n`;
  for (const u of summary.users) text += `  ${u.user}: ${u.roles.join(', ')}${u.new_key ? ' (new key)' : ''}\n`;
  text += `Keys, the trust file and each user's password are in ${keysDir} (credentials.json, readable by you only).\n`;
  text += `Start the server with: nats-server -js -c ${o.out}\n`;
  const agent = users.find((u) => u.roles.includes('runner')) ?? users.find((u) => u.roles.includes('agent'));
  if (agent)
    text += `An agent then serves with: --nats nats://${agent.user}:<password>@host:port --signing-key ${join(keysDir, `${agent.user}.key.json`)}${agent.roles.includes('runner') ? ` --durable --trust ${trustPath}` : ''}\n`;
  ctx.io.out(text);
  return 0;
}
