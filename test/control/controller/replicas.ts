// `canary-l4 proxy` replicas as child processes, as the pods of a proxy Deployment run them: they
// share the proxy ports (SO_REUSEPORT) and elect a leader with a Lease; each has its own admin
// server on an ephemeral loopback port.

import { spawn, type ChildProcess } from 'node:child_process';
import { MAIN } from '../../support/process/serve-child.ts';

export interface Replica {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** NaN until the replica has logged where its admin server listens. */
  adminPort(): number;
  /** What it wrote so far (stdout, then stderr). */
  output(): string;
}

export function startReplica(
  kubeconfig: string,
  options: { release: string; portBase: number; leaseSeconds: number; extraArgs?: readonly string[] },
): Replica {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'proxy',
      '--kubeconfig',
      kubeconfig,
      '-n',
      'default',
      '--canary-release',
      options.release,
      '--port-base',
      String(options.portBase),
      '--reuse-port',
      '--lease-duration',
      String(options.leaseSeconds),
      '--admin-port',
      '0',
      '--admin-host',
      '127.0.0.1',
      '--log-level',
      'info',
      ...(options.extraArgs ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return {
    child,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    adminPort: () => Number(/"adminPort":(\d+)/.exec(stdout)?.[1] ?? Number.NaN),
    output: () => stdout + stderr,
  };
}

/** The value of the first sample of a replica's /metrics that `pattern` (one capture group) matches. */
export async function metric(replica: Replica, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${replica.adminPort()}/metrics`)).text();
  const match = pattern.exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

export const isLeader = async (replica: Replica) => (await metric(replica, /^canary_l4_leader (\d+)$/m)) === 1;
