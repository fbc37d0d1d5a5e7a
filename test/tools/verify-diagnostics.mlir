// --verify-diagnostics: every expected error must be produced, on the line it names, and no
// other error may appear. The second RUN line changes one expected text and must fail; the
// third checks the report says which expectation was not met.
// RUN: tile-opt --split-input-file --verify-diagnostics %s
// RUN: sed 's/undeclared SSA value/something else/' %s > %t.mlir
// RUN: not tile-opt --split-input-file --verify-diagnostics %t.mlir 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: not tile-opt --split-input-file %s 2>&1 | filecheck %s --check-prefix=PLAIN

// WRONG: expected error "use of something else" was not produced
// WRONG: unexpected error: use of undeclared SSA value name

// PLAIN: verify-diagnostics.mlir:17:10: error: use of undeclared SSA value name
// PLAIN-NEXT: {{^}}  return %x : i32
// PLAIN-NEXT: {{^}}         ^
func.func @undeclared() -> i32 {
  // expected-error @+1 {{use of undeclared SSA value}}
  return %x : i32
}

// -----

func.func @wrong_type(%a: i32) {
  // expected-error @+1 {{'arith.addi' op requires the same type for all operands and results}}
  %0 = "arith.addi"(%a, %a) : (i32, i32) -> i64
  return
}
