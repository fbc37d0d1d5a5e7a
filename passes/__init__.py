"""Passes: the one table of tilec passes, name -> class.

Every pass lives in its own module (`layout_fold.py` defines `layout-fold`) and registers
itself with `@register`; importing this package imports the built-in ones. User plugins
register the same way when `--load-pass-plugin` imports them.
"""

from tilec.passes.base import PASSES, Pass, register
from tilec.passes.convert_layout_to_arith import ConvertLayoutToArith
from tilec.passes.convert_tile_sm90 import ConvertTileSm90
from tilec.passes.convert_tile_to_gpu import ConvertTileToGpu
from tilec.passes.layout_fold import LayoutFold
from tilec.passes.outline_tile_kernels import OutlineTileKernels
from tilec.passes.pipeline_steady_state import PipelineSteadyState
from tilec.passes.tile_async_waits import TileAsyncWaits
from tilec.passes.tile_pipeline import TilePipeline
from tilec.passes.tile_specialize import TileSpecialize
from tilec.passes.tile_verify import TileVerify

BUILTIN_PASSES = (
    TileVerify,
    TileSpecialize,
    TilePipeline,
    LayoutFold,
    ConvertLayoutToArith,
    ConvertTileSm90,
    TileAsyncWaits,
    ConvertTileToGpu,
    PipelineSteadyState,
    OutlineTileKernels,
)

__all__ = ["BUILTIN_PASSES", "PASSES", "Pass", "register"]
