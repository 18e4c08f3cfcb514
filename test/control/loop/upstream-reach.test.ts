// A proxy pod becomes Ready for a takeover only once its upstreams answer from it as it will serve:
// which upstreams it asks, how often, and what is enough (accepted; refused where no Ready pod is behind).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import type { L4Config, ListenerConfig } from '../../../src/config/types.ts';
import { type Answer, probeTcp, UpstreamReach } from '../../../src/control/loop/upstream-reach.ts';
import { startBlackhole } from '../../support/net/blackhole.ts';
import { freePort } from '../../support/net/free-ports.ts';

const listener = (protocol: 'tcp' | 'udp', port: number, backends: [string, number][]): ListenerConfig =>
  ({
    name: `${protocol}-${port}`,
    protocol,
    listen: { host: undefined, port },
    backends: backends.map(([host, weight], index) => ({ name: `b${index}`, host, port: port + 1000, weight })),
  }) as unknown as ListenerConfig;

describe('UpstreamReach', () => {
  const readyBehind = (hosts: string[]) => (host: string) => hosts.includes(host);

  test('asks each TCP upstream address once per pass, one port each, and one that accepted never again', async () => {
    const asked: string[] = [];
    const answers = new Map<string, Answer>([['10.0.0.1', 'accepted']]);
    const reach = new UpstreamReach(async (host, port) => {
      asked.push(`${host}:${port}`);
      return answers.get(host) ?? 'silent';
    });
    const config: L4Config = {
      listeners: [
        listener('tcp', 80, [
          ['10.0.0.1', 80],
          ['10.0.0.2', 20],
        ]),
        listener('tcp', 443, [
          ['10.0.0.1', 100],
          ['10.0.0.2', 0],
        ]),
        listener('udp', 53, [['10.0.0.3', 100]]),
      ],
    };
    const behind = readyBehind(['10.0.0.1', '10.0.0.2']);
    assert.deepEqual(await reach.unready(config, behind), ['10.0.0.2:1080 silent']);
    assert.deepEqual(asked, ['10.0.0.1:1080', '10.0.0.2:1080'], 'one probe per address; UDP-only addresses not asked');
    answers.set('10.0.0.2', 'refused');
    assert.deepEqual(
      await reach.unready(config, behind),
      ['10.0.0.2:1080 refused'],
      'refused with Ready pods behind: not yet',
    );
    answers.set('10.0.0.2', 'accepted');
    assert.deepEqual(await reach.unready(config, behind), []);
    assert.deepEqual(await reach.unready(config, behind), []);
    assert.deepEqual(
      asked,
      ['10.0.0.1:1080', '10.0.0.2:1080', '10.0.0.2:1080', '10.0.0.2:1080'],
      'accepted addresses are not asked again',
    );
  });

  test('a refusal is enough where no Ready pod is behind the address (its endpoints are empty), silence never', async () => {
    const answers = new Map<string, Answer>([
      ['10.0.0.1', 'accepted'],
      ['10.0.0.2', 'refused'],
      ['10.0.0.3', 'silent'],
    ]);
    const reach = new UpstreamReach(async (host) => answers.get(host)!);
    const config = {
      listeners: [
        listener('tcp', 80, [
          ['10.0.0.1', 100],
          ['10.0.0.2', 0],
          ['10.0.0.3', 0],
        ]),
      ],
    };
    assert.deepEqual(await reach.unready(config, readyBehind(['10.0.0.1'])), ['10.0.0.3:1080 silent']);
  });

  test('no TCP upstream: nothing to wait for', async () => {
    const reach = new UpstreamReach(async () => assert.fail('nothing to ask'));
    const behind = readyBehind([]);
    assert.deepEqual(await reach.unready({ listeners: [listener('udp', 53, [['10.0.0.3', 100]])] }, behind), []);
    assert.deepEqual(await reach.unready({ listeners: [] }, behind), []);
  });
});

describe('probeTcp', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers) await close();
  });

  test('a listener that accepts answers; the probe connection is closed at once', async () => {
    const server = net.createServer();
    const closed = new Promise<void>((resolve) => server.on('connection', (socket) => socket.on('close', resolve)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    assert.equal(await probeTcp('127.0.0.1', (server.address() as net.AddressInfo).port, 1000), 'accepted');
    await closed;
  });

  test('a refusal (kube-proxy rejects for a Service without endpoints)', async () => {
    assert.equal(await probeTcp('127.0.0.1', await freePort('127.0.0.1'), 1000), 'refused');
  });

  test('silence: a port that never answers, after the timeout', async () => {
    const blackhole = await startBlackhole();
    closers.push(() => blackhole.close());
    const started = Date.now();
    assert.equal(await probeTcp('127.0.0.1', blackhole.port, 300), 'silent');
    assert.ok(Date.now() - started >= 250, 'waited for the timeout');
  });
});
