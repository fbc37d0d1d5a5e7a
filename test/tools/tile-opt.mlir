// tile-opt's basic flags: a pipeline mixing upstream passes, generic printing, split input.
// RUN: tile-opt -p "canonicalize,cse" %s | filecheck %s
// RUN: tile-opt --mlir-print-op-generic %s | filecheck %s --check-prefix=GENERIC
// RUN: tile-opt -p "builtin.module(cse)" %s | filecheck %s --check-prefix=CSE

// CHECK-LABEL: func.func @fold_and_dedup(
// CHECK-SAME: %[[A:.*]]: i32
// CHECK-NEXT: %[[SQ:.*]] = arith.muli %[[A]], %[[A]] : i32
// CHECK-NEXT: return %[[SQ]] : i32

// GENERIC: "func.func"() <{function_type = (i32) -> i32, sym_name = "fold_and_dedup"}>
// GENERIC: "arith.addi"

// CSE-LABEL: func.func @fold_and_dedup(
// CSE: arith.addi
// CSE-NOT: arith.addi
// CSE: arith.muli
func.func @fold_and_dedup(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.addi %a, %c0 : i32
  %2 = arith.muli %0, %1 : i32
  return %2 : i32
}
