/**
 * startTraffic (testbed.ts) from inside a network namespace, as a process on a real node or in a
 * client pod sees a Service: a child process (traffic-child.ts) run with `ip netns exec`, since
 * Node cannot enter a namespace itself (no setns). The same Traffic: attempts as the child reports
 * them, at times since it started; `stop()` asks it to stop and waits for its last report.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { trafficOf, type Attempt, type Protocol, type Traffic, type TrafficOptions } from '../cluster/testbed.ts';

const CHILD = fileURLToPath(new URL('./traffic-child.ts', import.meta.url));

/** Resolves once the child has started its first attempt's clock. */
export async function startTrafficIn(
  netns: string,
  host: string,
  port: number,
  protocol: Protocol,
  options: TrafficOptions = {},
): Promise<Traffic> {
  const child = spawn(
    'ip',
    ['netns', 'exec', netns, process.execPath, CHILD, JSON.stringify({ host, port, protocol, options })],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const attempts: Attempt[] = [];
  let startedAt: number | undefined;
  let stderr = '';
  let pending = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const started = new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const report = JSON.parse(line) as Attempt | { started: number };
        if ('started' in report) {
          startedAt = report.started;
          resolve();
        } else attempts.push(report);
      }
    });
    void exited.then(() => reject(new Error(`the traffic client in ${netns} exited before starting: ${stderr}`)));
  });
  await started;
  return trafficOf(
    attempts,
    () => Date.now() - startedAt!,
    async () => {
      child.stdin.end('stop\n');
      await exited;
    },
  );
}
