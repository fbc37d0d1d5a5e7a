"""convert-tile-to-gpu keeps each lowered register tensor in the IR (lowering/tile_values.py): a
cast of its scalars to its `!tile.frag` type, read back through the spread the type names. Each
kind of value must come back as it went in (kind, spread, order of its scalars), a one-element
reduced tensor included (its type says plain), and a value that contradicts its type is an
error, not a cast. Views are casts too (their SSA index values as operands, a tile.view
attribute saying where each part is): every part must come back, static or SSA."""

from __future__ import annotations

import pytest
from mlir import ir

from tilec.binding import walk
from tilec.context import make_context
from tilec.dialects.layout import algebra as A
from tilec.lowering import LoweringError
from tilec.lowering.tile_fragments import Frag, Partition, Reduced
from tilec.lowering.tile_mma import MmaPartition
from tilec.lowering.tile_spreads import PLAIN, tv_text
from tilec.lowering.tile_values import (
    CAST,
    PENDING,
    VIEW,
    TileValues,
    cut_of,
    group_keys,
    reconcile,
)
from tilec.lowering.tile_views import Bound, View

THREADS = 128


def frag_type(shape: tuple[int, ...], spread: object, single: bool = False) -> str:
    layout = "(" + ",".join(map(str, shape)) + "):(" + ",".join(["1"] * len(shape)) + ")"
    return f'!tile.frag<f32, "{layout}", "{tv_text(spread, THREADS, single)}">'


def source(typ: str) -> ir.Value:
    """A value of `typ` from an op of no dialect (the cast replaces its uses)."""
    op = ir.Operation.create("test.src", results=[ir.Type.parse(typ)])
    ir.Operation.create("test.use", operands=[op.results[0]])
    return op.results[0]


def scalars(n: int, typ: ir.Type | None = None) -> list[ir.Value]:
    typ = typ or ir.F32Type.get()
    return [ir.Operation.create("test.scalar", results=[typ]).results[0] for _ in range(n)]


def round_trip(typ: str, lowered: object) -> object:
    values = TileValues(THREADS)
    value = source(typ)
    src = value.owner
    values.put(src, value, lowered)
    user = next(iter(values.casts[0].results[0].uses)).owner
    assert user.name == "test.use" and values.casts[0].name == CAST
    return values.get(user.operands[0])


@pytest.fixture
def block():  # noqa: ANN201
    with make_context(allow_unregistered=True), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            yield


@pytest.mark.usefixtures("block")
@pytest.mark.parametrize(
    "part",
    [Partition((4, 256), 1, 4, THREADS), Partition((64, 64), 0, 8, THREADS)],
    ids=["rows", "columns"],
)
def test_a_blocked_fragment_comes_back_chunk_by_chunk(part: Partition) -> None:
    values = scalars(part.iters * part.vec)
    rows = [values[i * part.vec : (i + 1) * part.vec] for i in range(part.iters)]
    back = round_trip(frag_type(part.shape, part), Frag(part, ir.F32Type.get(), rows))
    assert isinstance(back, Frag) and back.part == part and back.values == rows


@pytest.mark.usefixtures("block")
def test_an_accumulator_comes_back_from_its_value_shape() -> None:
    part = MmaPartition((64, 64), (2, 2))  # its type's layout is the values, (4,2,4)
    rows = [scalars(part.vec) for _ in range(part.iters)]
    typ = f'!tile.frag<f32, "(4,2,4):(1,4,8)", "{part.tv}">'
    back = round_trip(typ, Frag(part, ir.F32Type.get(), rows))
    assert isinstance(back, Frag) and back.part == part and back.values == rows


