// `canary-l4 demo --exit`: what `npm start` shows a new user. It must print the split it achieved,
// and for TCP (smooth weighted round robin over 1000 connections) that split is exactly 90/10; the
// table alone on stdout (the logs on stderr); a port another process holds named by the flag that moves it.
import dgram from 'node:dgram';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { test } from 'node:test';
import { freePort } from '../support/net/free-ports.ts';
import { runCli } from '../support/process/serve-child.ts';

test('demo --exit prints an exact 90/10 TCP split and a UDP split, then exits 0', { timeout: 60_000 }, async () => {
  const tcpPort = await freePort('127.0.0.1', 'tcp');
  const udpPort = await freePort('127.0.0.1', 'udp');
  const { exit, stdout, stderr } = await runCli(
    [
      'demo',
      '--exit',
      '--admin-port',
      '0',
      '--admin-address',
      '127.0.0.1',
      '--tcp-port',
      String(tcpPort),
      '--udp-port',
      String(udpPort),
      '--log-level',
      'info',
    ],
    45_000,
  );
  assert.doesNotMatch(stdout, /"level"/, 'a JSON log line on stdout, among the table');
  assert.match(stderr, /"msg":"admin server listening"/, 'the logs go to stderr');
  assert.deepEqual(exit, { code: 0, signal: null }, stderr);
  const row = (listener: string, backend: string) =>
    new RegExp(`^${listener}\\s+\\w+\\s+${backend}\\s+(\\d+)%\\s+([\\d.]+)% \\((\\d+) of (\\d+)\\)$`, 'm').exec(stdout);
  const tcpStable = row('demo-tcp', 'stable');
  const tcpCanary = row('demo-tcp', 'canary');
  assert.ok(tcpStable && tcpCanary, `no TCP split in the output:\n${stdout}`);
  assert.deepEqual(tcpStable.slice(1), ['90', '90.0', '900', '1000']);
  assert.deepEqual(tcpCanary.slice(1), ['10', '10.0', '100', '1000']);

  const udpStable = row('demo-udp', 'stable');
  const udpCanary = row('demo-udp', 'canary');
  assert.ok(udpStable && udpCanary, `no UDP split in the output:\n${stdout}`);
  // Over loopback no datagram should be lost, but a lost one would be "no answer", not a wrong split.
  const udpTotal = Number(udpStable[3]) + Number(udpCanary[3]);
  assert.ok(udpTotal >= 195 && udpTotal <= 200, `UDP answers: ${udpTotal} of 200`);
  assert.ok(Math.abs(Number(udpCanary[3]) - 20) <= 2, `UDP canary sessions: ${udpCanary[3]} of 200, expected 20`);
  assert.match(stdout, /Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/);
});

test('demo on a TCP port another process holds names --tcp-port, the flag that moves it, and exits 2', {
  timeout: 30_000,
}, async () => {
  const taken = net.createServer();
  taken.listen(await freePort('127.0.0.1', 'tcp'), '127.0.0.1');
  await once(taken, 'listening');
  try {
    const tcpPort = (taken.address() as net.AddressInfo).port;
    const udpPort = await freePort('127.0.0.1', 'udp');
    const args = ['demo', '--exit', '--admin-port', '0', '--tcp-port', String(tcpPort), '--udp-port', String(udpPort)];
    const { exit, stdout, stderr } = await runCli(args, 20_000);
    assert.deepEqual(exit, { code: 2, signal: null }, stderr);
    assert.equal(stdout, '');
    assert.match(
      stderr,
      new RegExp(
        `^canary-l4: --tcp-port ${tcpPort}: listener "demo-tcp" cannot listen on tcp 127\\.0\\.0\\.1:${tcpPort}: the address is in use.*the demo's port moves with --tcp-port PORT$`,
        'm',
      ),
    );
  } finally {
    taken.close();
  }
});

test('demo on a UDP port another process holds names --udp-port, the flag that moves it, and exits 2', {
  timeout: 30_000,
}, async () => {
  const taken = dgram.createSocket('udp4');
  taken.bind(await freePort('127.0.0.1', 'udp'), '127.0.0.1');
  await once(taken, 'listening');
  try {
    const udpPort = taken.address().port;
    const tcpPort = await freePort('127.0.0.1', 'tcp');
    const args = ['demo', '--exit', '--admin-port', '0', '--tcp-port', String(tcpPort), '--udp-port', String(udpPort)];
    const { exit, stderr } = await runCli(args, 20_000);
    assert.deepEqual(exit, { code: 2, signal: null }, stderr);
    assert.match(
      stderr,
      new RegExp(
        `^canary-l4: --udp-port ${udpPort}: listener "demo-udp" .*the demo's port moves with --udp-port PORT$`,
        'm',
      ),
    );
  } finally {
    taken.close();
  }
});
