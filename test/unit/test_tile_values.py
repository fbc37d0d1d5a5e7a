"""convert-tile-to-gpu keeps each lowered register tensor in the IR (passes/tile_values.py): a
cast of its scalars to its `!tile.frag` type, read back through the spread the type names. Each
kind of value must come back as it went in (kind, spread, order of its scalars), a one-element
reduced tensor included (its type says plain), and a value that contradicts its type is an
error, not a cast."""

from __future__ import annotations

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.lowering import LoweringError
from tilec.passes.tile_fragments import Frag, Partition, Reduced
from tilec.passes.tile_mma import MmaPartition
from tilec.passes.tile_spreads import PLAIN, tv_text
from tilec.passes.tile_values import CAST, TileValues, group_keys

THREADS = 128


def frag_type(shape: tuple[int, ...], spread: object, single: bool = False) -> str:
    layout = "(" + ",".join(map(str, shape)) + "):(" + ",".join(["1"] * len(shape)) + ")"
    return f'!tile.frag<f32, "{layout}", "{tv_text(spread, THREADS, single)}">'


def source(typ: str) -> ir.Value:
    """A value of `typ` from an op of no dialect (the cast replaces its uses)."""
    op = ir.Operation.create("test.src", results=[ir.Type.parse(typ)])
    ir.Operation.create("test.use", operands=[op.results[0]])
    return op.results[0]


def scalars(n: int) -> list[ir.Value]:
    f32 = ir.F32Type.get()
    return [ir.Operation.create("test.scalar", results=[f32]).results[0] for _ in range(n)]


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
