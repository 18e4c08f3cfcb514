// What the dashboard suites share: a release's status written as the proxy writes it (no proxy runs
// in them), and two dashboards on the fake's namespace, one that acts and one --read-only.

import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../../src/api/names.ts';
import { startDashboard, type Dashboard } from '../../../src/plugin/dashboard/server.ts';
import { NAMESPACE, type Cluster } from '../../support/cluster/release-cluster.ts';

export function writeStatus(cluster: Cluster, name: string, status: object): Promise<unknown> {
  return cluster.custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** On ports the OS picks, synced: the first list of the releases is in. */
export async function startDashboards(cluster: Cluster): Promise<{ dashboard: Dashboard; readOnly: Dashboard }> {
  const common = { kubeConfig: cluster.api.kubeConfig, namespace: NAMESPACE, port: 0, address: '127.0.0.1' };
  const dashboard = await startDashboard({ ...common, readOnly: false });
  const readOnly = await startDashboard({ ...common, readOnly: true });
  await Promise.all([dashboard.synced, readOnly.synced]);
  return { dashboard, readOnly };
}
