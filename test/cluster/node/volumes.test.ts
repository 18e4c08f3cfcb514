// The kubelet simulation's secret and configMap volumes (volumes.ts), against the fake kube-apiserver: the
// files a pod's containers read, by key or by `items`, with their modes; a missing object in the real
// kubelet's words, unless optional.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { type FakeApiServer, startFakeApiServer } from '../../support/fake-apiserver/index.ts';
import { writeObjectVolumes } from './volumes.ts';

const pod = (volumes: NonNullable<V1Pod['spec']>['volumes']): V1Pod => ({
  metadata: { name: 'p', namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'x' }], volumes },
});

describe('secret and configMap volumes', () => {
  let api: FakeApiServer;
  let core: CoreV1Api;
  let dir: string;
  before(async () => {
    api = await startFakeApiServer();
    core = api.kubeConfig.makeApiClient(CoreV1Api);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-volumes-'));
    await core.createNamespacedSecret({
      namespace: 'default',
      body: {
        metadata: { name: 'tls' },
        data: { 'tls.crt': Buffer.from('CERT').toString('base64'), 'tls.key': 'S0VZ' },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'conf' }, data: { Corefile: '.:53 {}\n' } },
    });
  });
  after(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a secret by items (path and mode) and a configMap by key, each in a directory of its own', async () => {
    const made: string[] = [];
    const filled = await writeObjectVolumes(
      core,
      pod([
        {
          name: 'secret-volume',
          secret: {
            secretName: 'tls',
            items: [
              { key: 'tls.crt', path: 'crt' },
              { key: 'tls.key', path: 'k/key', mode: 0o600 },
            ],
          },
        },
        { name: 'conf', configMap: { name: 'conf' } },
        { name: 'scratch', emptyDir: {} },
      ]),
      dir,
      made,
    );
    assert.deepEqual(Object.keys(filled), ['secret-volume', 'conf']);
    assert.equal(readFileSync(join(filled['secret-volume']!, 'crt'), 'utf8'), 'CERT');
    assert.equal(readFileSync(join(filled['secret-volume']!, 'k/key'), 'utf8'), 'KEY');
    assert.equal(statSync(join(filled['secret-volume']!, 'k/key')).mode & 0o777, 0o600);
    assert.equal(readFileSync(join(filled.conf!, 'Corefile'), 'utf8'), '.:53 {}\n');
    assert.deepEqual(made, [filled['secret-volume'], filled.conf]);
  });

  it('a missing Secret throws as the kubelet says it; an optional one is an empty directory', async () => {
    await assert.rejects(writeObjectVolumes(core, pod([{ name: 'v', secret: { secretName: 'absent' } }]), dir, []), {
      message: 'MountVolume.SetUp failed for volume "v": secret "absent" not found',
    });
    const filled = await writeObjectVolumes(
      core,
      pod([{ name: 'v', secret: { secretName: 'absent', optional: true } }]),
      dir,
      [],
    );
    assert.ok(filled.v !== undefined);
  });
});
