// A data plane in a process that has run out of file descriptors behind its budget's back (the
// descriptors went to something the budget does not count), so the system itself refuses its
// sockets: `node exhausted-plane.ts <tcp backend port> <udp backend port>` under a low `ulimit -n`.
// It prints {"tcpPort","udpPort"} once every descriptor is taken but one (an accept gets its socket,
// the backend connect that follows cannot); on the line "take-last" it takes that one too (a UDP
// session cannot get its socket) and prints "{}"; on "report" it frees them all and prints what
// the data plane counted.
import { closeSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { applyOnFreePort, createPlane } from './test-plane.ts';

const [tcpBackendPort, udpBackendPort] = process.argv.slice(2).map(Number);
const plane = createPlane();
const backend = (name: string, port: number | undefined) => ({ name, host: '127.0.0.1', port, weight: 1 });
const tcpPort = await applyOnFreePort(plane, (port) => ({
  listeners: [
    {
      name: 'web',
      listen: `127.0.0.1:${port}`,
      backends: [backend('a', tcpBackendPort), backend('b', tcpBackendPort)],
    },
  ],
}));
const udpPort = await applyOnFreePort(
  plane,
  (port) => ({
    listeners: [
      {
        name: 'web',
        listen: `127.0.0.1:${tcpPort}`,
        backends: [backend('a', tcpBackendPort), backend('b', tcpBackendPort)],
      },
      { name: 'dns', protocol: 'udp', listen: `127.0.0.1:${port}`, backends: [backend('resolver', udpBackendPort)] },
    ],
  }),
  '127.0.0.1',
  'udp',
);

const fillers: number[] = [];
try {
  for (;;) fillers.push(openSync('/dev/null', 'r'));
} catch {
  closeSync(fillers.pop()!);
}
process.stdout.write(`${JSON.stringify({ tcpPort, udpPort })}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'take-last') {
    fillers.push(openSync('/dev/null', 'r'));
    process.stdout.write('{}\n');
    continue;
  }
  for (const fd of fillers) closeSync(fd);
  const states = Object.fromEntries(
    [...plane.dataplane.backendStates()].map((state) => [`${state.listener}/${state.backend}`, state.healthy]),
  );
  const backendStats = (listener: string, name: string) => ({
    ...plane.backend(listener, name).connectErrors,
    connections: plane.backend(listener, name).connections,
  });
  process.stdout.write(
    `${JSON.stringify({
      web: plane.listener('web').refused,
      dns: plane.listener('dns').udpDropped,
      backends: { a: backendStats('web', 'a'), b: backendStats('web', 'b'), resolver: backendStats('dns', 'resolver') },
      healthy: states,
    })}\n`,
  );
  break;
}
await plane.close();
process.exit(0);
