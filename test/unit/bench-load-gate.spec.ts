import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';
import { BUSY_EXIT_CODE, loadGate, markNoisy, reportWithLoad } from '../../bench/load-gate';

/** The bench sources that write a report file (they call writeFileSync and name a report), with their text. */
function reportWriters(): { file: string; text: string }[] {
  const dir = path.join(REPO_ROOT, 'bench');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => ({ file, text: readFileSync(path.join(dir, file), 'utf8') }))
    .filter(({ text }) => text.includes('writeFileSync(') && /REPORT|reports/.test(text));
}

/** Benches whose figures are instruction counts: no load gate (bench/callgrind.ts says why). */
const LOAD_FREE = ['e2e/instructions.ts'];

/** A bench refuses a busy machine, or marks its report as noise when forced (README.md, "Benchmarks"). */
describe('the benches load gate', () => {
  let exit: jest.SpyInstance;
  beforeEach(() => {
    exit = jest.spyOn(process, 'exit').mockImplementation(((code: number) => {
      throw new Error(`exit ${code}`);
    }) as never);
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    jest.spyOn(console, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('refuses to start above the threshold, with the reason and the way out', () => {
    expect(() => loadGate('bench:x', { BENCH_LOAD_MAX: '-1' })).toThrow(`exit ${BUSY_EXIT_CODE}`);
    expect(exit).toHaveBeenCalledWith(BUSY_EXIT_CODE);
    expect(String((console.error as jest.Mock).mock.calls[0][0])).toMatch(/BENCH_NOISY=1/);
  });

  it('forced with BENCH_NOISY=1, the report says so at its top and carries the load line', () => {
    const gate = loadGate('bench:x', { BENCH_LOAD_MAX: '-1', BENCH_NOISY: '1' });
    expect(gate.noisy).toBe(true);
    const text = reportWithLoad(gate, '# Report\n\n- machine: 2 CPUs\n- command: x');
    expect(text.startsWith('> **Noisy: not a measurement.**')).toBe(true);
    const lines = text.split('\n');
    const machine = lines.findIndex((l) => l.startsWith('- machine'));
    expect(lines[machine + 1]).toMatch(/^- load average \(1 min\): .* threshold -1/);
  });

  it('on a quiet machine the report is left as it is, with its load line', () => {
    const gate = loadGate('bench:x', { BENCH_LOAD_MAX: '1000' });
    expect(gate.noisy).toBe(false);
    expect(markNoisy(gate, 'text')).toBe('text');
    expect(reportWithLoad(gate, 'no machine line')).toMatch(/^no machine line\n- load average/);
  });

  it('every bench that writes a report goes through the gate', () => {
    const writers = reportWriters();
    expect(writers.map(({ file }) => file)).toEqual(
      expect.arrayContaining(['e2e/bench.ts', 'stack/bench.ts']),
    );
    // Benches that count instructions (bench/callgrind.ts), which the machine's load does not
    // move, need no gate; they count and never read CPU time.
    const counting = writers.filter(({ file }) => LOAD_FREE.includes(file));
    expect(counting.map(({ file }) => file)).toEqual(LOAD_FREE);
    for (const { text } of counting) {
      expect(text).toMatch(/\.instructions\(\)/);
      expect(text).not.toMatch(/cpuUsage|\/proc\//);
    }
    const ungated = writers
      .filter((w) => !LOAD_FREE.includes(w.file) && !w.text.includes('loadGate('))
      .map((w) => w.file);
    expect(ungated).toEqual([]);
  });
});
