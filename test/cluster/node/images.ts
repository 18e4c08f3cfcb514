/**
 * What the simulated node's images are here: the image → process table of the kubelet simulation.
 *   - `canary-l4` (any registry, any tag: `canary-l4:0.1.0`, `registry.example/canary-l4:0.2`):
 *     this checkout's `bin/canary-l4`, told to bind its pod's address (admin and proxy ports), as
 *     its own network namespace would make every address it binds;
 *   - `app.canary-l4.test/<name>:<tag>`: a small server (app-server.ts) on every container port,
 *     answering with the image (`app.canary-l4.test/web:v2`), so a client sees which version answered;
 *   - `registry.k8s.io/gateway-api/echo-basic:<tag>`: the Gateway API conformance suite's backend, its HTTP,
 *     TCP and UDP echo servers (echo-basic/main.ts) on the pod's address;
 *   - `registry.k8s.io/coredns/coredns:<tag>`: a DNS server answering as the whoami plugin (coredns.ts), the
 *     conformance suite's UDPRoute backend.
 * Any other image cannot be pulled.
 */
import type { V1Container } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import type { Image } from './kubelet.ts';

const CANARY_L4_BIN = fileURLToPath(new URL('../../../bin/canary-l4', import.meta.url));
const APP_SERVER = fileURLToPath(new URL('./app-server.ts', import.meta.url));
const ECHO_BASIC = fileURLToPath(new URL('./echo-basic/main.ts', import.meta.url));
const COREDNS = fileURLToPath(new URL('./coredns.ts', import.meta.url));
export const APP_IMAGE_REGISTRY = 'app.canary-l4.test';

const ports = (container: V1Container) =>
  (container.ports ?? []).map((port) => `${port.containerPort}/${port.protocol ?? 'TCP'}`).join(',');

export function images(image: string): Image | undefined {
  if (/^(?:[^/]+\/)*canary-l4(?::[\w.-]+)?(?:@sha256:[0-9a-f]{64})?$/.test(image)) {
    // Only `proxy` and `gateway` have --listen-address (and the commands refuse flags they do not know, from the
    // environment too).
    return {
      command: [process.execPath, CANARY_L4_BIN],
      env: (podIP, container) => ({
        CANARY_L4_ADMIN_ADDRESS: podIP,
        ...(['proxy', 'gateway'].includes(container.args?.[0] ?? '') ? { CANARY_L4_LISTEN_ADDRESS: podIP } : {}),
      }),
    };
  }
  if (image.startsWith(`${APP_IMAGE_REGISTRY}/`)) {
    return {
      command: [process.execPath, APP_SERVER],
      env: (podIP, container) => ({ APP_POD_IP: podIP, APP_PORTS: ports(container), APP_ANSWER: image }),
    };
  }
  if (/^registry\.k8s\.io\/gateway-api\/echo-basic:[\w.-]+$/.test(image)) {
    return { command: [process.execPath, ECHO_BASIC], env: (podIP) => ({ ECHO_BASIC_BIND: podIP }) };
  }
  if (/^registry\.k8s\.io\/coredns\/coredns:[\w.-]+$/.test(image)) {
    return { command: [process.execPath, COREDNS], env: (podIP) => ({ COREDNS_BIND: podIP }) };
  }
  return undefined;
}
