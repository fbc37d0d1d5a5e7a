"""Passes: the one table of tilec passes, name -> class.

Every pass lives in its own module (`layout_fold.py` defines `layout-fold`) and registers
itself with `@register`. `BUILTIN` names each built-in pass's module; `PASSES` imports a module
when its pass is first looked up (a tool that runs one pass imports one, and its helpers), and
`builtin_passes()` imports them all. User plugins register the same way when
`--load-pass-plugin` imports them.
"""

from __future__ import annotations

from tilec.passes.base import PASSES, Pass, register

# name -> module under tilec.passes, in pipeline order (test_registry checks each module
# registers exactly its name).
BUILTIN: dict[str, str] = {
    "tile-verify": "tile_verify",
    "tile-specialize": "tile_specialize",
    "tile-pipeline": "tile_pipeline",
    "tile-hazards": "tile_hazards",
    "layout-fold": "layout_fold",
    "convert-layout-to-arith": "convert_layout_to_arith",
    "tile-schedule": "tile_schedule",
    "tile-ring": "tile_ring",
    "tile-async-waits": "tile_async_waits",
    "tile-carry-accumulators": "tile_carry_accumulators",
    "tile-distribute": "tile_distribute",
    "tile-relayout": "tile_relayout",
    "convert-tile-views": "convert_tile_views",
    "convert-tile-sync": "convert_tile_sync",
    "convert-tile-reductions": "convert_tile_reductions",
    "convert-tile-elementwise": "convert_tile_elementwise",
    "convert-tile-memory": "convert_tile_memory",
    "convert-tile-copies": "convert_tile_copies",
    "convert-tile-mma": "convert_tile_mma",
    "convert-tile-to-gpu": "convert_tile_to_gpu",
    "tile-warp-roles": "tile_warp_roles",
    "pipeline-steady-state": "pipeline_steady_state",
    "outline-tile-kernels": "outline_tile_kernels",
}
PASSES.builtin.update(BUILTIN)


def builtin_passes() -> tuple[type[Pass], ...]:
    """Every built-in pass class, in the table's order (imports their modules)."""
    return tuple(PASSES[name] for name in BUILTIN)


def __getattr__(name: str) -> object:
    if name == "BUILTIN_PASSES":  # the classes themselves, for code that lists them
        return builtin_passes()
    raise AttributeError(f"module 'tilec.passes' has no attribute {name!r}")


__all__ = ["BUILTIN", "BUILTIN_PASSES", "PASSES", "Pass", "builtin_passes", "register"]