@pytest.mark.usefixtures("block")
@pytest.mark.parametrize("shape", [(4, 256), (1, 256)], ids=["rows", "one-element"])
def test_a_reduced_tensor_comes_back_with_its_groups(shape: tuple[int, ...]) -> None:
    part = Partition(shape, 1, 4, THREADS)
    keys = group_keys(part, 1)
    groups = dict(zip(keys, scalars(len(keys)), strict=True))
    reduced = Reduced(part, 1, ir.F32Type.get(), groups)
    single = shape[0] == 1  # one element: the type's TV layout is plain
    back = round_trip(frag_type((shape[0], 1), (part, 1), single), reduced)
    assert isinstance(back, Reduced) and (back.part, back.mode) == (part, 1)
    assert back.groups == groups


@pytest.mark.usefixtures("block")
def test_a_one_element_value_comes_back_plain() -> None:
    (v,) = scalars(1)
    assert tv_text(PLAIN, THREADS) in frag_type((1, 1), PLAIN)
    assert round_trip(frag_type((1, 1), PLAIN), v) == v


@pytest.mark.usefixtures("block")
def test_a_value_its_type_contradicts_is_refused() -> None:
    part = Partition((4, 256), 1, 4, THREADS)
    other = Partition((4, 256), 1, 2, THREADS)
    rows = [scalars(other.vec) for _ in range(other.iters)]
    with pytest.raises(LoweringError, match="not as"):
        round_trip(frag_type(part.shape, part), Frag(other, ir.F32Type.get(), rows))
    short = [scalars(part.vec) for _ in range(part.iters - 1)]
    with pytest.raises(LoweringError, match="not as"):
        round_trip(frag_type(part.shape, part), Frag(part, ir.F32Type.get(), short))


def a_view(space: str) -> View:
    """A view with every kind of part: SSA and static terms (one SSA value used twice), a
    trailing tile mode's bound (outer), a bound fixed by a slice, a swizzle."""
    ptr = ir.Operation.create("test.ptr", results=[ir.Type.parse("!llvm.ptr<3>")]).results[0]
    off, m, kt, by = scalars(4, ir.IndexType.get())
    bounds = [Bound(by, m, 0), Bound(0, m, 1, (2, kt)), Bound(off, 64, None)]
    return View(
        ir.F16Type.get(),
        space,
        ptr,
        off,
        [64, 32, kt],
        [m, 1, 32],
        A.Swizzle(3, 3, 3),
        bounds,
        8192,
    )


@pytest.mark.usefixtures("block")
def test_a_view_comes_back_part_by_part() -> None:
    view = a_view("shared")
    typ = '!tile.tensor<f16, "shared", "(64,32,?):(?,1,32)">'
    values = TileValues(THREADS)
    value = source(typ)
    values.put(value.owner, value, view)
    read = next(iter(values.casts[0].results[0].uses)).owner.operands[0]
    cast = read.owner
    assert cast.name == CAST and VIEW in cast.attributes
    assert len(cast.operands) == 5  # the base and four SSA values, each once (m, off: twice)
    back = values.get(read)
    assert isinstance(back, View) and back.base == view.base and back.offset == view.offset
    assert (back.elem, back.space, back.shape, back.stride) == (
        view.elem,
        view.space,
        view.shape,
        view.stride,
    )
    assert back.bounds == view.bounds and back.span == 8192
    sw = back.swizzle
    assert (sw.bits, sw.base, sw.shift) == (3, 3, 3)


@pytest.mark.usefixtures("block")
def test_a_view_its_type_contradicts_is_refused() -> None:
    values = TileValues(THREADS)
    value = source('!tile.tensor<f16, "global", "(64,32,?):(?,1,32)">')
    with pytest.raises(LoweringError, match="shared view"):
        values.put(value.owner, value, a_view("shared"))


@pytest.mark.usefixtures("block")
def test_a_slice_keeps_what_it_was_cut_from() -> None:
    values = TileValues(THREADS)
    whole = source('!tile.tensor<f16, "shared", "(64,32,?):(?,1,32)">')
    (stage,) = scalars(1, ir.IndexType.get())
    part = source('!tile.tensor<f16, "shared", "(64,32):(?,1)">')
    values.put(part.owner, part, a_view("shared"), (whole, [None, None, stage]))
    read = next(iter(values.casts[0].results[0].uses)).owner.operands[0]
    assert cut_of(read) == (whole, [None, None, stage])
    assert cut_of(whole) is None


