/**
 * A self-signed X.509 client certificate made with node:crypto alone (ECDSA P-256, SHA-256), for
 * the security case that presents a certificate no trusted authority signed: it may copy the
 * identity of the run's own certificate, so only the signature chain tells them apart (spec:
 * security#client-certificates). DER is written by hand; nothing here parses.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

/** The names a certificate carries: its subject's common name and its subject alternative names. */
export interface CertificateNames {
  cn?: string;
  uri?: string[];
  dns?: string[];
  email?: string[];
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One DER element: tag, length, contents. */
function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const seq = (...items: Buffer[]) => der(0x30, ...items);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const groups: number[] = [];
    for (let v = n; ; v = Math.floor(v / 128)) {
      groups.unshift(v % 128);
      if (v < 128) break;
    }
    bytes.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return der(0x06, Buffer.from(bytes));
}

const utf8 = (s: string) => der(0x0c, Buffer.from(s, 'utf8'));

function utcTime(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0');
  const text = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return der(0x17, Buffer.from(text, 'ascii'));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function extensions(names: CertificateNames): Buffer {
  const general = [
    ...(names.email ?? []).map((e) => der(0x81, Buffer.from(e, 'ascii'))),
    ...(names.dns ?? []).map((d) => der(0x82, Buffer.from(d, 'ascii'))),
    ...(names.uri ?? []).map((u) => der(0x86, Buffer.from(u, 'ascii'))),
  ];
  const list = [
    // basicConstraints: not an authority.
    seq(oid('2.5.29.19'), der(0x04, seq())),
    // extendedKeyUsage: clientAuth.
    seq(oid('2.5.29.37'), der(0x04, seq(oid('1.3.6.1.5.5.7.3.2')))),
    ...(general.length > 0 ? [seq(oid('2.5.29.17'), der(0x04, seq(...general)))] : []),
  ];
  return der(0xa3, seq(...list));
}

/** A self-signed client certificate and its key, both PEM, valid from an hour ago for a day. */
export function selfSignedClientCertificate(names: CertificateNames): { cert: string; key: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  // A positive INTEGER in its minimal DER form: the first byte neither sets the sign bit nor is 0
  // (a 0 before a byte below 0x80 is the padding DER forbids, and TLS libraries refuse it).
  const serial = randomBytes(8);
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  const name = seq(der(0x31, seq(oid('2.5.4.3'), utf8(names.cn ?? 'tap-conform untrusted client'))));
  const now = Date.now();
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_SHA256,
    name,
    seq(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions(names),
  );
  const signature = sign('sha256', tbs, privateKey);
  const cert = seq(tbs, ECDSA_SHA256, der(0x03, Buffer.from([0]), signature));
  const lines = cert
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${lines}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
