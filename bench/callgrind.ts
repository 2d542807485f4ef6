/**
 * Counting a Node process's instructions with callgrind, for the benches that
 * need a figure the machine's other load and speed do not move (the host of
 * this project drifts by 2x between hours: CONTRIBUTING.md, "Before a change lands").
 *
 * The process runs under `valgrind --tool=callgrind --instr-atstart=no`: its
 * start-up and warm-up run uninstrumented (faster), and the bench switches
 * counting on, zeroes the counter and dumps it around each measurement with
 * `callgrind_control`. Instructions of V8's compilers are counted apart: they
 * still optimise long after a warm-up and their bursts land in one
 * measurement and not the next. The garbage collector's are counted apart too,
 * but stay in the process's figure: they are the payout's own cost, deferred,
 * and they grow with what a process keeps alive.
 */
import { execFile } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * What callgrind counted: everything; the part V8 spent compiling (parser,
 * bytecode, TurboFan, deopts); and the part its garbage collector spent
 * (scavenges, marking, sweeping, evacuation), which grows with what a process
 * keeps alive.
 */
export interface Instructions {
  total: number;
  jit: number;
  gc: number;
}

/** Counting control of one process running under callgrind. */
export interface CallgrindCounter {
  /** Counting on or off (start-up and warm-ups run uninstrumented, faster). */
  instrument(on: boolean): Promise<void>;
  zero(): Promise<void>;
  /** Instructions since the last `zero()`. */
  instructions(): Promise<Instructions>;
}

/** `node <args>` as a command that runs it under callgrind, dumps and logs in `dir`. */
export function underCallgrind(dir: string, nodeArgs: readonly string[]): [string, string[]] {
  return [
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${path.join(dir, 'cg.%p')}`,
      `--log-file=${path.join(dir, 'vg.%p.log')}`,
      process.execPath,
      ...nodeArgs,
    ],
  ];
}

/** The counter of the process `pid` started by underCallgrind(dir, …). */
export function callgrindCounter(dir: string, pid: number): CallgrindCounter {
  const control = (...a: string[]) => run('callgrind_control', [...a, String(pid)]);
  return {
    instrument: async (on) => void (await control('-i', on ? 'on' : 'off')),
    zero: async () => void (await control('-z')),
    instructions: async () => {
      await control('-d');
      const file = lastDump(dir, pid);
      const counted = await splitDump(file);
      if (process.env.BENCH_KEEP_DUMPS !== '1') rmSync(file);
      return counted;
    },
  };
}

/** V8's compilers, counted apart (see the top of this file). */
const JIT_FUNCTIONS =
  /v8::internal::(compiler|maglev|baseline|interpreter|Compiler|Parser|PreParser|Scanner|Zone|Deoptimizer|TranslatedState|AstValueFactory|Scope|DeclarationScope|OptimizedCompilationInfo|Assembler|MacroAssembler|TurboAssembler)\b/;

/** V8's garbage collector, on the main thread and its helpers; the compilers' matches win. */
const GC_FUNCTIONS =
  /v8::internal::(MarkingVisitorBase|ConcurrentMarking|ConcurrentMarkingVisitor|MainMarkingVisitor|MarkCompactCollector|MinorMarkCompactCollector|IncrementalMarking|MarkingWorklists?|Sweeper|Evacuator|EvacuateVisitorBase|EvacuationAllocator|EvacuateNewSpaceVisitor|Scavenger|ScavengerCollector|ScavengeVisitor|RootScavengeVisitor|IterateAndScavengePromotedObjectsVisitor|RecordMigratedSlotVisitor|PointersUpdatingVisitor|RememberedSet|\(anonymous namespace\)::RememberedSetUpdatingItem|InternalizedStringTableCleaner|GlobalHandles|MarkingBarrier|Heap::(CollectGarbage|PerformGarbageCollection|Scavenge|MarkCompact|IterateRoots)\w*)\b|heap::base::/;

async function splitDump(file: string): Promise<Instructions> {
  const { stdout } = await run('callgrind_annotate', ['--threshold=100', '--inclusive=no', file], {
    maxBuffer: 256 * 1024 * 1024,
  });
  return splitAnnotated(stdout);
}

/** `callgrind_annotate --inclusive=no` output split into total, compilers and collector. */
export function splitAnnotated(stdout: string): Instructions {
  // callgrind_annotate prints no totals for an empty dump.
  let total = 0;
  let jit = 0;
  let gc = 0;
  for (const line of stdout.split('\n')) {
    const m = /^\s*([\d,]+) \(/.exec(line);
    if (!m) continue;
    const ir = Number(m[1].replace(/,/g, ''));
    if (line.includes('PROGRAM TOTALS')) total = ir;
    else if (JIT_FUNCTIONS.test(line)) jit += ir;
    else if (GC_FUNCTIONS.test(line)) gc += ir;
  }
  return { total, jit, gc };
}

/** The newest callgrind dump of `pid`. */
function lastDump(dir: string, pid: number): string {
  const prefix = `cg.${pid}.`;
  const parts = readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .map((f) => Number(f.slice(prefix.length)))
    .filter(Number.isInteger)
    .sort((a, b) => a - b);
  if (parts.length === 0) throw new Error(`no callgrind dump of ${pid} in ${dir}`);
  return path.join(dir, `${prefix}${parts[parts.length - 1]}`);
}