@pytest.mark.usefixtures("block")
@pytest.mark.parametrize("text", ["[%1,", "[64,%x]", "[1]]", "[1 2]"])
def test_a_malformed_view_part_is_a_located_error(text: str) -> None:
    values = TileValues(THREADS)
    value = source('!tile.tensor<f16, "shared", "(64,32,?):(?,1,32)">')
    values.put(value.owner, value, a_view("shared"))
    cast = values.casts[0]
    parts = {a.name: a.attr for a in ir.DictAttr(cast.attributes[VIEW])}
    parts["shape"] = ir.StringAttr.get(text)
    cast.attributes[VIEW] = ir.DictAttr.get(parts)
    with pytest.raises(LoweringError, match="not a view's part"):
        values.get(cast.results[0])


def frag_source(part: Partition) -> ir.Value:
    return source(frag_type(part.shape, part))


def pending_casts(root: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk(root, lambda o: found.append(o) if PENDING in o.attributes else None)
    return found


def flat(rows: list[list[ir.Value]]) -> list[ir.Value]:
    return [v for row in rows for v in row]


def read(value: object) -> ir.Operation:
    """An op that reads a Frag's scalars (where the insertion point is)."""
    return ir.Operation.create("test.read", operands=flat(value.values))


@pytest.mark.usefixtures("block")
def test_a_pending_value_is_read_as_its_type_says_then_reconciled() -> None:
    """A later pass's value read early (tile.pending) is replaced by what its lowering made."""
    part = Partition((4, 256), 1, 4, THREADS)
    values = TileValues(THREADS)
    value = frag_source(part)
    early = values.pending(value.owner, value)
    assert isinstance(early, Frag) and early.part == part
    reader = read(early)
    rows = [scalars(part.vec) for _ in range(part.iters)]
    values.put(value.owner, value, Frag(part, ir.F32Type.get(), rows))  # the later lowering
    reconcile(pending_casts(value.owner.parent))
    assert list(reader.operands) == flat(rows)


@pytest.mark.usefixtures("block")
def test_a_value_lowered_otherwise_than_read_is_a_located_error() -> None:
    part = Partition((4, 256), 1, 4, THREADS)
    values = TileValues(THREADS)
    value = frag_source(part)
    values.pending(value.owner, value)
    other = ir.Operation.create(CAST, [value.type], scalars(3))  # 3 values, not 8
    value.replace_all_uses_with(other.results[0])
    with pytest.raises(LoweringError, match="lowered otherwise"):
        reconcile(pending_casts(value.owner.parent))


def lowered_frag() -> tuple[Partition, TileValues, ir.Value, list[list[ir.Value]]]:
    """A (4, 256) register tensor lowered to scalars: its partition, values, cast and scalars."""
    part = Partition((4, 256), 1, 4, THREADS)
    values = TileValues(THREADS)
    value = frag_source(part)
    first = [scalars(part.vec) for _ in range(part.iters)]
    values.put(value.owner, value, Frag(part, ir.F32Type.get(), first))
    return part, values, values.casts[0].results[0], first


def update_in_place(values, op, tensor, part, before_update=None) -> list[list[ir.Value]]:  # noqa: ANN001
    """`tensor` updated in place at `op` to fresh scalars (after `before_update`, which makes
    what the rung makes while lowering `op`); returns those scalars."""
    if before_update is not None:
        before_update()
    filled = [scalars(part.vec) for _ in range(part.iters)]
    values.update(op, tensor, Frag(part, ir.F32Type.get(), filled))
    return filled


@pytest.mark.usefixtures("block")
def test_an_update_leaves_earlier_pending_reads_on_the_value_as_it_was() -> None:
    """A fill after a pending read: the read keeps the value before the fill, a read after it
    takes the filled one."""
    part, values, tensor, first = lowered_frag()
    before = read(values.pending(tensor.owner, tensor))
    fill = ir.Operation.create("test.fill")
    after = read(values.pending(tensor.owner, tensor))
    filled = update_in_place(values, fill, tensor, part)
    reconcile(pending_casts(tensor.owner.parent))
    assert list(before.operands) == flat(first)
    assert list(after.operands) == flat(filled)


@pytest.mark.usefixtures("block")
def test_an_update_moves_only_the_uses_after_it() -> None:
    """An in-place update in a rung that runs before others (convert-tile-mma before
    convert-tile-to-gpu, or any order): an unlowered op before it keeps the value as it was, as
    does a pending read this pass made for the update itself (where the rung lowers it: just
    before it); an op after it reads the updated value. Decided from where the ops are when
    the update runs (a table of positions made before it missed, now and then: binding.before)."""
    part, values, tensor, _ = lowered_frag()
    before = ir.Operation.create("test.use", operands=[tensor])  # a later rung's op
    update = ir.Operation.create("test.update", operands=[tensor])
    after = ir.Operation.create("test.use", operands=[tensor])
    own: list[ir.Operation] = []

    def made_by_this_pass() -> None:  # a pending read for the update, made where it is lowered
        with ir.InsertionPoint(update):
            own.append(ir.Operation.create(CAST, [ir.F32Type.get()], [tensor]))
        own[0].attributes[PENDING] = ir.UnitAttr.get()

    filled = update_in_place(values, update, tensor, part, made_by_this_pass)
    own = own[0]
    new = values.casts[-1].results[0]
    assert before.operands[0] == tensor and own.operands[0] == tensor
    assert update.operands[0] == tensor
    assert after.operands[0] == new and list(new.owner.operands) == flat(filled)


def test_before_follows_program_order_through_regions() -> None:
    """binding.before: pre-order positions, across blocks of one op and into nested regions;
    binding.sibling: the neighbours within a block."""
    from tilec.binding import before, sibling

    with make_context(allow_unregistered=True):
        module = ir.Module.parse(
            """
            "test.a"() : () -> ()
            "test.outer"() ({
              "test.b"() : () -> ()
            }, {
              "test.c"() : () -> ()
              "test.d"() : () -> ()
            }) : () -> ()
            "test.e"() : () -> ()
            """
        )
        ops: list[ir.Operation] = []
        walk(module.operation, ops.append)
        ops = ops[1:]  # without the module: a, outer, b, c, d, e
        for i, a in enumerate(ops):
            for j, b in enumerate(ops):
                assert before(a, b) == (i < j), (a.name, b.name)
        a, outer, b, c, d, e = ops
        assert sibling(outer, -1) == a and sibling(outer, 1) == e and sibling(e, 1) is None
        assert sibling(c, 1) == d and sibling(d, -1) == c and sibling(b, -1) is None


def test_an_in_place_gemm_is_lowered_the_same_every_time() -> None:
    """convert-tile-mma on an in-place gemm between a fill and a store, in fresh processes: the
    store reads the gemm's result every time (with a table of op positions, about one run in
    ten stored the fill's zeros instead)."""
    import subprocess
    import sys
    from pathlib import Path

    source = Path(__file__).resolve().parents[1] / "passes" / "convert-tile-mma.mlir"
    pipeline = "tile-distribute,convert-tile-views,convert-tile-mma"
    outputs = set()
    main = "import sys; from tilec.opt import main; sys.exit(main(sys.argv[1:]))"
    for _ in range(12):
        run = subprocess.run(
            [sys.executable, "-c", main, "-p", pipeline, str(source)],
            capture_output=True,
            text=True,
            check=True,
        )
        lines = run.stdout.split("func.func @carried")[0].splitlines()
        at = next(k for k, line in enumerate(lines) if '"tile.store"(' in line)
        cast = next(line for line in reversed(lines[:at]) if "unrealized_conversion_cast" in line)
        assert lines[at].split('"tile.store"(')[1].startswith(cast.split("=")[0].strip() + ",")
        outputs.add(run.stdout)
    assert len(outputs) == 1
