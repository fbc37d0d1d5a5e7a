// The tutorial's plugin pass (docs/writing-a-pass.md), loaded from its file.
// RUN: tile-opt --load-pass-plugin %repo/examples/passes/mul_to_shift.py -p mul-to-shift %s | filecheck %s
// RUN: tile-opt --load-pass-plugin %repo/examples/passes/mul_to_shift.py --mul-to-shift %s | filecheck %s
// RUN: tile-opt --load-pass-plugin %repo/examples/passes/mul_to_shift.py --list-passes | filecheck %s --check-prefix=LIST

// LIST: mul-to-shift {{.*}}Rewrite `arith.muli %x, 2^k` into `arith.shli %x, k`.

// CHECK-LABEL: func.func @times_eight(
// CHECK-SAME: %[[X:.*]]: i32
// CHECK: %[[K:.*]] = arith.constant 3 : i32
// CHECK: %[[R:.*]] = arith.shli %[[X]], %[[K]] : i32
// CHECK: return %[[R]]
func.func @times_eight(%x: i32) -> i32 {
  %c8 = arith.constant 8 : i32
  %0 = arith.muli %x, %c8 : i32
  return %0 : i32
}

// The constant on the left works too; a non-power of two is left alone.
// CHECK-LABEL: func.func @left_and_not_pow2(
// CHECK: arith.shli %{{.*}}, %{{.*}} : i64
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK-NOT: arith.muli
func.func @left_and_not_pow2(%x: i64) -> i64 {
  %c16 = arith.constant 16 : i64
  %c6 = arith.constant 6 : i64
  %0 = arith.muli %c16, %x : i64
  %1 = arith.muli %0, %c6 : i64
  return %1 : i64
}
