/**
 * The app the real-cluster suites release: a Deployment `web` of `app.canary-l4.test/web:1.0` (two
 * pods, a readiness probe on its first port, a preStop pause), on the container ports given.
 */
import type { V1ContainerPort } from '@kubernetes/client-node';
import { APP_IMAGE_REGISTRY } from './node/images.ts';

export const webImage = (version: string) => `${APP_IMAGE_REGISTRY}/web:${version}`;

export function webDeployment(namespace: string, ports: readonly V1ContainerPort[]) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'web',
              image: webImage('1.0'),
              ports: [...ports],
              readinessProbe: { tcpSocket: { port: ports[0]!.containerPort }, periodSeconds: 1 },
              // Its server stops accepting at SIGTERM (as nginx does); kube-proxy learns of a terminating
              // pod a moment after the kubelet signals it, so a rollout that must lose no connection
              // waits first, on any cluster. (The proxy's own pods do the same.)
              lifecycle: { preStop: { exec: { command: ['sleep', '3'] } } },
            },
          ],
        },
      },
    },
  };
}
