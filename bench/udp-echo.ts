// UDP echo backend. Run as a child: `udp-echo.ts PORT`.
import { createSocket } from 'node:dgram';
import { ipLiteralLookup, UDP_SOCKET_BUFFER_BYTES } from './udp-common.ts';

const port = Number(process.argv[2]);
const socket = createSocket({
  type: 'udp4',
  lookup: ipLiteralLookup,
  recvBufferSize: UDP_SOCKET_BUFFER_BYTES,
  sendBufferSize: UDP_SOCKET_BUFFER_BYTES,
});
socket.on('message', (message, sender) => socket.send(message, sender.port, sender.address));
// A failed send is a lost datagram, which the client counts; it must not take the backend down.
socket.on('error', (error) => console.error(`udp echo ${port}: ${error.message}`));
socket.bind(port, '127.0.0.1', () => console.log(`udp echo listening on ${port}`));
