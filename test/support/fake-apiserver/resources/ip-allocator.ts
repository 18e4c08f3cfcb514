/**
 * Service cluster-IP and node-port allocation. The default range is a loopback /24 so tests can
 * bind real backends on the allocated cluster IPs.
 */

function ipToInt(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255))
    throw new Error(`invalid IPv4 address: ${ip}`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function intToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface IpAllocatorOptions {
  /** What the range is for, in error messages. Default `service`. */
  readonly purpose?: string;
  /**
   * Hand out the next free address after the last one given (as host-local IPAM does for pods),
   * rather than the lowest free one, so a freed address is not reused at once.
   */
  readonly roundRobin?: boolean;
}

export class IpAllocator {
  readonly cidr: string;
  readonly #first: number;
  readonly #last: number;
  readonly #used = new Set<number>();
  readonly #roundRobin: boolean;
  #lastGiven: number;

  constructor(cidr: string, options: IpAllocatorOptions = {}) {
    const purpose = options.purpose ?? 'service';
    const m = cidr.match(/^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/);
    if (!m) throw new Error(`invalid ${purpose} CIDR (IPv4 a.b.c.d/n expected): ${cidr}`);
    const bits = Number(m[2]);
    if (bits < 8 || bits > 30) throw new Error(`${purpose} CIDR prefix must be /8../30: ${cidr}`);
    const size = 2 ** (32 - bits);
    const base = (ipToInt(m[1]!) & ~(size - 1)) >>> 0;
    this.cidr = `${intToIp(base)}/${bits}`;
    // Network and broadcast addresses are never handed out.
    this.#first = base + 1;
    this.#last = base + size - 2;
    this.#roundRobin = options.roundRobin ?? false;
    this.#lastGiven = this.#last;
  }

  contains(ip: string): boolean {
    try {
      const n = ipToInt(ip);
      return n >= this.#first && n <= this.#last;
    } catch {
      return false;
    }
  }

  /** Next free address: the lowest, or (round robin) the first after the last one given. Throws when the range is full. */
  allocate(): string {
    const count = this.#last - this.#first + 1;
    const start = this.#roundRobin ? this.#lastGiven + 1 - this.#first : 0;
    for (let i = 0; i < count; i++) {
      const n = this.#first + ((start + i) % count);
      if (!this.#used.has(n)) {
        this.#used.add(n);
        this.#lastGiven = n;
        return intToIp(n);
      }
    }
    throw new Error(`range is full: ${this.cidr}`);
  }

  /** Claim a specific address; returns an error text or undefined. */
  claim(ip: string): string | undefined {
    if (!this.contains(ip)) return `provided IP is not in the valid range. The range of valid IPs is ${this.cidr}`;
    const n = ipToInt(ip);
    if (this.#used.has(n)) return 'provided IP is already allocated';
    this.#used.add(n);
    return undefined;
  }

  release(ip: string): void {
    if (this.contains(ip)) this.#used.delete(ipToInt(ip));
  }
}

export class PortAllocator {
  readonly #used = new Set<number>();
  readonly #min: number;
  readonly #max: number;
  constructor(min = 30000, max = 32767) {
    this.#min = min;
    this.#max = max;
  }
  allocate(): number {
    for (let p = this.#min; p <= this.#max; p++) {
      if (!this.#used.has(p)) {
        this.#used.add(p);
        return p;
      }
    }
    throw new Error('node port range is full');
  }
  claim(p: number): string | undefined {
    if (p < this.#min || p > this.#max)
      return `provided port is not in the valid range. The range of valid ports is ${this.#min}-${this.#max}`;
    if (this.#used.has(p)) return 'provided port is already allocated';
    this.#used.add(p);
    return undefined;
  }
  release(p: number): void {
    this.#used.delete(p);
  }
}
