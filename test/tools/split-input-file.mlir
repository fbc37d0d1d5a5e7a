// Each chunk is a buffer of its own, parsed and transformed alone, as mlir-opt splits them: its
// diagnostics say 'within split at FILE:LINE offset ' and count lines from the chunk's start (the
// marker's line); a chunk that fails prints nothing but keeps its separator in the output.
// RUN: not tile-opt -split-input-file -canonicalize %s > %t.out 2> %t.err
// RUN: filecheck %s < %t.out
// RUN: filecheck %s --check-prefix=ERR < %t.err
// Another marker, on input and output (the RUN lines, which name it, are left out).
// RUN: sed -e '/RUN:/d' -e 's|^// -\{5\}$|// =====|' %s | not tile-opt -split-input-file='// =====' -output-split-marker='// ~~~' 2>/dev/null | filecheck %s --check-prefix=MARKER
// A marker short of its last two dashes is a near miss: warned about, not split at.
// RUN: sed 's|^// -\{5\}$|/\/ ---|' %s | not tile-opt --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=NEAR

// CHECK-LABEL: func.func @first(
// CHECK-NEXT: return %arg0
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: {{^// -+$}}
// CHECK-NEXT: {{^// -+$}}
// CHECK-NEXT: module {
// CHECK-LABEL: func.func @second(
// CHECK-NEXT: arith.constant 7 : i32

// ERR: within split at {{.*}}split-input-file.mlir:37 offset :4:10: error: use of undeclared SSA value name
// ERR-NEXT: {{^}}  return %nope : i32

// MARKER: func.func @first(
// MARKER: // ~~~
// MARKER-NEXT: // ~~~
// MARKER-NEXT: module {

// NEAR: <stdin>:37: warning: near miss with file split marker
func.func @first(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  return %0 : i32
}

// -----

func.func @broken() -> i32 {
  return %nope : i32
}

// -----

// The same symbol name again: only legal because chunks are separate modules.
func.func @second() -> i32 {
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %0 = arith.addi %c3, %c4 : i32
  return %0 : i32
}
