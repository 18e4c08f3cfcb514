/**
 * echo-basic's udpechoserver (UDP_ECHO_SERVER=1): on UDP_PORT (8080), every datagram is answered to its
 * sender with `{"request": <its first 1024 bytes>, namespace, ingress, service, pod}` (the Go server's
 * 1024-byte read buffer, its field order).
 */
import { createSocket, type Socket } from 'node:dgram';
import { type PodContext, portFrom } from './context.ts';

const READ_BUFFER_BYTES = 1024;

export async function serveUdpEcho(env: NodeJS.ProcessEnv, context: PodContext, host: string): Promise<Socket> {
  const port = portFrom(env, 'UDP_PORT', 8080);
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  socket.on('message', (message, sender) => {
    const request = message.subarray(0, READ_BUFFER_BYTES).toString('utf8');
    console.log(`Received UDP ${request} from ${sender.address}:${sender.port}`);
    socket.send(JSON.stringify({ request, ...context }), sender.port, sender.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => resolve());
  });
  console.log(`UDP server listening on :${port} with context: ${JSON.stringify(context)}`);
  return socket;
}
