"""How many clusters of a bundle's kernel the GPU holds at once (cuOccupancyMaxActiveClusters).

    python bench/cluster_occupancy.py BUNDLE...

A persistent kernel launched with `num_sms` blocks in clusters of C runs in one wave only if
the GPU holds num_sms / C of its clusters at once (a cluster's blocks share a GPC); this prints
that count beside num_sms / C for each bundle (the runtime binds a cluster kernel's `num_sms` to
the blocks of the clusters that fit: docs/runtime.md).
"""

from __future__ import annotations

import sys

from tilec.runtime import driver
from tilec.runtime.bundle import read_bundle


def max_clusters(path: str) -> tuple[int, int, int]:
    manifest, ptx = read_bundle(path)
    driver.current_context()
    _, function = driver.load_function(ptx, manifest.entry, manifest.dynamic_smem)
    sms, block = driver.sm_count(), tuple(manifest.block)
    count = driver.max_active_clusters(
        function, block, manifest.dynamic_smem, manifest.cluster, sms - sms % manifest.cluster
    )
    return sms, manifest.cluster, count


if __name__ == "__main__":
    for path in sys.argv[1:]:
        sms, size, count = max_clusters(path)
        print(f"{path}: clusters of {size}: {count} at once; num_sms / {size} = {sms // size}")
