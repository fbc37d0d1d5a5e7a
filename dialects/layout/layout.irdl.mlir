// The `layout` dialect: CuTe's layout algebra as IR (source of truth; loaded through IRDL).
//
// One type, `!layout.layout<"SPEC">`, where SPEC is CuTe text: `(4,8):(8,1)`,
// `((2,4),8):((1,16),2)`, `swizzle<3,3,3> o (8,64):(64,1)`. An entry written `?` is dynamic:
// its value is an SSA `index` operand of the `layout.make` that created it. Whether SPEC is
// well formed (and matches the operand count) is checked by the `tile-verify` pass, since IRDL
// cannot look inside a string. IRDL ops print in the generic form: tests match that form.
irdl.dialect @layout {
  irdl.type @layout {
    %spec = irdl.base "#builtin.string"
    irdl.parameters(spec: %spec)
  }

  // layout.make: build a layout value; one index operand per `?` in the result's SPEC, in
  // textual order (shape entries first, then stride entries).
  irdl.operation @make {
    %c1 = irdl.is index
    %c2 = irdl.base @layout::@layout
    irdl.operands(dynamic: variadic %c1)
    irdl.results(result: %c2)
  }

  irdl.operation @composition {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @logical_divide {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @zipped_divide {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @tiled_divide {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @flat_divide {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @logical_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @zipped_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @tiled_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @flat_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @blocked_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @raked_product {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }

  irdl.operation @coalesce {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.results(result: %c2)
  }

  irdl.operation @filter {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.results(result: %c2)
  }

  irdl.operation @right_inverse {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.results(result: %c2)
  }

  irdl.operation @left_inverse {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.results(result: %c2)
  }

  // complement(layout, cotarget): cotarget is an index (static or dynamic).
  irdl.operation @complement {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    %c3 = irdl.base @layout::@layout
    irdl.operands(input: %c1, cotarget: %c2)
    irdl.results(result: %c3)
  }

  // tile_to_shape(block, shape-layout): the shape comes as a layout whose shape is used.
  irdl.operation @tile_to_shape {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.base @layout::@layout
    irdl.operands(block: %c1, shape: %c2)
    irdl.results(result: %c3)
  }

  // swizzle(layout) {bits, base, shift}: compose Swizzle<bits,base,shift> after the layout.
  irdl.operation @swizzle {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base "#builtin.integer"
    %c3 = irdl.base "#builtin.integer"
    %c4 = irdl.base "#builtin.integer"
    %c5 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.attributes {"bits" = %c2, "base" = %c3, "shift" = %c4}
    irdl.results(result: %c5)
  }

  // slice(layout, coords...) {pattern}: keep the modes where pattern has `_`; the other
  // entries are fixed by the coordinate operands, in order. Example pattern "(_,?)".
  irdl.operation @slice {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    %c3 = irdl.base "#builtin.string"
    %c4 = irdl.base @layout::@layout
    irdl.operands(input: %c1, coords: variadic %c2)
    irdl.attributes {"pattern" = %c3}
    irdl.results(result: %c4)
  }

  // crd2idx(layout, coords...): the offset of a coordinate, one index per flattened mode.
  irdl.operation @crd2idx {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    %c3 = irdl.is index
    irdl.operands(layout: %c1, coords: variadic %c2)
    irdl.results(result: %c3)
  }

  // apply(layout, i): the layout as a function of a linear (column-major) index.
  irdl.operation @apply {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    %c3 = irdl.is index
    irdl.operands(layout: %c1, index: %c2)
    irdl.results(result: %c3)
  }

  // size / cosize (index results).
  irdl.operation @size {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    irdl.operands(layout: %c1)
    irdl.results(result: %c2)
  }
  irdl.operation @cosize {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.is index
    irdl.operands(layout: %c1)
    irdl.results(result: %c2)
  }

  // upcast / downcast(layout) {factor}: reinterpret for elements `factor` times wider/narrower.
  irdl.operation @upcast {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base "#builtin.integer"
    %c3 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.attributes {"factor" = %c2}
    irdl.results(result: %c3)
  }
  irdl.operation @downcast {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base "#builtin.integer"
    %c3 = irdl.base @layout::@layout
    irdl.operands(input: %c1)
    irdl.attributes {"factor" = %c2}
    irdl.results(result: %c3)
  }

  // max_common_vector(a, b): how many elements both layouts keep contiguous (index result).
  irdl.operation @max_common_vector {
    %c1 = irdl.base @layout::@layout
    %c2 = irdl.base @layout::@layout
    %c3 = irdl.is index
    irdl.operands(lhs: %c1, rhs: %c2)
    irdl.results(result: %c3)
  }
}
