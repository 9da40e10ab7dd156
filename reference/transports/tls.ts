/**
 * TLS material of the WebSocket and NATS bindings, and the principal a verified client
 * certificate authenticates (spec: security#client-certificates).
 */
import { readFileSync } from 'node:fs';
import type { PeerCertificate, TLSSocket } from 'node:tls';

/** PEM text or bytes, as Node's TLS options take them. */
export type Pem = string | Buffer;

/**
 * The TLS side of an endpoint: its own certificate and key, and the authorities it trusts. An
 * agent that listens with `ca` asks every client for a certificate and refuses a connection
 * without one that `ca` verifies (mutual TLS); a client with `ca` trusts only those authorities
 * for the server's certificate.
 */
export interface TlsOptions {
  /** This endpoint's certificate chain (PEM). */
  cert?: Pem;
  /** The private key of `cert` (PEM). */
  key?: Pem;
  /** The authorities this endpoint trusts for the other end's certificate (PEM); default: the system's (server certificates only). */
  ca?: Pem;
}

/** Where the PEM files of a TlsOptions are, as a command line names them. */
export interface TlsFiles {
  cert?: string;
  key?: string;
  ca?: string;
}

/** Reads the files of `files`; throws one line naming the file that could not be read. */
export function readTlsFiles(files: TlsFiles): TlsOptions {
  const out: TlsOptions = {};
  for (const [name, path] of Object.entries(files) as [keyof TlsFiles, string | undefined][]) {
    if (path === undefined) continue;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the TLS ${name} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!text.includes('-----BEGIN ')) throw new Error(`the TLS ${name} file ${path} holds no PEM block (-----BEGIN …-----)`);
    out[name] = text;
  }
  return out;
}

/** The subject alternative names of a certificate, in Node's `subjectaltname` form, as [kind, value] pairs. */
export function alternativeNames(subjectaltname: string | undefined): [string, string][] {
  const out: [string, string][] = [];
  // Node quotes a value that holds a comma or a quote as a JSON string (DNS:"a,b").
  const entry = /(?:^|, )([A-Za-z][A-Za-z ]*):("(?:[^"\\]|\\.)*"|[^,]*)/g;
  for (const m of (subjectaltname ?? '').matchAll(entry)) {
    let value = m[2]!;
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        continue;
      }
    }
    out.push([m[1]!, value]);
  }
  return out;
}

/**
 * The principal a verified client certificate authenticates: `x509:uri:<URI>` for its first URI
 * subject alternative name (a SPIFFE id, say), else `x509:dns:<name>` for its first DNS name,
 * else `x509:email:<address>`, else `x509:cn:<common name>` of its subject; undefined for a
 * certificate that names nobody (spec: security#client-certificates).
 */
export function certificatePrincipal(cert: Pick<PeerCertificate, 'subject' | 'subjectaltname'> | undefined): string | undefined {
  if (!cert) return undefined;
  const names = alternativeNames(cert.subjectaltname);
  for (const [kind, label] of [
    ['URI', 'uri'],
    ['DNS', 'dns'],
    ['email', 'email'],
  ] as const) {
    const found = names.find(([k, v]) => k === kind && v !== '');
    if (found) return `x509:${label}:${found[1]}`;
  }
  const cn = (cert.subject as Record<string, string | string[] | undefined> | undefined)?.CN;
  const first = Array.isArray(cn) ? cn[0] : cn;
  return first !== undefined && first !== '' ? `x509:cn:${first}` : undefined;
}

/** What a TLS connection's client proved: a verified certificate's principal, or why there is none. */
export type ClientIdentity = { principal: string } | { refused: 401 | 403; reason: string };

/**
 * Judges the client certificate of a TLS connection of an endpoint that requires one: its
 * principal when the trusted authorities verified it, else the HTTP status and the sentence to
 * refuse it with (401 without a certificate, 403 for one that did not verify or names nobody).
 */
export function clientIdentity(
  socket: TLSSocket,
  principalOf: (cert: PeerCertificate) => string | undefined = certificatePrincipal,
): ClientIdentity {
  const cert = socket.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0)
    return { refused: 401, reason: 'this agent requires a client certificate: connect with one its certificate authority signed' };
  if (!socket.authorized) {
    const why = socket.authorizationError instanceof Error ? socket.authorizationError.message : String(socket.authorizationError);
    return { refused: 403, reason: `the client certificate was refused (${why}): use one that this agent's certificate authority signed` };
  }
  const principal = principalOf(cert);
  if (principal === undefined)
    return { refused: 403, reason: 'the client certificate names nobody: it needs a subject alternative name or a common name' };
  return { principal };
}
