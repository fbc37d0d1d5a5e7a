// Each chunk is parsed and transformed on its own; the output keeps the separators.
// RUN: tile-opt --split-input-file -p canonicalize %s | filecheck %s

// CHECK-LABEL: func.func @first(
// CHECK-NEXT: return %arg0
// CHECK: // -----
// CHECK-LABEL: func.func @second(
// CHECK-NEXT: arith.constant 7 : i32
func.func @first(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  return %0 : i32
}

// -----

// The same symbol name again: only legal because chunks are separate modules.
func.func @second() -> i32 {
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %0 = arith.addi %c3, %c4 : i32
  return %0 : i32
}
