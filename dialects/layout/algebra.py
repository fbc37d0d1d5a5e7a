"""The CuTe layout algebra in pure Python: layouts, swizzles and their operations.

One namespace (`from tilec.dialects.layout import algebra as A`) over three modules: `core`
(Layout, Swizzle, ComposedLayout, the queries, coalesce, filter), `compose` (composition,
complement, the inverses) and `tiling` (divides, products, tile_to_shape, max_common_vector,
upcast/downcast, slicing); the int-tuple helpers of `int_tuple` come with them.
"""

from __future__ import annotations

from tilec.dialects.layout.compose import *  # noqa: F403
from tilec.dialects.layout.core import *  # noqa: F403
from tilec.dialects.layout.int_tuple import (  # noqa: F401  (the algebra's int-tuple helpers)
    DYN,
    Coord,
    IntTuple,
    LayoutError,
    ceil_div,
    compact_col_major,
    congruent,
    crd2idx,
    flatten,
    is_int,
    is_static,
    is_tuple,
    product,
    tiler_str,
    tuple_str,
)
from tilec.dialects.layout.tiling import *  # noqa: F403
