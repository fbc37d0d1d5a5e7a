"""`reduce_sum(x, mode = m, group = G)` (tile.reduce_group): each run of G consecutive elements
along mode m combined in the thread that holds it. The algebra check: over every thread and
value of the result's spread (tile_fragments.grouped), the G source elements lowering reads
for it (tile_fragments.reduce_group: values[i][j] of the same thread, j in run(G, r)) are the
run's, by the source's and the result's TV layouts (tile_spreads)."""

from pathlib import Path

import pytest

from tilec.build import compile_tile
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.int_tuple import idx2crd
from tilec.lowering import LoweringError
from tilec.lowering.tile_fragments import Partition, grouped, run
from tilec.lowering.tile_spreads import by_e, chunks


def coords(part: Partition, t: int, v: int) -> tuple[int, ...]:
    """The tile coordinate of thread t's value v (v = j + V i) under `part`."""
    index = by_e(part, A.compact_col_major(part.shape))(chunks(part)(t, v))
    return tuple(idx2crd(index, part.shape))


CASES = [
    (Partition((1, 2, 512), 2, 8, 32), 8),  # gemv: NB x MR x 256U, a lane's 16 bytes
    (Partition((1, 2, 512), 2, 8, 32), 2),
    (Partition((4, 256), 1, 4, 128), 4),
    (Partition((64, 4), 0, 8, 32), 4),  # the chunks run down mode 0
]


@pytest.mark.parametrize(("source", "group"), CASES)
def test_each_run_lies_in_its_threads_values(source: Partition, group: int) -> None:
    result = grouped(None, source, source.m, group)
    assert result.shape[source.m] == source.shape[source.m] // group
    for t in range(result.threads):
        for i in range(result.iters):
            for r in range(result.vec):
                want = coords(result, t, r + result.vec * i)
                for j in run(group, r):  # what reduce_group combines into run r of chunk i
                    got = list(coords(source, t, j + source.vec * i))
                    got[source.m] //= group
                    assert tuple(got) == want


def test_a_run_across_threads_is_refused() -> None:
    with pytest.raises(LoweringError, match="must lie in one thread's chunk"):
        grouped(None, Partition((4, 256), 1, 4, 128), 1, 8)
    with pytest.raises(LoweringError, match="must lie in one thread's chunk"):
        grouped(None, Partition((4, 256), 1, 4, 128), 0, 2)


KERNEL = """\
kernel runs(X: f32[R, N], Y: f32[R, N]) grid(R) threads(32) target(sm_80) {{
  let x = load(local_tile(X, (2, 256), (block.x, 0)))
  let y = reduce_{kind}(x, mode = 1, group = {group})
  store(y, local_tile(Y, (2, 256 / {group}), (block.x, 0)))
}}
"""


@pytest.mark.parametrize(("kind", "op"), [("sum", "add.f32"), ("max", "max.NaN.f32")])
def test_runs_combine_in_the_thread(tmp_path: Path, kind: str, op: str) -> None:
    src = tmp_path / "runs.tile"
    src.write_text(KERNEL.format(kind=kind, group=4))
    ptx = compile_tile(str(src), {}, "sm_80").ptx
    # 2 x 256 f32 over 32 threads: 4 chunks of 4 a thread, each one run of 4: 3 ops a run
    assert ptx.count(op) == 4 * 3
    assert "shfl" not in ptx and "bar.sync" not in ptx
