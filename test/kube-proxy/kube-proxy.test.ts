/**
 * The kube-proxy simulation (test/support/cluster/kube-proxy.ts) against the fake apiserver: Services on
 * cluster IPs in one loopback range of the file, pods played by backends on their own addresses of another.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Service } from '@kubernetes/client-node';
import {
  askName,
  countBy,
  exchange,
  startNamedBackend,
  startTcpBackend,
  startUdpEcho,
  type TcpBackend,
  udpAsk,
} from '../support/net/backends.ts';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { type KubeProxy, startKubeProxy } from '../support/cluster/kube-proxy.ts';
import { Pods } from '../support/cluster/pods.ts';
import { freePortBlock } from '../support/net/free-ports.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const ns = 'default';
const UDP_IDLE_MS = 600;
/** Traffic this often keeps a session: a third of the idle timeout leaves room for a loaded machine. */
const KEEPALIVE_MS = UDP_IDLE_MS / 3;
const KEEPALIVES = 6; // spanning twice the idle timeout

let api: FakeApiServer;
let core: CoreV1Api;
let pods: Pods;
let proxy: KubeProxy;
const closers: Array<() => Promise<void>> = [];

before(async () => {
  api = await startFakeApiServer({ serviceCidr: serviceNet.cidr });
  core = api.kubeConfig.makeApiClient(CoreV1Api);
  pods = new Pods(api.kubeConfig, ns);
  proxy = await startKubeProxy({ kubeConfig: api.kubeConfig, namespace: ns, udpIdleTimeoutMs: UDP_IDLE_MS });
});
after(async () => {
  await proxy.stop();
  for (const close of closers) await close();
  await api.stop();
});

/** Creates the Service and waits until the proxy listens on all its ports; returns its cluster IP. */
async function service(name: string, spec: V1Service['spec']): Promise<string> {
  const created = await core.createNamespacedService({ namespace: ns, body: { metadata: { name }, spec } });
  const ip = created.spec!.clusterIP!;
  const want = created.spec!.ports!.map((p) => `${ip}:${p.port}/${p.protocol}`);
  await waitFor(() => want.every((l) => proxy.listeners().includes(l)), `listeners for ${name}`);
  return ip;
}

/** A backend at `podIP` and a pod of that IP whose container port `http` is the backend's port. */
async function pod(
  name: string,
  podIP: string,
  labels: Record<string, string>,
  backend: (host: string) => Promise<TcpBackend>,
  ready = true,
) {
  const b = await backend(podIP);
  closers.push(() => b.close());
  await pods.create({ name, labels, ports: [{ name: 'http', containerPort: b.port }] });
  await pods.setStatus(name, { phase: 'Running', podIP, ready });
  return b;
}

/** An echo backend that prefixes every reply with its name, and half-closes when the client does. */
const namedEcho = (name: string) => (host: string) =>
  startTcpBackend((socket) => {
    socket.on('data', (d) => socket.write(`${name}:${d}`));
    socket.on('end', () => socket.end());
  }, host);

/** A UDP pod at `host` that counts senders and hands each datagram to `onMessage`. */
async function udpBackend(host: string, onMessage: (socket: dgram.Socket, from: dgram.RemoteInfo) => void) {
  const socket = dgram.createSocket('udp4');
  const backend = { port: 0, received: 0, senders: new Set<string>() };
  socket.on('message', (_datagram, from) => {
    backend.received++;
    backend.senders.add(`${from.address}:${from.port}`);
    onMessage(socket, from);
  });
  await new Promise<void>((resolve) => socket.bind({ address: host, port: 0 }, resolve));
  backend.port = socket.address().port;
  closers.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return backend;
}

/** A Ready pod at `podIP` behind a UDP Service `name` whose port `port` targets `targetPort`. */
async function udpService(name: string, podIP: string, port: number, targetPort: number): Promise<string> {
  await pods.create({ name, labels: { app: name } });
  await pods.markReady(name, podIP);
  return service(name, { selector: { app: name }, ports: [{ port, protocol: 'UDP', targetPort }] });
}

