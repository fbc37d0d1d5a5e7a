// mlir-opt's command line, unchanged: one dash or two, every registered pass a flag (upstream
// and tilec, in command-line order, options after '='), nested by its anchor op, and the
// textual --pass-pipeline exactly as mlir-opt reads it.
// RUN: tile-opt %s -canonicalize -cse | filecheck %s --check-prefix=FLAGS
// RUN: tile-opt %s --canonicalize --cse | filecheck %s --check-prefix=FLAGS
// RUN: tile-opt %s -cse | filecheck %s --check-prefix=CSE
// RUN: tile-opt %s -pass-pipeline='builtin.module(func.func(cse))' | filecheck %s --check-prefix=CSE
// RUN: tile-opt %s --pass-pipeline="builtin.module(func.func(cse))" | filecheck %s --check-prefix=CSE
// RUN: tile-opt %s -pass-pipeline='builtin.module(tile-verify,func.func(cse))' | filecheck %s --check-prefix=CSE
// A pass anchored on gpu.module runs nested in it, its options given after '='.
// RUN: tile-opt %s -convert-gpu-to-nvvm='use-bare-ptr-memref-call-conv=1' | filecheck %s --check-prefix=NEST
// RUN: tile-opt %s -p 'convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}' | filecheck %s --check-prefix=NEST
// RUN: tile-opt %s -convert-gpu-to-nvvm | filecheck %s --check-prefix=NOBARE
// Order is command-line order: cse before canonicalize leaves the duplicate constant folded
// only once; -p specs and pass flags interleave.
// RUN: tile-opt %s -tile-verify -p canonicalize -cse -o %t && filecheck %s --check-prefix=FLAGS < %t
// RUN: tile-opt -allow-unregistered-dialect -mlir-disable-threading -verify-each=false %s -cse | filecheck %s --check-prefix=CSE
// Printing options (the LOCAL and ALIAS checks name lines 57 and 58 of this file).
// RUN: tile-opt %s -mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: tile-opt %s --mlir-print-local-scope -mlir-print-debuginfo | filecheck %s --check-prefix=LOCAL
// RUN: tile-opt %s -mlir-print-debuginfo | filecheck %s --check-prefix=ALIAS
// Errors: an unknown flag, --pass-pipeline beside pass flags, an unanchored --pass-pipeline,
// an mlir-opt option the bindings lack.
// RUN: not tile-opt %s -no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tile-opt %s -pass-pipeline='builtin.module(cse)' -canonicalize 2>&1 | filecheck %s --check-prefix=MIXED
// RUN: not tile-opt %s -pass-pipeline=cse 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not tile-opt %s -mlir-print-value-users 2>&1 | filecheck %s --check-prefix=LACKS
// RUN: not tile-opt %s -verify-each=maybe 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not tile-opt %s %s 2>&1 | filecheck %s --check-prefix=TWO

// FLAGS-LABEL: func.func @dedup(
// FLAGS-NEXT: %[[SQ:.*]] = arith.muli %arg0, %arg0 : i32
// FLAGS-NEXT: return %[[SQ]] : i32

// CSE-LABEL: func.func @dedup(
// CSE: arith.addi
// CSE-NOT: arith.addi
// CSE: arith.muli

// NEST: gpu.module @kernels
// NEST: llvm.func @scale(%{{.*}}: !llvm.ptr)
// NOBARE: llvm.func @scale(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64

// GENERIC: "func.func"() <{function_type = (i32) -> i32, sym_name = "dedup"}>

// LOCAL: func.func @dedup(%arg0: i32 loc("{{.*}}mlir-opt-flags.mlir":57:18
// LOCAL-NOT: #loc
// ALIAS: arith.constant 0 : i32 loc(#[[LOC:loc[0-9]+]])
// ALIAS: #[[LOC]] = loc("{{.*}}mlir-opt-flags.mlir":58:9)

// UNKNOWN: tile-opt: error: unknown command line argument '-no-such-pass'
// MIXED: tile-opt: error: '-pass-pipeline' can't be used with individual passes (-canonicalize)
// ANCHOR: expected pass pipeline to be wrapped with the anchor operation type
// LACKS: tile-opt: error: '-mlir-print-value-users': mlir-opt's '-mlir-print-value-users' is not available
// BOOL: '-verify-each=maybe': 'verify-each' takes true or false
// TWO: tile-opt: error: one input file at most, got 2
func.func @dedup(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.addi %a, %c0 : i32
  %2 = arith.muli %0, %1 : i32
  return %2 : i32
}

gpu.module @kernels {
  gpu.func @scale(%buf: memref<4xf32>) kernel {
    gpu.return
  }
}
