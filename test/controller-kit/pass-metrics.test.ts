// Pass metrics keep the names users scrape: `<prefix>reconcile_total{result}` and
// `<prefix>reconcile_duration_seconds`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { PassMetrics } from '../../src/controller-kit/pass-metrics.ts';

describe('pass metrics', () => {
  it('counts each pass by result and times it, under the prefix given', async () => {
    const registry = new Registry();
    const prefix = 'canary_l4_manager_';
    const metrics = new PassMetrics({ registry, prefix, passesHelp: 'Passes.', durationHelp: 'Duration.' });
    metrics.pass()('success');
    metrics.pass()('error');
    metrics.pass()('success');
    const text = await registry.metrics();
    assert.match(text, /^canary_l4_manager_reconcile_total\{result="success"\} 2$/m);
    assert.match(text, /^canary_l4_manager_reconcile_total\{result="error"\} 1$/m);
    assert.match(text, /^canary_l4_manager_reconcile_duration_seconds_count 3$/m);
    assert.match(text, /^# HELP canary_l4_manager_reconcile_total Passes\.$/m);
  });
});
