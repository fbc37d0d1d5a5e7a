// A remark from a pass that succeeds reaches --verify-diagnostics (and, without it, stderr),
// here the transform interpreter's emit_remark_at; the IR is still printed.
// RUN: tile-opt %s -transform-interpreter -verify-diagnostics | filecheck %s --check-prefix=IR
// RUN: tile-opt %s -transform-interpreter 2>&1 >/dev/null | filecheck %s --check-prefix=PRINTED
// RUN: sed 's/{{hello}}/{{goodbye}}/' %s | not tile-opt -transform-interpreter -verify-diagnostics 2>&1 | filecheck %s --check-prefix=MISSED

// IR: func.func @payload()
// PRINTED: remarks.mlir:[[#]]:3: remark: hello
// MISSED: <stdin>:[[#]]:3: error: unexpected remark: hello
// MISSED: <stdin>:[[#]]:6: error: expected remark "goodbye" was not produced
module attributes {transform.with_named_sequence} {
  // expected-remark @below {{hello}}
  func.func @payload() {
    return
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.debug.emit_remark_at %f, "hello" : !transform.any_op
    transform.yield
  }
}
