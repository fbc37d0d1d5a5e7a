"""How many clusters of a bundle's kernel the GPU holds at once (cuOccupancyMaxActiveClusters).

    python bench/cluster_occupancy.py BUNDLE...

A persistent kernel launched with `num_sms` blocks in clusters of C runs in one wave only if
the GPU holds num_sms / C of its clusters at once (a cluster's blocks share a GPC); this prints
that count beside num_sms / C for each bundle.
"""

from __future__ import annotations

import sys

from cuda.bindings import driver as cu

from tilec.runtime import driver
from tilec.runtime.bundle import read_bundle


def max_clusters(path: str) -> tuple[int, int, int]:
    manifest, ptx = read_bundle(path)
    driver.current_context()
    _, function = driver.load_function(ptx, manifest.entry, manifest.dynamic_smem)
    config = cu.CUlaunchConfig()
    sms = driver.sm_count()
    config.gridDimX, config.gridDimY, config.gridDimZ = sms, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = (*manifest.block,)
    config.sharedMemBytes = manifest.dynamic_smem
    attr = cu.CUlaunchAttribute()
    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x = manifest.cluster
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1
    config.attrs, config.numAttrs = [attr], 1
    err, count = cu.cuOccupancyMaxActiveClusters(function, config)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters: {err}")
    return sms, manifest.cluster, int(count)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        sms, size, count = max_clusters(path)
        print(f"{path}: clusters of {size}: {count} at once; num_sms / {size} = {sms // size}")
