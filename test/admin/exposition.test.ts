// The data plane's counters as Prometheus text: the same samples prom-client gave, rendered in
// slices so that a scrape of thousands of listeners does not hold traffic still.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPlane, metricValue } from '../support/dataplane/test-plane.ts';

describe('data plane exposition', { timeout: 30_000 }, () => {
  test('a scrape of 5 000 listeners lets the event loop run while it renders, and every sample is there', async () => {
    const plane = createPlane();
    for (let i = 0; i < 5000; i++) {
      plane.listener(`l${i}`).accepted = i;
      for (const backend of ['stable', 'canary']) {
        const stats = plane.backend(`l${i}`, backend);
        stats.connections = i;
        stats.connectDuration.observe(0.002);
      }
    }
    let turns = 0;
    let rendering = true;
    const turn = () => {
      if (!rendering) return;
      turns++;
      setImmediate(turn);
    };
    setImmediate(turn);
    const text = await plane.metrics();
    rendering = false;
    // Rendered in one piece, the scrape lets nothing run until it is done (prom-client did).
    assert.ok(turns > 0, 'the event loop never ran during the scrape');

    assert.equal(metricValue(text, 'canary_l4_listener_connections_total', { listener: 'l4321' }), 4321);
    assert.equal(
      metricValue(text, 'canary_l4_backend_connections_total', { listener: 'l4999', backend: 'canary' }),
      4999,
    );
    assert.equal(
      metricValue(text, 'canary_l4_connect_duration_seconds_bucket', {
        listener: 'l7',
        backend: 'stable',
        le: '0.001',
      }),
      0,
    );
    assert.equal(
      metricValue(text, 'canary_l4_connect_duration_seconds_bucket', {
        listener: 'l7',
        backend: 'stable',
        le: '0.0025',
      }),
      1,
    );
    assert.equal(
      metricValue(text, 'canary_l4_connect_duration_seconds_bucket', { listener: 'l7', backend: 'stable', le: '+Inf' }),
      1,
    );
    assert.equal(
      metricValue(text, 'canary_l4_connect_duration_seconds_count', { listener: 'l7', backend: 'stable' }),
      1,
    );
    assert.equal(metricValue(text, 'canary_l4_connections_refused_total', { listener: 'l0', reason: 'fd_limit' }), 0);
    // One HELP and one TYPE per family, however many slices it took.
    const types = text.split('\n').filter((line) => line.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'a family was announced twice');
    await plane.close();
  });
});
