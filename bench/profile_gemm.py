"""Run one GEMM bundle a few times on randn data, for a profiler to watch (ncu, sanitizers).

    ncu --clock-control none -k regex:gemm -s 1 -c 1 python bench/profile_gemm.py BUNDLE [MxNxK]

The first launch warms up (module load); the profiler skips it with `-s 1`.
"""

from __future__ import annotations

import sys

import torch
from bench_gemm import parse_shape

from tilec.runtime import load


def main() -> None:
    bundle = sys.argv[1]
    m, n, k = parse_shape(sys.argv[2]) if len(sys.argv) > 2 else (4096, 4096, 4096)
    a = torch.randn(m, k, device="cuda").half()
    b = torch.randn(n, k, device="cuda").half()
    c = torch.empty(m, n, device="cuda", dtype=torch.half)
    kernel = load(bundle)
    for _ in range(3):
        kernel(a, b, c, 1.0)
    torch.cuda.synchronize()
    err = ((c.float() - a.float() @ b.float().T).norm() / (a.float() @ b.float().T).norm()).item()
    print(f"{bundle} {m}x{n}x{k}: relative error {err:.2e}")


if __name__ == "__main__":
    main()
