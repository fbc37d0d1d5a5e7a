// --print-ir-after-all shows the IR after every pass, tilec's Python passes included, on
// stderr; --timing reports the pass timing.
// RUN: tile-opt -p "canonicalize,tile-verify" --print-ir-after-all %s 2>&1 >/dev/null | filecheck %s
// RUN: tile-opt -p canonicalize --timing %s 2>&1 >/dev/null | filecheck %s --check-prefix=TIME

// CHECK: IR Dump After Canonicalizer (canonicalize)
// CHECK: arith.muli
// CHECK: IR Dump After tile-verify
// TIME: Execution time report
func.func @f(%a: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %0 = arith.muli %a, %c1 : i32
  %1 = arith.muli %0, %0 : i32
  return %1 : i32
}