/** Connects and resolves with the socket's error code once it closes ('' for a clean close). */
function closeReason(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let code = '';
    socket.on('error', (e: NodeJS.ErrnoException) => (code = e.code ?? e.message));
    socket.on('close', () => resolve(code));
    socket.resume();
    socket.setTimeout(5000, () => socket.destroy(new Error('timeout')));
  });
}

describe('kube-proxy simulation', { timeout: 60_000 }, () => {
  it('sends connections only to Ready pods, round robin, through a named targetPort', async () => {
    await pod('rr-a', podNet.ip(1), { app: 'rr' }, (h) => startNamedBackend('a', h));
    await pod('rr-b', podNet.ip(2), { app: 'rr' }, (h) => startNamedBackend('b', h));
    await pod('rr-c', podNet.ip(3), { app: 'rr' }, (h) => startNamedBackend('c', h), false);
    await pod('rr-other', podNet.ip(4), { app: 'other' }, (h) => startNamedBackend('other', h));
    // Terminating: deleted, but held by a finalizer.
    await pod('rr-d', podNet.ip(5), { app: 'rr' }, (h) => startNamedBackend('d', h));
    await core.patchNamespacedPod(
      { name: 'rr-d', namespace: ns, body: { metadata: { finalizers: ['example.com/hold'] } } },
      merge,
    );
    await pods.delete('rr-d');
    const ip = await service('rr', { selector: { app: 'rr' }, ports: [{ port: 8080, targetPort: 'http' }] });
    const names: string[] = [];
    for (let i = 0; i < 12; i++) names.push(await askName(8080, ip));
    assert.deepEqual(countBy(names), { a: 6, b: 6 });
    assert.deepEqual(proxy.counters('rr', 8080), { accepted: 12, rejectedNoEndpoints: 0, upstreamFailed: 0 });
    // Readiness is read per connection: c becomes Ready, a NotReady.
    await pods.markReady('rr-c');
    await pods.markNotReady('rr-a');
    await waitFor(async () => (await askName(8080, ip)) === 'c', 'c to be picked');
    const later: string[] = [];
    for (let i = 0; i < 6; i++) later.push(await askName(8080, ip));
    assert.deepEqual(countBy(later), { b: 3, c: 3 });
  });

  it('applies a selector patch to new connections while an established one keeps its pod', async () => {
    await pod('sel-v1', podNet.ip(11), { app: 'sel', version: 'v1' }, namedEcho('v1'));
    await pod('sel-v2', podNet.ip(12), { app: 'sel', version: 'v2' }, namedEcho('v2'));
    const ip = await service('sel', {
      selector: { app: 'sel', version: 'v1' },
      ports: [{ port: 8080, targetPort: 'http' }],
    });
    const established = net.connect({ host: ip, port: 8080 });
    const replies: string[] = [];
    established.on('data', (d) => replies.push(String(d)));
    established.write('one');
    await waitFor(() => replies.join('') === 'v1:one', 'the first reply');

    await core.patchNamespacedService(
      { name: 'sel', namespace: ns, body: { spec: { selector: { version: 'v2' } } } },
      merge,
    );
    await waitFor(
      async () => (await exchange(8080, 'new', { host: ip })).data.toString() === 'v2:new',
      'new connections to reach v2',
    );
    established.write('two');
    await waitFor(() => replies.join('') === 'v1:onev1:two', 'the established connection to stay on v1');
    // Half-close carries through: the client's FIN reaches the pod, whose FIN comes back.
    let closed = false;
    established.once('close', () => (closed = true));
    established.end();
    await waitFor(() => closed, 'the connection to close both ways');
  });

  it('resets the client when no pod is ready, when the selector is empty, and when the pod refuses', async () => {
    await pod('none-pending', podNet.ip(21), { app: 'none' }, (h) => startNamedBackend('x', h), false);
    const ip = await service('none', { selector: { app: 'none' }, ports: [{ port: 8080, targetPort: 'http' }] });
    assert.equal(await closeReason(ip, 8080), 'ECONNRESET');
    assert.deepEqual(proxy.counters('none', 8080), { accepted: 0, rejectedNoEndpoints: 1, upstreamFailed: 0 });

    await pod('empty-any', podNet.ip(22), {}, (h) => startNamedBackend('any', h));
    const empty = await service('empty', { ports: [{ port: 8080, targetPort: 'http' }] });
    assert.equal(await closeReason(empty, 8080), 'ECONNRESET');

    // Ready at an address where nothing listens: the connect is refused, the client reset.
    await pods.create({ name: 'refusing', labels: { app: 'refusing' } });
    await pods.markReady('refusing', podNet.ip(23));
    const refusing = await service('refusing', {
      selector: { app: 'refusing' },
      ports: [{ port: 8080, targetPort: 9 }],
    });
    assert.equal(await closeReason(refusing, 8080), 'ECONNRESET');
    assert.deepEqual(proxy.counters('refusing', 8080), { accepted: 1, rejectedNoEndpoints: 0, upstreamFailed: 1 });
  });

  it('carries UDP both ways, with a session (and upstream socket) per client', async () => {
    const echo = await startUdpEcho('u', podNet.ip(31));
    closers.push(() => echo.close());
    const ip = await udpService('dns', podNet.ip(31), 5353, echo.port);
    assert.deepEqual(await udpAsk(5353, 'a', { host: ip }), ['u:a']);
    assert.deepEqual(await udpAsk(5353, 'b', { host: ip }), ['u:b']);
    assert.equal(proxy.counters('dns', 5353, 'UDP').accepted, 2);
    assert.equal(echo.senders.size, 2, 'one upstream socket per client');
  });

  it('a UDP client whose pod stops being an endpoint is moved to one that is, as kube-proxy flushes conntrack', async () => {
    const port = await freePortBlock(1, { udp: true });
    for (const [name, host] of [
      ['first', podNet.ip(34)],
      ['second', podNet.ip(35)],
    ] as const) {
      const socket = dgram.createSocket('udp4');
      socket.on('message', (datagram, from) => socket.send(`${name}:${datagram}`, from.port, from.address));
      await new Promise<void>((resolve) => socket.bind({ address: host, port }, resolve));
      closers.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
    }
    await pods.create({ name: 'moving-b', labels: { app: 'moving' } });
    await pods.setStatus('moving-b', { phase: 'Running', podIP: podNet.ip(35), ready: false });
    const ip = await udpService('moving', podNet.ip(34), 5356, port);
    const client = dgram.createSocket('udp4');
    try {
      assert.deepEqual(await udpAsk(5356, 'a', { host: ip, socket: client }), ['first:a']);
      await pods.markNotReady('moving');
      await pods.markReady('moving-b');
      // The first pod still answers: only a flushed session reaches the second one.
      await waitFor(
        async () => (await udpAsk(5356, 'b', { host: ip, socket: client, timeoutMs: 300 }))[0] === 'second:b',
        'the same client moved to the Ready pod',
      );
    } finally {
      client.close();
    }
  });

  it('a UDP session lives while the client talks, even if the pod never answers, then idles out', async () => {
    const silent = await udpBackend(podNet.ip(32), () => {});
    const ip = await udpService('quiet', podNet.ip(32), 5354, silent.port);
    const client = dgram.createSocket('udp4');
    try {
      for (let i = 0; i < KEEPALIVES; i++) {
        client.send(`keep${i}`, 5354, ip);
        await sleep(KEEPALIVE_MS);
      }
      await waitFor(() => silent.received === KEEPALIVES, 'every datagram to arrive');
      assert.equal(silent.senders.size, 1, 'one session all along');
      await sleep(UDP_IDLE_MS * 2);
      client.send('after', 5354, ip);
      await waitFor(() => silent.received === KEEPALIVES + 1, 'the last datagram');
      assert.equal(silent.senders.size, 2, 'a new session after the idle timeout');
    } finally {
      client.close();
    }
  });

  it('a UDP session lives while the pod talks, even if the client says nothing more', async () => {
    const streamer = await udpBackend(podNet.ip(33), (socket, to) => {
      for (let i = 1; i <= KEEPALIVES; i++)
        setTimeout(() => socket.send(`part${i}`, to.port, to.address), i * KEEPALIVE_MS);
    });
    const ip = await udpService('stream', podNet.ip(33), 5355, streamer.port);
    const parts = Array.from({ length: KEEPALIVES }, (_, i) => `part${i + 1}`);
    assert.deepEqual(await udpAsk(5355, 'go', { host: ip, expected: KEEPALIVES, timeoutMs: UDP_IDLE_MS * 4 }), parts);
  });

  it('serves from its caches through an API outage, and catches up once the API is back', async () => {
    await pod('outage-1', podNet.ip(51), { app: 'outage' }, (h) => startNamedBackend('o', h));
    const ip = await service('outage', { selector: { app: 'outage' }, ports: [{ port: 8080, targetPort: 'http' }] });
    const back = api.faults.refuseConnections(1500);
    await waitFor(() => api.openWatches() === 0, 'the watches to break');
    assert.equal(await askName(8080, ip), 'o');
    await back;
    const later = await service('after-outage', {
      selector: { app: 'outage' },
      ports: [{ port: 8080, targetPort: 'http' }],
    });
    assert.equal(await askName(8080, later), 'o');
  });

  it('stop() closes its listeners and the connections through them', async () => {
    await core.createNamespace({ body: { metadata: { name: 'stopping' } } });
    const own = await startKubeProxy({ kubeConfig: api.kubeConfig, namespace: 'stopping' });
    const b = await startTcpBackend(() => {}, podNet.ip(61)); // holds connections open
    closers.push(() => b.close());
    const stoppingPods = new Pods(api.kubeConfig, 'stopping');
    await stoppingPods.createReady({
      name: 'held',
      labels: { app: 'held' },
      podIP: podNet.ip(61),
      ports: [{ name: 'http', containerPort: b.port }],
    });
    const svc = await core.createNamespacedService({
      namespace: 'stopping',
      body: {
        metadata: { name: 'held' },
        spec: { selector: { app: 'held' }, ports: [{ port: 8080, targetPort: 'http' }] },
      },
    });
    const ip = svc.spec!.clusterIP!;
    await waitFor(() => own.listeners().includes(`${ip}:8080/TCP`), 'the listener');
    const held = closeReason(ip, 8080);
    await waitFor(() => b.sockets.size === 1, 'the connection to reach the pod');
    await own.stop();
    assert.equal(await held, '');
    assert.equal(await closeReason(ip, 8080), 'ECONNREFUSED');
  });

  it('opens and closes listeners as ports and Services come and go; established connections carry on', async () => {
    await pod('life-1', podNet.ip(41), { app: 'life' }, namedEcho('life'));
    const ip = await service('life', {
      selector: { app: 'life' },
      ports: [{ name: 'a', port: 8080, targetPort: 'http' }],
    });
    await core.patchNamespacedService(
      {
        name: 'life',
        namespace: ns,
        body: {
          spec: {
            ports: [
              { name: 'a', port: 8080, targetPort: 'http' },
              { name: 'b', port: 8081, targetPort: 'http' },
            ],
          },
        },
      },
      merge,
    );
    await waitFor(() => proxy.listeners().includes(`${ip}:8081/TCP`), 'the added port');
    assert.equal((await exchange(8081, 'p', { host: ip })).data.toString(), 'life:p');

    const established = net.connect({ host: ip, port: 8080 });
    const replies: string[] = [];
    established.on('data', (d) => replies.push(String(d)));
    established.write('x');
    await waitFor(() => replies.length === 1, 'a reply');

    await core.deleteNamespacedService({ name: 'life', namespace: ns });
    await waitFor(() => !proxy.listeners().some((l) => l.startsWith(`${ip}:`)), 'the listeners to close');
    assert.equal(await closeReason(ip, 8080), 'ECONNREFUSED');
    established.write('y');
    await waitFor(() => replies.join('') === 'life:xlife:y', 'the established connection to carry on');
    established.end();

    // A headless Service has no cluster IP to listen on.
    await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'headless' },
        spec: { clusterIP: 'None', selector: { app: 'life' }, ports: [{ port: 8080 }] },
      },
    });
    await service('after-headless', { ports: [{ port: 8080 }] });
    assert.ok(!proxy.listeners().some((l) => l.startsWith('None')));
  });
});
