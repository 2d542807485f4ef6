import net from 'node:net';

/**
 * A controllable TCP proxy for fault injection between two real processes
 * (executor ↔ lock-server, rail-proxy ↔ rail-stub, ...). Faults apply per
 * chunk, so changing them affects live connections too:
 * - none: plain forwarding
 * - latency: every chunk, both directions, is delayed by `ms` (order kept)
 * - drop: new connections are accepted and closed at once (FIN); live ones are ended
 * - reset: new and live connections are reset (RST)
 * - blackhole: connections stay open, bytes are swallowed, nothing comes back
 */
export type TcpFault =
  | { kind: 'none' }
  | { kind: 'latency'; ms: number }
  | { kind: 'drop' }
  | { kind: 'reset' }
  | { kind: 'blackhole' };

export interface TcpProxyStats {
  connectionsAccepted: number;
  connectionsOpen: number;
  bytesUpstream: number;
  bytesDownstream: number;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
}

export class TcpProxy {
  private fault: TcpFault = { kind: 'none' };
  private readonly pairs = new Set<Pair>();
  private readonly counters = { connectionsAccepted: 0, bytesUpstream: 0, bytesDownstream: 0 };

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private upstreamTarget: { host: string; port: number },
    readonly host: string,
  ) {}

  /** Where new connections go. */
  get target(): { host: string; port: number } {
    return this.upstreamTarget;
  }

  /**
   * Sends new connections to `target` and resets the live ones, as a stable
   * address that moves to a promoted standby does (a Cloud SQL failover).
   */
  retarget(target: { host?: string; port: number }): void {
    this.upstreamTarget = { host: target.host ?? '127.0.0.1', port: target.port };
    for (const pair of [...this.pairs]) this.kill(pair, 'reset');
  }

  /**
   * Listens on `listenHost` (default 127.0.0.1; another loopback address gives it
   * an address of its own a packet filter can cut) and a free port unless
   * `listenPort`, and forwards to `target`.
   */
  static async start(options: {
    target: { host?: string; port: number };
    listenPort?: number;
    listenHost?: string;
  }): Promise<TcpProxy> {
    const host = options.listenHost ?? '127.0.0.1';
    const target = { host: options.target.host ?? '127.0.0.1', port: options.target.port };
    const ref: { proxy?: TcpProxy } = {};
    const server = net.createServer({ allowHalfOpen: true }, (client) => ref.proxy?.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.listenPort ?? 0, host, () => resolve());
    });
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    ref.proxy = new TcpProxy(server, port, target, host);
    return ref.proxy;
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  get stats(): TcpProxyStats {
    return { ...this.counters, connectionsOpen: this.pairs.size };
  }

  get currentFault(): TcpFault {
    return this.fault;
  }

  /** Sets the fault for new traffic; drop and reset also hit live connections. */
  setFault(fault: TcpFault): void {
    this.fault = fault;
    if (fault.kind === 'reset' || fault.kind === 'drop') {
      for (const pair of [...this.pairs]) this.kill(pair, fault.kind);
    }
  }

  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.kill(pair, 'reset');
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.counters.connectionsAccepted++;
    const pair: Pair = { client, upstream: null };
    this.pairs.add(pair);
    client.on('error', () => this.kill(pair, 'reset'));
    client.on('close', () => this.kill(pair, 'reset'));
    switch (this.fault.kind) {
      case 'drop':
      case 'reset':
        this.kill(pair, this.fault.kind);
        return;
      case 'blackhole':
      case 'none':
      case 'latency':
        break;
    }
    const upstream = net.connect({ ...this.target, allowHalfOpen: true });
    pair.upstream = upstream;
    upstream.on('error', () => this.kill(pair, 'reset'));
    client.on('data', (chunk: Buffer) => this.relay(chunk, upstream, 'bytesUpstream'));
    upstream.on('data', (chunk: Buffer) => this.relay(chunk, client, 'bytesDownstream'));
    // Half-close travels like data (same delay), so a response is never cut short.
    client.on('end', () => this.relay(null, upstream, 'bytesUpstream'));
    upstream.on('end', () => this.relay(null, client, 'bytesDownstream'));
  }

  /** `chunk === null` is the sender's FIN. */
  private relay(
    chunk: Buffer | null,
    to: net.Socket,
    counter: 'bytesUpstream' | 'bytesDownstream',
  ): void {
    const fault = this.fault;
    switch (fault.kind) {
      case 'blackhole':
        return;
      case 'latency':
        setTimeout(() => this.write(to, chunk, counter), fault.ms);
        return;
      case 'none':
      case 'drop':
      case 'reset':
        this.write(to, chunk, counter);
        return;
    }
  }

  private write(
    to: net.Socket,
    chunk: Buffer | null,
    counter: 'bytesUpstream' | 'bytesDownstream',
  ): void {
    if (to.destroyed || !to.writable) return;
    if (chunk === null) {
      to.end();
      return;
    }
    this.counters[counter] += chunk.length;
    to.write(chunk);
  }

  private kill(pair: Pair, how: 'drop' | 'reset'): void {
    if (!this.pairs.delete(pair)) return;
    for (const socket of [pair.client, pair.upstream]) {
      if (!socket || socket.destroyed) continue;
      if (how === 'reset') socket.resetAndDestroy();
      else socket.end(() => socket.destroy());
    }
  }
}
