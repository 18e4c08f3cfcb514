/**
 * The control plane's credentials, made fresh in a directory: a CA, kube-apiserver's serving
 * certificate signed by it (for 127.0.0.1, localhost and the in-cluster names), the ServiceAccount
 * token signing key pair, and a static token file with one cluster-admin token (the control plane's
 * own components and the test's admin client use it; everything else gets ServiceAccount tokens).
 * Certificates come from the openssl command line; keys from node:crypto.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPublicKey: string;
  readonly tokenFile: string;
  /** The cluster-admin bearer token (group system:masters). */
  readonly adminToken: string;
  /** The CA certificate, PEM. */
  readonly caPem: string;
}

const run = promisify(execFile);

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (err) {
    throw new Error(
      `openssl ${args[0]} failed (the cluster's certificates need the openssl command): ${(err as Error).message.split('\n')[0]}`,
    );
  }
}

function writeKey(path: string, type: 'ec' | 'rsa'): { publicPem: string } {
  const { privateKey, publicKey } =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      : generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  return { publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** `altIps`: the addresses the serving certificate must also name (the cluster IP of `kubernetes`). */
export async function makePki(dir: string, altIps: readonly string[]): Promise<Pki> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = (name: string) => join(dir, name);
  writeKey(file('ca.key'), 'ec');
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '3650',
    '-subj',
    '/CN=canary-l4-cluster-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  writeKey(file('apiserver.key'), 'ec');
  const names = [
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
    'IP:127.0.0.1',
    ...altIps.map((ip) => `IP:${ip}`),
  ];
  await openssl([
    'req',
    '-new',
    '-key',
    file('apiserver.key'),
    '-out',
    file('apiserver.csr'),
    '-subj',
    '/CN=kube-apiserver',
    '-addext',
    `subjectAltName=${names.join(',')}`,
    '-addext',
    'extendedKeyUsage=serverAuth',
    '-addext',
    'keyUsage=critical,digitalSignature,keyEncipherment',
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    file('apiserver.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('apiserver.crt'),
    '-days',
    '365',
    '-copy_extensions',
    'copy',
  ]);
  const { publicPem } = writeKey(file('sa.key'), 'rsa');
  writeFileSync(file('sa.pub'), publicPem);
  const adminToken = randomBytes(24).toString('hex');
  writeFileSync(file('tokens.csv'), `${adminToken},canary-l4-admin,canary-l4-admin,"system:masters"\n`, {
    mode: 0o600,
  });
  return {
    dir,
    caCert: file('ca.crt'),
    caKey: file('ca.key'),
    servingCert: file('apiserver.crt'),
    servingKey: file('apiserver.key'),
    serviceAccountKey: file('sa.key'),
    serviceAccountPublicKey: file('sa.pub'),
    tokenFile: file('tokens.csv'),
    adminToken,
    caPem: readFileSync(file('ca.crt'), 'utf8'),
  };
}
