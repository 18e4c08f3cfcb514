// A small, bounded UDP load client, run as a child process: `udp-client.ts PORT MODE SECONDS [RATE]`.
//   max  — closed loop: a fixed window of datagrams in flight per socket, each reply sends the next;
//          reports round trips per second (the most this one client can drive).
//   rate — open loop at RATE datagrams/s spread over the sockets, then a grace period; reports loss.
// Several sockets, so a proxy sees several flows (sessions) and splits them 90/10.
// Prints one JSON line on stdout.
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { ipLiteralLookup, UDP_SOCKET_BUFFER_BYTES } from './udp-common.ts';

const SOCKETS = 16;
const WINDOW_PER_SOCKET = 8;
const PAYLOAD = Buffer.alloc(64, 'u');
/** A socket whose window got no reply for this long lost its datagrams: refill it. */
const STALL_MS = 200;
const LOSS_GRACE_MS = 500;

export interface MaxRateResult {
  readonly roundTripsPerSecond: number;
  readonly sent: number;
  readonly received: number;
}

export interface FixedRateResult {
  readonly targetPerSecond: number;
  readonly sentPerSecond: number;
  readonly sent: number;
  readonly received: number;
  readonly lossPercent: number;
}

interface Flow {
  readonly socket: Socket;
  repliesSinceCheck: number;
}

async function openFlows(port: number, onReply: (flow: Flow) => void): Promise<Flow[]> {
  return Promise.all(
    Array.from({ length: SOCKETS }, async () => {
      const socket = createSocket({ type: 'udp4', lookup: ipLiteralLookup, recvBufferSize: UDP_SOCKET_BUFFER_BYTES, sendBufferSize: UDP_SOCKET_BUFFER_BYTES });
      const flow: Flow = { socket, repliesSinceCheck: 0 };
      socket.on('message', () => onReply(flow));
      socket.on('error', () => {}); // ICMP unreachable while a proxy restarts: counted as loss
      await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
      return flow;
    }),
  );
}

async function maxRate(port: number, seconds: number): Promise<MaxRateResult> {
  let running = true;
  let sent = 0;
  let received = 0;
  const sendOn = (flow: Flow, count: number): void => {
    for (let i = 0; i < count; i++) flow.socket.send(PAYLOAD);
    sent += count;
  };
  const flows = await openFlows(port, (flow) => {
    received++;
    flow.repliesSinceCheck++;
    if (running) sendOn(flow, 1);
  });
  const refillStalled = setInterval(() => {
    for (const flow of flows) {
      if (flow.repliesSinceCheck === 0) sendOn(flow, WINDOW_PER_SOCKET);
      flow.repliesSinceCheck = 0;
    }
  }, STALL_MS);
  const startedAt = performance.now();
  for (const flow of flows) sendOn(flow, WINDOW_PER_SOCKET);
  await sleep(seconds * 1_000);
  running = false;
  const elapsed = (performance.now() - startedAt) / 1_000;
  const receivedInTime = received;
  clearInterval(refillStalled);
  for (const flow of flows) flow.socket.close();
  return { roundTripsPerSecond: receivedInTime / elapsed, sent, received: receivedInTime };
}

async function fixedRate(port: number, seconds: number, perSecond: number): Promise<FixedRateResult> {
  let sent = 0;
  let received = 0;
  const flows = await openFlows(port, () => {
    received++;
  });
  const startedAt = performance.now();
  // Every millisecond, catch up to where the schedule says we should be: short bursts, exact average.
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = (performance.now() - startedAt) / 1_000;
      const due = Math.floor(Math.min(elapsed, seconds) * perSecond);
      for (; sent < due; sent++) flows[sent % SOCKETS]?.socket.send(PAYLOAD);
      if (elapsed >= seconds) {
        clearInterval(tick);
        resolve();
      }
    }, 1);
  });
  const sendingSeconds = (performance.now() - startedAt) / 1_000;
  await sleep(LOSS_GRACE_MS);
  for (const flow of flows) flow.socket.close();
  return {
    targetPerSecond: perSecond,
    sentPerSecond: sent / sendingSeconds,
    sent,
    received,
    lossPercent: sent === 0 ? 100 : (100 * Math.max(0, sent - received)) / sent,
  };
}

const [portArg, mode, secondsArg, rateArg] = process.argv.slice(2);
const port = Number(portArg);
const seconds = Number(secondsArg);
const result = mode === 'max' ? await maxRate(port, seconds) : await fixedRate(port, seconds, Number(rateArg));
console.log(JSON.stringify(result));
