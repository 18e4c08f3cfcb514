/** Kubeconfigs for the fake: a client-node `KubeConfig` object and a file for kubectl. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

export const CONTEXT = 'fake-apiserver';

/** http + skipTLSVerify (client-node refuses plain http without it), namespace `default`. */
export function makeKubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: CONTEXT, server, skipTLSVerify: true }],
    users: [{ name: CONTEXT, token: 'fake-token' }],
    contexts: [{ name: CONTEXT, cluster: CONTEXT, user: CONTEXT, namespace: 'default' }],
    currentContext: CONTEXT,
  });
  return kc;
}

export async function writeKubeconfigFile(path: string, server: string): Promise<void> {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: CONTEXT, cluster: { server } }],
    users: [{ name: CONTEXT, user: { token: 'fake-token' } }],
    contexts: [{ name: CONTEXT, context: { cluster: CONTEXT, user: CONTEXT, namespace: 'default' } }],
    'current-context': CONTEXT,
    preferences: {},
  };
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, stringify(doc), { mode: 0o600 });
}
