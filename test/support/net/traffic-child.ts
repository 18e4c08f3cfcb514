/**
 * The traffic client (testbed.ts's startTraffic) as a process of its own, so that a test can run it
 * where Node cannot move a thread (no setns): `ip netns exec <node namespace> node traffic-child.ts
 * '<json>'`, driven by netns-traffic.ts. Argument: `{ host, port, protocol, options }`. Prints
 * `{"started":<epoch ms>}`, then one JSON line per attempt; stops on a line on stdin (or its end)
 * or at the options' bounds, and exits.
 */
import { startTraffic, type Protocol, type TrafficOptions } from '../cluster/testbed.ts';

const spec = JSON.parse(process.argv[2] ?? '{}') as {
  host: string;
  port: number;
  protocol: Protocol;
  options: TrafficOptions;
};
const traffic = startTraffic(() => spec.host, spec.port, spec.protocol, spec.options);
const startedAt = Date.now() - traffic.now();
console.log(JSON.stringify({ started: startedAt }));
let printed = 0;
const flush = () => {
  for (; printed < traffic.attempts.length; printed++) console.log(JSON.stringify(traffic.attempts[printed]));
};
const timer = setInterval(flush, 50);
const stop = async () => {
  await traffic.stop();
  clearInterval(timer);
  flush();
  process.exit(0);
};
process.stdin.once('data', () => void stop()).once('end', () => void stop());
// Bounded on its own too: its loop ends at maxAttempts or maxMs.
const poll = setInterval(() => {
  if (
    traffic.attempts.length >= (spec.options.maxAttempts ?? 100_000) ||
    traffic.now() >= (spec.options.maxMs ?? 60_000)
  ) {
    clearInterval(poll);
    void stop();
  }
}, 100);
