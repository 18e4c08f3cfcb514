import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import pino, { type Logger } from 'pino';
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { startInformer } from '../../src/kube/informer.ts';
import { sleep, waitFor } from '../support/wait.ts';

let api: FakeApiServer;

before(async () => {
  // No bookmark for ten minutes: an idle watch is silent, as a half-open connection would be.
  api = await startFakeApiServer({ bookmarkIntervalMs: 600_000 });
});
after(() => api.stop());

function capturedLogger() {
  const messages: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) messages.push(JSON.parse(line).msg);
      done();
    },
  });
  return { log: pino({ level: 'warn' }, sink), messages };
}

/** An informer on the Services of `default`, as the controller runs one. */
function serviceInformer(log: Logger, onChange: (service: V1Service) => void = () => {}) {
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  return startInformer<V1Service>({
    kubeConfig: api.kubeConfig,
    path: '/api/v1/namespaces/default/services',
    list: () => core.listNamespacedService({ namespace: 'default' }),
    onChange,
    log,
    staleAfterMs: 1_200,
    watchTimeoutSeconds: 300,
  });
}

describe('informer watchdog', () => {
  it('restarts a silent watch once, cleanly, and the restarted watch delivers events', {
    timeout: 20_000,
  }, async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const { log, messages } = capturedLogger();
    const seen = new Set<string>();
    const informer = serviceInformer(log, (service) => seen.add(service.metadata?.name ?? ''));
    try {
      await informer.synced;
      await waitFor(
        () => messages.includes('watch went quiet; restarting it'),
        'the watchdog to restart the silent watch',
        6_000,
      );
      await sleep(2_500);
      assert.deepEqual(
        messages.filter((msg) => msg !== 'watch went quiet; restarting it'),
        [],
        'a restart by the watchdog is not a failure',
      );
      await core.createNamespacedService({
        namespace: 'default',
        body: { metadata: { name: 'after-restart' }, spec: { ports: [{ port: 80 }] } },
      });
      await waitFor(() => seen.has('after-restart'), 'the restarted watch to deliver the new Service', 5_000);
      assert.equal(api.openWatches(), 1, 'one watch open: the old one is gone, no duplicates');
    } finally {
      await informer.stop();
    }
  });
});

describe('informer first sync', () => {
  // The controller reconciles once `synced` resolves: on an empty cache it would take every
  // Service for deleted and deprecate a healthy release.
  it('a failed first list is retried, and synced waits for the list that succeeded', { timeout: 10_000 }, async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'before-start' }, spec: { ports: [{ port: 80 }] } },
    });
    api.faults.failNext({ verb: 'list', resource: 'services', code: 500 });
    const { log, messages } = capturedLogger();
    const informer = serviceInformer(log);
    try {
      await informer.synced;
      assert.ok(informer.get('before-start', 'default'), 'synced resolved with the Service missing from the cache');
      assert.deepEqual(messages, ['watch failed; restarting'], 'the failed list was reported and retried');
    } finally {
      await informer.stop();
    }
  });
});
