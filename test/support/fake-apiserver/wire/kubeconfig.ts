/** Kubeconfigs for the fake: a client-node `KubeConfig` object and a file for kubectl. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { Http1KubeConfig } from '../../../../src/kube/client.ts';

export const CONTEXT = 'fake-apiserver';

/** http + skipTLSVerify (client-node refuses plain http without it), namespace `default`. */
export function makeKubeConfig(server: string): KubeConfig {
  const kc = new Http1KubeConfig();
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
    // client-node (canary-l4 proxy --kubeconfig) refuses plain http without it; kubectl ignores it on http.
    clusters: [{ name: CONTEXT, cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: CONTEXT, user: { token: 'fake-token' } }],
    contexts: [{ name: CONTEXT, context: { cluster: CONTEXT, user: CONTEXT, namespace: 'default' } }],
    'current-context': CONTEXT,
    preferences: {},
  };
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, stringify(doc), { mode: 0o600 });
}
