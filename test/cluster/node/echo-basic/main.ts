/**
 * The process the image `registry.k8s.io/gateway-api/echo-basic:<tag>` runs on the simulated node (images.ts):
 * the Gateway API conformance suite's backend (conformance/echo-basic/), chosen by env as the image chooses:
 * GRPC_ECHO_SERVER, else TCP_ECHO_SERVER (tcp-server.ts), else UDP_ECHO_SERVER (udp-server.ts), else the HTTP
 * echo (http-server.ts). It binds the pod's own address (ECHO_BASIC_BIND), not every address as the image does:
 * the pods of this one host would clash on their ports. A server that cannot start exits 2 with the image's
 * words; SIGTERM exits 0.
 */
import { podContext, bindAddress } from './context.ts';
import { serveGrpcUnimplemented, serveHttpEcho } from './http-server.ts';
import { serveTcpEcho } from './tcp-server.ts';
import { serveUdpEcho } from './udp-server.ts';

const env = process.env;
const context = podContext(env);
const host = bindAddress(env);
try {
  if (env.GRPC_ECHO_SERVER) await serveGrpcUnimplemented(env, host);
  else if (env.TCP_ECHO_SERVER) await serveTcpEcho(env, context, host);
  else if (env.UDP_ECHO_SERVER) await serveUdpEcho(env, context, host);
  else await serveHttpEcho(env, context, host);
} catch (err) {
  console.error(`Failed to start listening: ${(err as Error).message}`);
  process.exit(2);
}
process.once('SIGTERM', () => process.exit(0));
