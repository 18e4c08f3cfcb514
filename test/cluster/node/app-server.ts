/**
 * The process an app image runs on the simulated node: the same servers the fake's pod servers
 * run (test/support/cluster/pod-servers.ts), on the pod's own address, one per container port. TCP writes
 * the answer and ends; UDP replies `<answer>:<datagram>`. `FAKE_POD_FAULT` (the container's env)
 * makes it misbehave as a bad release would: `reset=30` resets 30 % of TCP connections, `udp-silent`
 * never replies. SIGTERM closes the listeners and exits, as a well-behaved server does.
 *
 * Env (set by the kubelet simulation for the image, see images.ts): APP_POD_IP, APP_PORTS
 * (`8080/TCP,5353/UDP`), APP_ANSWER.
 */
import { FAULT_ENV, parseFault, serveTcp, serveUdp, type Serving } from '../../support/cluster/pod-servers.ts';

const ip = process.env.APP_POD_IP ?? '127.0.0.1';
const answer = process.env.APP_ANSWER ?? 'app';
const fault = parseFault(process.env[FAULT_ENV] ?? '');
const ports = (process.env.APP_PORTS ?? '')
  .split(',')
  .filter(Boolean)
  .map((entry) => {
    const [port, protocol = 'TCP'] = entry.split('/');
    return { port: Number(port), protocol: protocol === 'UDP' ? ('UDP' as const) : ('TCP' as const) };
  });

const serving: Serving[] = [];
for (const { port, protocol } of ports) {
  const wanted = { ip, port, protocol, owner: answer, answer, fault };
  serving.push(await (protocol === 'TCP' ? serveTcp(wanted) : serveUdp(wanted)));
}
console.log(JSON.stringify({ msg: 'serving', ip, ports: process.env.APP_PORTS, answer }));

process.once('SIGTERM', () => {
  void Promise.all(serving.map((server) => server.close())).then(() => process.exit(0));
});
