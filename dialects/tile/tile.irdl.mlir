// The `tile` dialect: kernels' views, data movement, MMAs and elementwise math (source of truth;
// loaded through IRDL). See docs/tile-dialect.md.
//
// A tensor is a view: `!tile.tensor<ELEM, "SPACE", "LAYOUT">`, where SPACE is global, shared or
// register and LAYOUT is CuTe text (`(128,32):(?,1)`, `Sw<2,3,3> o 0 o (8,32):(32,1)`); a `?`
// entry is known only at run time. `tile.make_tensor` takes the runtime entries of a global
// tensor as operands; every other view op derives its result's `?` entries from its operands.
//
// IRDL cannot declare terminators, so loops and warp-specialised roles are `scf.for` and
// `scf.execute_region` carrying `tile.*` attributes (see docs/tile-dialect.md).
// IRDL ops print in the generic form: tests match that form.
irdl.dialect @tile {
  irdl.type @tensor {
    %elem = irdl.any
    %space = irdl.base "#builtin.string"
    %layout = irdl.base "#builtin.string"
    irdl.parameters(elem: %elem, space: %space, layout: %layout)
  }

  // A register tensor spread over the block's threads (tile-distribute writes it): its layout
  // as a `!tile.tensor<ELEM, "register", LAYOUT>` had it, and its thread–value layout in CuTe
  // text (thread × value → the tile's column-major index; docs/tile-dialect.md). Operands
  // that take either type are `irdl.any`: these bindings' IRDL loader cannot put two base
  // constraints in an any_of (it aborts); tile-verify checks what they hold.
  irdl.type @frag {
    %elem = irdl.any
    %layout = irdl.base "#builtin.string"
    %tv = irdl.base "#builtin.string"
    irdl.parameters(elem: %elem, layout: %layout, tv: %tv)
  }

  // A tiled MMA: an atom (with wgmma's N filled in) repeated over warps or warp groups.
  irdl.type @mma {
    %atom = irdl.base "#builtin.string"
    %tiling = irdl.base "#builtin.string"
    irdl.parameters(atom: %atom, tiling: %tiling)
  }

  // --- Indices ---------------------------------------------------------------------------

  // block_id / thread_id / grid_dim {dim}: blockIdx, threadIdx, gridDim along x (0), y, z.
  irdl.operation @block_id {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes {"dim" = %dim}
    irdl.results(result: %index)
  }
  irdl.operation @thread_id {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes {"dim" = %dim}
    irdl.results(result: %index)
  }
  irdl.operation @grid_dim {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes {"dim" = %dim}
    irdl.results(result: %index)
  }

  // size(tensor) {mode}: the extent of one top-level mode, for runtime extents.
  irdl.operation @size {
    %t = irdl.base @tile::@tensor
    %mode = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.operands(tensor: %t)
    irdl.attributes {"mode" = %mode}
    irdl.results(result: %index)
  }

  // tile_coord(linear, tiles_m, tiles_n) {raster, group}: the (m, n) tile a persistent
  // loop's linear tile index stands for; raster "grouped" walks `group` rows of tiles at once.
  // In a kernel with cluster(C), `linear` numbers blocks of C tiles along m (the clusters',
  // cdiv(tiles_m, C) rows of them), and m is C times the block's row plus its cluster rank.
  irdl.operation @tile_coord {
    %index = irdl.is index
    %raster = irdl.base "#builtin.string"
    %group = irdl.base "#builtin.integer"
    irdl.operands(linear: %index, tiles_m: %index, tiles_n: %index)
    irdl.attributes {"raster" = %raster, "group" = %group}
    irdl.results(m: %index, n: %index)
  }

  // work_unit(start, peer, slot, first, last, rank) {width}: one unit of a persistent loop
  // whose tail tile-schedule splits along K (`persistent(..., split_tail = 1)`), at the top of
  // the loop's body: `start` the ring iterations the block ran before this unit (tile-ring
  // numbers its pipelined loops on from there), `peer` whether the unit is a part of a tile
  // that another unit owns (it hands its sums over through workspace slot `slot`), else the
  // owner adds those of slots first .. last - 1 before it stores; `width` blocks a cluster, the
  // block's rank in it `rank`. The rung that stores the unit's tile reads it.
  irdl.operation @work_unit {
    %index = irdl.is index
    %flag = irdl.is i1
    %width = irdl.base "#builtin.integer"
    irdl.operands(start: %index, peer: %flag, slot: %index, first: %index, last: %index, rank: %index)
    irdl.attributes {"width" = %width}
  }

  // --- Views -------------------------------------------------------------------------------

  // make_tensor(ptr, dynamic...) {name}: a global tensor argument; one index per `?` of the
  // result layout, shape entries first, then strides.
  irdl.operation @make_tensor {
    %ptr = irdl.is !llvm.ptr
    %index = irdl.is index
    %t = irdl.base @tile::@tensor
    %name = irdl.base "#builtin.string"
    irdl.operands(ptr: %ptr, dynamic: variadic %index)
    irdl.attributes {"name" = %name}
    irdl.results(result: %t)
  }

  // local_tile(src, coords...) {tile, coord}: the block's tile of `src`. `tile` is the tile
  // shape; `coord` spells the tile coordinate with `?` for each index operand, an integer for
  // a static coordinate and `_` for a mode kept whole (it becomes a trailing mode of tiles).
  irdl.operation @local_tile {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %tile = irdl.base "#builtin.dense_array"
    %coord = irdl.base "#builtin.string"
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t, coords: variadic %index)
    irdl.attributes {"tile" = %tile, "coord" = %coord}
    irdl.results(result: %r)
  }

  // slice(src, coords...) {coord}: fix the modes whose coordinate is `?` (an operand) or an
  // integer; `_` keeps a mode. A swizzled result keeps the swizzle; the offset is the op's.
  irdl.operation @slice {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %coord = irdl.base "#builtin.string"
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t, coords: variadic %index)
    irdl.attributes {"coord" = %coord}
    irdl.results(result: %r)
  }

  // window(src, bounds...) {window}: the same tensor with some modes cut to a range: an entry
  // `lo..hi` (each `?`, the next index operand, or an integer) keeps coordinates lo through hi
  // of its mode (inclusive) as 0 .. hi - lo (its extent hi - lo + 1, bounded there too); `_`
  // keeps a mode.
  irdl.operation @window {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %window = irdl.base "#builtin.string"
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t, bounds: variadic %index)
    irdl.attributes {"window" = %window}
    irdl.results(result: %r)
  }

  // read(src, coords...) {coord}: the element of a global integer tensor at `coord` (`?` per
  // index operand, integers static; every mode fixed), as an index; 0 outside the tensor.
  irdl.operation @read {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %coord = irdl.base "#builtin.string"
    irdl.operands(src: %t, coords: variadic %index)
    irdl.attributes {"coord" = %coord}
    irdl.results(result: %index)
  }

  // permute(src) {perm}: reorder the top-level modes.
  irdl.operation @permute {
    %t = irdl.base @tile::@tensor
    %perm = irdl.base "#builtin.dense_array"
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t)
    irdl.attributes {"perm" = %perm}
    irdl.results(result: %r)
  }

  // prepend(src, size?) / append(src, size?): `src` with one more top-level mode, first or last,
  // of stride 0 (CuTe's prepend/append of its layout with Layout<S,_0>): every coordinate along
  // it sees src's elements. Its size S is the result type's, or the operand where that is `?`.
  irdl.operation @prepend {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t, size: optional %index)
    irdl.results(result: %r)
  }

  irdl.operation @append {
    %t = irdl.base @tile::@tensor
    %index = irdl.is index
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t, size: optional %index)
    irdl.results(result: %r)
  }

  // partition(src) {threads}: this thread's part of `src`, the threads laid out by `threads`.
  irdl.operation @partition {
    %t = irdl.base @tile::@tensor
    %threads = irdl.base "#builtin.string"
    %r = irdl.base @tile::@tensor
    irdl.operands(src: %t)
    irdl.attributes {"threads" = %threads}
    irdl.results(result: %r)
  }

  // --- Storage -----------------------------------------------------------------------------

  // alloc_shared(layout?) {name}: one stage of a shared buffer; `tile.stages` on a pipelined
  // loop that copies into it tells the pipelining pass how many stages to allocate. The
  // optional operand is the layout expression the buffer was declared with (layout-dialect
  // ops from the source); tile-verify checks it is the result type's layout once folded.
  irdl.operation @alloc_shared {
    %l = irdl.base @layout::@layout
    %name = irdl.base "#builtin.string"
    %r = irdl.base @tile::@tensor
    irdl.operands(layout: optional %l)
    irdl.attributes {"name" = %name}
    irdl.results(result: %r)
  }

  // fragment(mma?) {block_shape}: registers. With an MMA operand, this thread's part of a
  // block tile of `block_shape` as partitioned by that MMA's C layout; else the whole layout.
  irdl.operation @fragment {
    %m = irdl.base @tile::@mma
    %shape = irdl.base "#builtin.dense_array"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(mma: optional %m)
    irdl.attributes {"block_shape" = %shape}
    irdl.results(result: %r)
  }

  // fill(dst) {value}: set every element.
  irdl.operation @fill {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %v = irdl.any
    irdl.operands(dst: %t)
    irdl.attributes {"value" = %v}
  }

  // --- Data movement -----------------------------------------------------------------------

  // load(src[, like]) {other[, masked]}: the block-level tile into registers; elements past
  // the source tensor's bounds (ragged edges) read as `other`. With `like` (a register tensor
  // of the same block shape), the result is spread over the threads as `like` is: an MMA
  // fragment's partition, so an epilogue combines it elementwise with the accumulator. With
  // the unit attribute `masked` (not declared: IRDL has no optional attributes here), `like` is
  // a predicate tensor (i1) and its false elements read `other` too.
  irdl.operation @load {
    %t = irdl.base @tile::@tensor
    %like = irdl.any  // !tile.tensor or !tile.frag
    %other = irdl.any
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(src: %t, like: optional %like)
    irdl.attributes {"other" = %other}
    irdl.results(result: %r)
  }

  // store(value, dst[, mask]): registers to memory, converting the element type; out-of-bounds
  // elements, and those where the predicate tensor `mask` is false, are not written.
  irdl.operation @store {
    %v = irdl.any  // !tile.tensor or !tile.frag
    %t = irdl.base @tile::@tensor
    %mask = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(value: %v, dst: %t, mask: optional %mask)
  }

  // relayout(value, through[, like]): the register tensor `value` spread over the threads
  // anew, through the shared buffer `through` (of value's shape and element type): as a load
  // of `through` spreads it, or, with `like`, as `like` is. It synchronises the block around
  // its use of the buffer (tile-relayout); the buffer's contents afterwards are unspecified.
  // tile-verify checks the buffer and the element types, tile-distribute the shapes.
  irdl.operation @relayout {
    %v = irdl.any  // !tile.tensor or !tile.frag
    %t = irdl.base @tile::@tensor
    %like = irdl.any  // !tile.tensor or !tile.frag
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(value: %v, through: %t, like: optional %like)
    irdl.results(result: %r)
  }

  // copy(src, dst) {atom}: a block-level copy; atom "auto" lets the compiler choose.
  irdl.operation @copy {
    %src = irdl.base @tile::@tensor
    %dst = irdl.base @tile::@tensor
    %atom = irdl.base "#builtin.string"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"atom" = %atom}
  }

  irdl.operation @barrier {
  }

  // async_commit: close this thread's group of cp.async copies issued since the last one.
  // async_wait {pending}: wait until at most `pending` of its committed groups are in flight.
  // tile-async-waits places both around the copies outside tile-pipeline.
  irdl.operation @async_commit {
  }
  irdl.operation @async_wait {
    %pending = irdl.base "#builtin.integer"
    irdl.attributes {"pending" = %pending}
  }

  // --- MMA ---------------------------------------------------------------------------------

  irdl.operation @tiled_mma {
    %m = irdl.base @tile::@mma
    irdl.results(result: %m)
  }

  // gemm(mma, a, b, acc): acc += a @ b^T over the block tile (a: M×K, b: N×K), in place; with
  // a result (tile-carry-accumulators writes that form), the updated accumulator instead.
  irdl.operation @gemm {
    %m = irdl.base @tile::@mma
    %a = irdl.any  // !tile.tensor or !tile.frag
    %b = irdl.base @tile::@tensor
    %acc = irdl.any  // !tile.tensor or !tile.frag
    %r = irdl.any  // the updated accumulator (tile-carry-accumulators)
    irdl.operands(mma: %m, a: %a, b: %b, acc: %acc)
    irdl.results(result: optional %r)
  }

  // --- Elementwise math and reductions -------------------------------------------------------

  // binary(lhs, rhs) {op}: add sub mul div rem max min; a scalar operand broadcasts.
  irdl.operation @binary {
    %a = irdl.any
    %b = irdl.any
    %op = irdl.base "#builtin.string"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(lhs: %a, rhs: %b)
    irdl.attributes {"op" = %op}
    irdl.results(result: %r)
  }

  // unary(x) {op}: neg exp exp2 log sqrt rsqrt tanh relu gelu gelu_tanh sigmoid abs.
  irdl.operation @unary {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %op = irdl.base "#builtin.string"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.attributes {"op" = %op}
    irdl.results(result: %r)
  }

  // convert(x): the element type of the result.
  irdl.operation @convert {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.results(result: %r)
  }

  // compare(lhs, rhs) {pred}: lt le gt ge eq ne, elementwise, to a tensor of i1 (a predicate);
  // a scalar operand broadcasts.
  irdl.operation @compare {
    %a = irdl.any
    %b = irdl.any
    %pred = irdl.base "#builtin.string"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(lhs: %a, rhs: %b)
    irdl.attributes {"pred" = %pred}
    irdl.results(result: %r)
  }

  // select(pred, a, b): where(pred, a, b), elementwise; scalars and size-1 modes broadcast.
  irdl.operation @select {
    %p = irdl.any  // !tile.tensor or !tile.frag
    %a = irdl.any
    %b = irdl.any
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(pred: %p, a: %a, b: %b)
    irdl.results(result: %r)
  }

  // coord(x) {mode}: an i32 register tensor spread as x, each element its coordinate along
  // `mode` within x's tile (CuTe's identity tensor, partitioned like x).
  irdl.operation @coord {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %mode = irdl.base "#builtin.integer"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.attributes {"mode" = %mode}
    irdl.results(result: %r)
  }

  // unit_sum(acc) / unit_part(acc): a split tile's accumulator over the units that share the
  // tile (tile-schedule puts them after a split unit's main loop, under `scf.if` the unit owns
  // the tile, and else): the owner's sum of its own part and its peers' (`unit_sum`), a peer's
  // part handed over through the workspace (`unit_part`). Both read the `work_unit` of their
  // persistent loop.
  irdl.operation @unit_sum {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(acc: %t)
    irdl.results(result: %r)
  }
  irdl.operation @unit_part {
    %t = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(acc: %t)
  }

  // cluster_reduce(x) {kind}: max, min or sum of x over the blocks of the kernel's cluster,
  // element by element (each block holds its own x; every block gets the same result).
  irdl.operation @cluster_reduce {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %kind = irdl.base "#builtin.string"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.attributes {"kind" = %kind}
    irdl.results(result: %r)
  }

  // reduce(x) {kind, mode}: max, min or sum along one mode, which keeps size 1.
  irdl.operation @reduce {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %kind = irdl.base "#builtin.string"
    %mode = irdl.base "#builtin.integer"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.attributes {"kind" = %kind, "mode" = %mode}
    irdl.results(result: %r)
  }

  // reduce_group(x) {kind, mode, group}: max, min or sum of each run of `group` consecutive
  // elements along one mode, whose extent becomes extent / group (each run in one thread's
  // values: no exchange between threads).
  irdl.operation @reduce_group {
    %t = irdl.any  // !tile.tensor or !tile.frag
    %kind = irdl.base "#builtin.string"
    %mode = irdl.base "#builtin.integer"
    %group = irdl.base "#builtin.integer"
    %r = irdl.any  // !tile.tensor or !tile.frag
    irdl.operands(x: %t)
    irdl.attributes {"kind" = %kind, "mode" = %mode, "group" = %group}
    irdl.results(result: %r)
  }
}
