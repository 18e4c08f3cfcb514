// Deployments in the pure test world (world.ts): every write rolls out at once, as a Deployment
// controller and kubelet with no delay would — one ReplicaSet per template, named by a hash of it,
// and `replicas` Ready pods labelled with the template labels and that hash. Tests that need a
// rollout in progress edit the status by hand.

import type { V1Deployment, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { LABEL_TEMPLATE_HASH, type Labels } from '../../../src/api/names.ts';
import { podTemplateHash } from '../../support/fake-apiserver/simulation/template-hash.ts';

export interface DeploymentWorld {
  deployments: Map<string, V1Deployment>;
  replicaSets: V1ReplicaSet[];
  pods: V1Pod[];
}

export function templateHash(deployment: V1Deployment): string {
  return podTemplateHash(deployment.spec?.template ?? {});
}

/** A Deployment `name` of `replicas` pods labelled `labels`, running `image`. */
export function deployment(name: string, labels: Labels, replicas = 2, image = 'example/web:1'): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'ns', uid: `uid-deploy-${name}`, resourceVersion: '1', generation: 1 },
    spec: {
      replicas,
      selector: { matchLabels: { ...labels } },
      template: { metadata: { labels: { ...labels } }, spec: { containers: [{ name: 'web', image }] } },
    },
  };
}

/** The Deployment stored and rolled out: its current ReplicaSet holds every pod, Ready; older ones are scaled to 0. */
export function rollOut(world: DeploymentWorld, live: V1Deployment): void {
  const name = live.metadata?.name ?? '';
  const uid = live.metadata?.uid;
  const hash = templateHash(live);
  const replicas = live.spec?.replicas ?? 1;
  const rsName = `${name}-${hash}`;
  world.deployments.set(name, {
    ...live,
    status: {
      observedGeneration: live.metadata?.generation,
      replicas,
      updatedReplicas: replicas,
      readyReplicas: replicas,
      availableReplicas: replicas,
    },
  });
  const owned = (item: V1ReplicaSet) => item.metadata?.ownerReferences?.some((owner) => owner.uid === uid) === true;
  world.replicaSets = world.replicaSets.map((item) =>
    owned(item) && item.metadata?.name !== rsName
      ? { ...item, spec: { ...item.spec, replicas: 0 } as V1ReplicaSet['spec'] }
      : item,
  );
  const labels = { ...live.spec?.template?.metadata?.labels, [LABEL_TEMPLATE_HASH]: hash };
  if (!world.replicaSets.some((item) => item.metadata?.name === rsName)) {
    world.replicaSets.push({
      metadata: {
        name: rsName,
        namespace: 'ns',
        uid: `uid-rs-${rsName}`,
        labels,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid: uid ?? '', controller: true }],
      },
      spec: {
        replicas,
        selector: { matchLabels: { ...live.spec?.selector?.matchLabels, [LABEL_TEMPLATE_HASH]: hash } },
        template: { ...live.spec?.template, metadata: { ...live.spec?.template?.metadata, labels } },
      },
    });
  }
  const ownPods = new Set(world.replicaSets.filter(owned).map((item) => item.metadata?.name));
  world.pods = world.pods.filter((item) => !ownPods.has(item.metadata?.labels?.['test/replicaset'] ?? ''));
  for (let index = 0; index < replicas; index++) {
    world.pods.push({
      metadata: { name: `${rsName}-${index}`, labels: { ...labels, 'test/replicaset': rsName } },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
  }
}

/** The Deployment gone with its ReplicaSets and pods (as the garbage collector takes them). */
export function removeDeployment(world: DeploymentWorld, name: string): void {
  const uid = world.deployments.get(name)?.metadata?.uid;
  world.deployments.delete(name);
  const gone = new Set(
    world.replicaSets
      .filter((item) => item.metadata?.ownerReferences?.some((owner) => owner.uid === uid))
      .map((item) => item.metadata?.name),
  );
  world.replicaSets = world.replicaSets.filter((item) => !gone.has(item.metadata?.name));
  world.pods = world.pods.filter((item) => !gone.has(item.metadata?.labels?.['test/replicaset'] ?? ''));
}
