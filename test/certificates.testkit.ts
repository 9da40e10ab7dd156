/**
 * Certificates made at run time with the machine's openssl, for the tests of TLS and mutual TLS:
 * a certificate authority, a server certificate for 127.0.0.1 and localhost, client certificates
 * it signs, and a second authority whose certificates the first does not trust. Every file lives
 * in a temporary folder that `remove()` deletes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key: the files and their PEM text. */
export interface Issued {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

/** An authority: its certificate and key, and what it can issue. */
export interface Authority extends Issued {
  /** A server certificate for 127.0.0.1 and localhost. */
  server(name?: string): Issued;
  /**
   * A client certificate. `subject` is the subject (default "/CN=<name>"); `san` its subject
   * alternative names in openssl's form (URI:…, DNS:…, email:…), none by default.
   */
  client(name: string, o?: { subject?: string; san?: string }): Issued;
}

/** A folder of certificates made for one test file. */
export interface CertificateKit {
  readonly dir: string;
  /** The trusted authority. */
  readonly ca: Authority;
  /** Another authority, which `ca` does not trust. */
  readonly otherCa: Authority;
  remove(): void;
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function issued(dir: string, name: string): Issued {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

let serial = 1000;

/** Makes an authority named `name` in `dir`. */
function authority(dir: string, name: string): Authority {
  openssl(
    [
      ...['req', '-x509', ...KEY, '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`],
      ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    ],
    dir,
  );
  const self = issued(dir, name);
  const sign = (leaf: string, subject: string, extensions: string): Issued => {
    openssl(['req', ...KEY, '-keyout', `${leaf}.key`, '-out', `${leaf}.csr`, '-subj', subject], dir);
    writeFileSync(join(dir, `${leaf}.ext`), extensions);
    openssl(
      [
        ...['x509', '-req', '-in', `${leaf}.csr`, '-CA', `${name}.pem`, '-CAkey', `${name}.key`, '-set_serial', String(++serial)],
        ...['-out', `${leaf}.pem`, '-days', '2', '-extfile', `${leaf}.ext`],
      ],
      dir,
    );
    return issued(dir, leaf);
  };
  return {
    ...self,
    server: (leaf = `${name}-server`) =>
      sign(leaf, '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n'),
    client: (leaf, o = {}) =>
      sign(
        `${name}-${leaf}`,
        o.subject ?? `/CN=${leaf}`,
        `extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n${o.san ? `subjectAltName=${o.san}\n` : ''}`,
      ),
  };
}

/** Makes a fresh kit: two authorities in a temporary folder. */
export function makeCertificates(): CertificateKit {
  const dir = mkdtempSync(join(tmpdir(), 'tap-certs-'));
  try {
    return {
      dir,
      ca: authority(dir, 'tap-test-ca'),
      otherCa: authority(dir, 'other-ca'),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
