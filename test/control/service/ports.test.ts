import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allocatePorts, type Allocation, type PortKey } from '../../../src/control/service/ports.ts';

const key = (service: string, port: number, protocol: 'TCP' | 'UDP' = 'TCP'): PortKey => ({ service, port, protocol });
const at = (proxyPort: number, service: string, port: number, protocol: 'TCP' | 'UDP' = 'TCP'): Allocation => ({
  ...key(service, port, protocol),
  proxyPort,
});

function allocate(recorded: Allocation[], wanted: PortKey[], base = 8080): Allocation[] {
  const result = allocatePorts(recorded, wanted, base);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return [...result.allocations];
}

describe('allocatePorts', () => {
  const cases: { name: string; recorded: Allocation[]; wanted: PortKey[]; expected: Allocation[] }[] = [
    {
      name: 'first allocation: from the base, in (service, port, protocol) order',
      recorded: [],
      wanted: [key('web', 443), key('db', 5432), key('web', 80), key('dns', 53, 'UDP'), key('dns', 53, 'TCP')],
      expected: [
        at(8080, 'db', 5432),
        at(8081, 'dns', 53, 'TCP'),
        at(8082, 'dns', 53, 'UDP'),
        at(8083, 'web', 80),
        at(8084, 'web', 443),
      ],
    },
    {
      name: 'recorded ports never move, whatever the order of the spec',
      recorded: [at(8085, 'web', 443), at(8080, 'web', 80)],
      wanted: [key('web', 443), key('web', 80)],
      expected: [at(8080, 'web', 80), at(8085, 'web', 443)],
    },
    {
      name: 'a new key takes the lowest free port, filling holes',
      recorded: [at(8080, 'web', 80), at(8082, 'web', 443)],
      wanted: [key('web', 80), key('web', 443), key('api', 9000)],
      expected: [at(8081, 'api', 9000), at(8080, 'web', 80), at(8082, 'web', 443)],
    },
    {
      name: 'removing a port frees it and moves no other',
      recorded: [at(8080, 'web', 80), at(8081, 'web', 443), at(8082, 'web', 8443)],
      wanted: [key('web', 80), key('web', 8443)],
      expected: [at(8080, 'web', 80), at(8082, 'web', 8443)],
    },
    {
      name: 'a port claimed twice in a hand-edited status stays with the first key',
      recorded: [at(8080, 'a', 1), at(8080, 'b', 1)],
      wanted: [key('a', 1), key('b', 1)],
      expected: [at(8080, 'a', 1), at(8081, 'b', 1)],
    },
  ];
  for (const { name, recorded, wanted, expected } of cases) {
    it(name, () => assert.deepEqual(allocate(recorded, wanted), expected));
  }

  it('in a pod: each key its preferred port (its targetPort) if free and not reserved; the first (sorted) wins a shared one', () => {
    const wanted = [
      { ...key('web', 80), preferred: 8000 },
      { ...key('api', 80), preferred: 8000 },
      { ...key('api', 90), preferred: 9090 },
      key('web', 81),
    ];
    const result = allocatePorts([], wanted, 8080, new Set([9090]));
    assert.ok(result.ok);
    assert.deepEqual(result.allocations, [
      at(8000, 'api', 80),
      at(8080, 'api', 90),
      at(8081, 'web', 80),
      at(8082, 'web', 81),
    ]);
  });

  it('in a pod: a key on its preferred port keeps it against a newcomer, and follows a moved targetPort', () => {
    const kept = allocatePorts(
      [at(8000, 'web', 80)],
      [
        { ...key('web', 80), preferred: 8000 },
        { ...key('api', 80), preferred: 8000 },
      ],
      8080,
    );
    assert.ok(kept.ok);
    assert.deepEqual(kept.allocations, [at(8080, 'api', 80), at(8000, 'web', 80)]);
    const moved = allocatePorts([at(8000, 'web', 80)], [{ ...key('web', 80), preferred: 8001 }], 8080);
    assert.ok(moved.ok);
    assert.deepEqual(moved.allocations, [at(8001, 'web', 80)]);
  });

  it('says so when the port range is exhausted', () => {
    const result = allocatePorts([at(65535, 'a', 1)], [key('a', 1), key('b', 1)], 65535);
    assert.equal(result.ok, false);
    assert.match(result.ok ? '' : result.message, /no free proxy port .* for b:1\/TCP/);
  });
});
