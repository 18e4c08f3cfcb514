// Passive health counts connect failures in a row. nginx's max_fails differs: its round robin (http
// and stream) clears the count on a success only once fail_timeout has passed since the last
// failure (`accessed < checked` in ngx_*_upstream_free_round_robin_peer), so nginx takes out a
// backend that fails one connection in three under steady traffic. Here a success clears the count
// at once (src/dataplane/choice/passive-health.ts): only maxFails failures in a row within failTimeoutMs
// take a backend out. The window and the time out of rotation are tested in balancer.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';

const MAX_FAILS = 3;
const FAIL_TIMEOUT_MS = 10_000;

describe('passive health: a success clears the failure count', () => {
  test('failures separated by successes never take the backend out; maxFails in a row still do', () => {
    const health = new BackendHealth();
    let now = 1_000_000;
    // 20 failures in 4 s, well inside one failTimeoutMs, each followed by a success.
    for (let i = 0; i < 20; i++) {
      now += 100;
      health.recordFailure(now, MAX_FAILS, FAIL_TIMEOUT_MS);
      assert.ok(health.isAvailable(now), `taken out at failure ${i + 1}, though a success followed each earlier one`);
      now += 100;
      health.recordSuccess();
      assert.ok(health.isAvailable(now));
    }
    // The count still counts: maxFails failures with no success between them take it out.
    for (let i = 1; i < MAX_FAILS; i++) health.recordFailure((now += 100), MAX_FAILS, FAIL_TIMEOUT_MS);
    assert.ok(health.isAvailable(now), `${MAX_FAILS - 1} failures in a row are not enough`);
    health.recordFailure((now += 100), MAX_FAILS, FAIL_TIMEOUT_MS);
    assert.ok(!health.isAvailable(now), `${MAX_FAILS} failures in a row take it out`);
  });
});
