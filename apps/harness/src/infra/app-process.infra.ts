import type { ChildProcess } from 'node:child_process';
import { appMain } from './repo.infra';
import { freePort, registerAudience, spawnGroup, testAppAuthEnv } from '@dlock/testing';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const OUTPUT_KEEP_CHARS = 200_000;
/** Fenced-out times kept for the soak's timeline picture; beyond it the count still grows. */
const FENCED_AT_KEEP = 100_000;
/**
 * A Nest app alone takes ~15 s to answer /health/live on the shared 2-core
 * machine under load, and the harness starts three at once: 30 s was missed.
 */
const START_TIMEOUT_MS = 90_000;

/**
 * One real process of a built app (`dist/apps/<app>/main.js`) on a fixed
 * port, so it can be killed and started again at the same address. Counts
 * the structured safety events (`"event":"..."`) in its log across restarts.
 */
export class AppProcess {
  private proc: ChildProcess | null = null;
  private out = '';
  private partial = '';
  private exited: Promise<void> = Promise.resolve();
  readonly events = new Map<string, number>();
  /** performance.now() of each `fenced_out` line read (the soak's timeline draws them). */
  readonly fencedAt: number[] = [];
  starts = 0;

  private constructor(
    readonly name: string,
    readonly app: string,
    readonly port: number,
    private env: Record<string, string>,
    /** Called with the pid of every spawn, restarts included (a partition's cgroup). */
    private readonly onSpawn?: (pid: number) => void,
  ) {}

  static async start(
    app: string,
    env: Record<string, string>,
    opts: { name?: string; port?: number; wait?: boolean; onSpawn?: (pid: number) => void } = {},
  ): Promise<AppProcess> {
    const port = opts.port ?? (await freePort());
    const p = new AppProcess(opts.name ?? app, app, port, env, opts.onSpawn);
    await p.launch(opts.wait ?? true);
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  exitInfo(): { code: number | null; signal: NodeJS.Signals | null } | null {
    if (!this.proc || this.running()) return null;
    return { code: this.proc.exitCode, signal: this.proc.signalCode };
  }

  output(): string {
    return this.out;
  }

  eventCount(name: string): number {
    return this.events.get(name) ?? 0;
  }

  /** Starts it again (same port); `env` patches are kept for later restarts. */
  async restart(envPatch: Record<string, string | undefined> = {}): Promise<void> {
    if (this.running()) await this.kill();
    for (const [k, v] of Object.entries(envPatch)) {
      if (v === undefined) delete this.env[k];
      else this.env[k] = v;
    }
    await this.launch(true);
  }

  pause(): void {
    if (this.running()) this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    if (this.running()) this.proc?.kill('SIGCONT');
  }

  async kill(): Promise<void> {
    if (!this.running()) return;
    this.proc?.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (graceful shutdown), SIGKILL after `graceMs`. */
  async stop(graceMs = 8_000): Promise<void> {
    if (!this.running()) return;
    this.proc?.kill('SIGCONT');
    this.proc?.kill('SIGTERM');
    const timer = setTimeout(() => this.proc?.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Resolves when the process has exited on its own (e.g. an EXECUTOR_CRASH_AT self-kill). */
  async waitExit(timeoutMs: number): Promise<boolean> {
    if (!this.running()) return true;
    return Promise.race([this.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  }

  private async launch(waitReady: boolean): Promise<void> {
    // Authentication is on here as everywhere: the apps trust the development issuer (docs/security.md).
    const auth = await testAppAuthEnv(this.env.OWNER_ID ?? this.app);
    registerAudience(this.url, this.app);
    // Its own process group, killed with the test that started it, also when a boot fails halfway.
    const proc = spawnGroup(process.execPath, [appMain(this.app)], {
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        ...auth,
        ...this.env,
        PORT: String(this.port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    if (proc.pid !== undefined) this.onSpawn?.(proc.pid);
    this.starts++;
    this.partial = '';
    proc.stdout?.on('data', (chunk: Buffer) => this.keep(chunk));
    proc.stderr?.on('data', (chunk: Buffer) => this.keep(chunk));
    this.exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    if (!waitReady) return;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (!this.running()) {
        throw new Error(`${this.name} exited during start:\n${this.out.slice(-4000)}`);
      }
      try {
        const res = await fetch(`${this.url}/health/live`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok) return;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) {
        await this.kill();
        throw new Error(`${this.name} did not become live:\n${this.out.slice(-4000)}`);
      }
      await sleep(100);
    }
  }

  private bump(name: string): void {
    this.events.set(name, (this.events.get(name) ?? 0) + 1);
  }

  private keep(chunk: Buffer): void {
    const text = chunk.toString();
    this.out += text;
    if (this.out.length > OUTPUT_KEEP_CHARS) this.out = this.out.slice(-OUTPUT_KEEP_CHARS / 2);
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      const m = /"event":"([a-z_]+)"/.exec(line);
      if (!m) continue;
      this.bump(m[1]);
      // fenced_out also by guard: fenced_out:account / fenced_out:rail / fenced_out:ledger.
      const r = /"resource":"([a-z]+)"/.exec(line);
      if (m[1] === 'fenced_out' && r) this.bump(`fenced_out:${r[1]}`);
      if (m[1] === 'fenced_out' && this.fencedAt.length < FENCED_AT_KEEP)
        this.fencedAt.push(performance.now());
    }
  }
}
