// The UDP flows a listener placed on a backend with `refuse: true`: remembered by client address and
// port until idle as long as a session would be, so that every datagram of such a flow is dropped —
// its share is refused whole, not placed again datagram by datagram. No socket and no descriptor
// behind one: an entry is the backend's name and the tick of the flow's last datagram.

interface RefusedFlow {
  readonly backend: string;
  lastTick: number;
}

export class RefusedFlows {
  /** Client address → client port → flow, as the listener's sessions are looked up. */
  readonly #flows = new Map<string, Map<number, RefusedFlow>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** A flow placed on the refusing backend named `backend` at `tick`. */
  add(address: string, port: number, backend: string, tick: number): void {
    let byPort = this.#flows.get(address);
    if (byPort === undefined) this.#flows.set(address, (byPort = new Map()));
    if (!byPort.has(port)) this.#size++;
    byPort.set(port, { backend, lastTick: tick });
  }

  /** Whether a datagram from this client belongs to a refused flow (which it then keeps alive). */
  takes(address: string, port: number, tick: number): boolean {
    if (this.#size === 0) return false;
    const flow = this.#flows.get(address)?.get(port);
    if (flow === undefined) return false;
    flow.lastTick = tick;
    return true;
  }

  /** Forgets the flows silent for more than `idleTicks` ticks at `tick`. */
  expire(tick: number, idleTicks: number): void {
    this.#forgetWhere((flow) => tick - flow.lastTick > idleTicks);
  }

  /**
   * Forgets the flows whose backend is no longer one that refuses (`refusing`: the names that are,
   * after a reload): their clients' next datagram is placed by the new config.
   */
  keepOnly(refusing: ReadonlySet<string>): void {
    this.#forgetWhere((flow) => !refusing.has(flow.backend));
  }

  #forgetWhere(forget: (flow: RefusedFlow) => boolean): void {
    if (this.#size === 0) return;
    for (const [address, byPort] of this.#flows) {
      for (const [port, flow] of byPort) {
        if (!forget(flow)) continue;
        byPort.delete(port);
        this.#size--;
      }
      if (byPort.size === 0) this.#flows.delete(address);
    }
  }
}
