import { splitAnnotated } from '../../bench/callgrind';

/**
 * How bench:e2e:instructions splits a process's count (bench/callgrind.ts):
 * lines as callgrind_annotate prints them for a node process of this project.
 */
const ANNOTATED = `--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                     file:function
--------------------------------------------------------------------------------
83,000,000 ( 8.30%)  ???:void v8::internal::MarkingVisitorBase<v8::internal::ConcurrentMarkingVisitor, v8::internal::ConcurrentMarkingState>::ProcessStrongHeapObject<v8::internal::FullHeapObjectSlot>(v8::internal::HeapObject, v8::internal::FullHeapObjectSlot, v8::internal::HeapObject) [/usr/bin/node]
55,000,000 ( 5.50%)  ???:v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*, v8::base::EnumSet<v8::internal::CodeFlushMode, int>, unsigned int, bool) [/usr/bin/node]
43,000,000 ( 4.30%)  ???:v8::internal::Sweeper::RawSweep(v8::internal::Page*, v8::internal::FreeSpaceTreatmentMode, v8::internal::Sweeper::SweepingMode) [/usr/bin/node]
26,000,000 ( 2.60%)  ???:void v8::internal::BodyDescriptorBase::IteratePointers<v8::internal::ConcurrentMarkingVisitor>(v8::internal::HeapObject, int, int, v8::internal::ConcurrentMarkingVisitor*) [/usr/bin/node]
 3,000,000 ( 0.30%)  ???:heap::base::SlotCallbackResult v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>(v8::internal::FullHeapObjectSlot, v8::internal::HeapObject) [/usr/bin/node]
40,000,000 ( 4.00%)  ???:v8::internal::compiler::AllNodes::Mark(v8::internal::Zone*, v8::internal::compiler::Node*, v8::internal::compiler::Graph const*) [/usr/bin/node]
60,000,000 ( 6.00%)  ???:v8::internal::Parser::ParseFunctionLiteral(v8::internal::AstRawString const*, v8::internal::Scanner::Location, v8::internal::FunctionNameValidity, v8::internal::FunctionKind, int, v8::internal::FunctionSyntaxKind, v8::internal::LanguageMode, v8::internal::ZoneList<v8::internal::AstRawString const*>*) [/usr/bin/node]
12,000,000 ( 1.20%)  ???:v8::internal::HeapObject::SizeFromMap(v8::internal::Map) const [/usr/bin/node]
   800,000 ( 0.08%)  /home/iojs/build/ws/out/../deps/uv/src/heap-inl.h:uv_timer_start
90,000,000 ( 9.00%)  ???:fe_mul_impl [/usr/lib/x86_64-linux-gnu/libcrypto.so.3]
`;

describe('splitting a callgrind count', () => {
  it('puts marking, sweeping and scavenging in the collector, compilers first, the rest in neither', () => {
    expect(splitAnnotated(ANNOTATED)).toEqual({
      total: 1_000_000_000,
      // The compiler's graph marking is the compiler's, though its name says Mark.
      jit: 100_000_000,
      gc: 83_000_000 + 55_000_000 + 43_000_000 + 26_000_000 + 3_000_000,
    });
  });

  it('an empty dump counts nothing', () => {
    expect(splitAnnotated('')).toEqual({ total: 0, jit: 0, gc: 0 });
  });
});
