"""Every stage: the one MLIR context factory used by every tool and test.

`make_context()` returns an `mlir.ir.Context` with every upstream dialect registered and the
tilec dialects (`layout`, `tile`) loaded from their IRDL sources, which are the source of truth
and live beside their Python package as `<name>.irdl.mlir`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from mlir import ir
from mlir.dialects import irdl

from tilec import binding

# The IRDL sources, in order (a later dialect may name an earlier one's types).
IRDL_SOURCES = (
    ("tilec.dialects.layout", "layout.irdl.mlir"),
    ("tilec.dialects.tile", "tile.irdl.mlir"),
)


@cache
def irdl_source_text() -> tuple[tuple[str, str], ...]:
    """The text of every IRDL source that exists, as (file name, text) pairs."""
    found = []
    for package, name in IRDL_SOURCES:
        path = resources.files(package).joinpath(name)
        if path.is_file():
            found.append((name, path.read_text()))
    return tuple(found)


def make_context(*, allow_unregistered: bool = False) -> ir.Context:
    """A context with all upstream dialects and the tilec dialects loaded."""
    binding.add_dialect_search_prefix("tilec.dialects")  # tilec.dialects.layout, .tile
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = allow_unregistered
    ctx.load_all_available_dialects()
    with ctx, ir.Location.unknown():  # one module: `tile` ops name `layout`'s type
        irdl.load_dialects(ir.Module.parse("\n".join(t for _, t in irdl_source_text())))
    return ctx
