// A loopback TCP port that answers nothing: what a connect meets where nothing routes the address.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { sleep } from '../wait.ts';

/**
 * A loopback listener that never accepts, its queue already full: a SYN to it gets no answer, so a
 * connect hangs until the caller's timeout — a backend that "accepts nothing". Node's net.Server
 * always accepts, so this is a python3 child with backlog 0 and no accept() call.
 */
export async function startBlackhole(
  host = '127.0.0.1',
  port = 0,
): Promise<{ port: number; close: () => Promise<void> }> {
  const script = [
    'import socket, sys',
    's = socket.socket(socket.AF_INET, socket.SOCK_STREAM)',
    `s.bind((${JSON.stringify(host)}, ${port}))`,
    's.listen(0)',
    'print(s.getsockname()[1], flush=True)',
    'sys.stdin.read()', // until the test closes our stdin
  ].join('\n');
  const child: ChildProcess = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const bound = Number(line.toString().trim());
  // Fill the accept queue: these connections are never accepted, later SYNs are dropped.
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const socket = net.connect({ host, port: bound });
    socket.on('error', () => {});
    fillers.push(socket);
  }
  await sleep(200);
  return {
    port: bound,
    close: async () => {
      for (const socket of fillers) socket.destroy();
      child.stdin!.end();
      child.kill();
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}
