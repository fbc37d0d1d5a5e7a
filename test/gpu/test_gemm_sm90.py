"""GPU tier: examples/gemm_sm90.tile (TMA, mbarrier ring, wgmma, warp specialisation,
persistent tiles) from its bundles against torch, on random and ragged shapes.

Bundles: `bash test/gpu/build_sm90_bundles.sh` (on a machine with MLIR) writes
build/sm90/<name>/gemm90. C = A @ B^T with A M×K, B N×K row-major, f32 accumulation; the
reference is computed in f64 and the output is NaN-poisoned before every launch.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if torch.cuda.get_device_capability() < (9, 0):
    pytest.skip("needs an SM90 GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)
from tilec.runtime.binding import bind  # noqa: E402

ROOT = Path(
    os.environ.get("TILEC_SM90_BUNDLES", Path(__file__).resolve().parents[2] / "build/sm90")
)
BUNDLES = {p.parent.parent.name: p.parent for p in ROOT.glob("*/gemm90/manifest.json")}
NAMES = sorted(BUNDLES)
if not NAMES:
    pytest.skip(f"no SM90 GEMM bundles in {ROOT}", allow_module_level=True)
# The K-major bf16 defaults: the bundle the launch-behaviour tests below use.
DEFAULT = "default_bf16" if "default_bf16" in BUNDLES else NAMES[0]

# Whole tiles; ragged M, N and K (TMA zero-fills the boxes past the edges; the epilogue's
# guarded path stores what lies inside); one k-tile and fewer k-tiles than stages; odd N (the
# output's rows are not 4-byte aligned: element stores); more tiles than SMs (each block walks
# several, the ring's phases carry across them).
SHAPES = [
    (128, 256, 64),
    (256, 512, 1024),
    (129, 257, 72),
    (1, 1, 8),
    (64, 1000, 128),
    (1000, 999, 1024),
    (300, 200, 8),
    (4096, 4096, 256),
    (2176, 1920, 1096),
    (136, 264, 72),
    (1000, 1000, 136),
]
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
# By the output's type (O = f32: only the f32 sums' order differs from the fp64 reference, so a
# kernel that rounded through bf16 on the way would fail).
BOUNDS = {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-4}


def dtype_of(name: str) -> str:
    return "f16" if name.endswith("f16") and not name.endswith("bf16") else "bf16"


def majors(name: str) -> tuple[int, int]:
    """(MA, MB) of a bundle named a<MA>b<MB>_<T>; the others are K-major."""
    found = re.match(r"a([01])b([01])_", name)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def operand(rows: int, k: int, mn_major: int, dtype: torch.dtype, g: object) -> torch.Tensor:
    """rows x K, K contiguous, or (mn_major) the transpose of a row-major K x rows tensor."""
    if mn_major:
        return torch.randn(k, rows, device="cuda", generator=g).to(dtype).T
    return torch.randn(rows, k, device="cuda", generator=g).to(dtype)


def fresh(m: int, n: int, k: int, t: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    """Random K-major A (m x k) and B (n x k), and a NaN-poisoned output C (m x n)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(t)
    b = torch.randn(n, k, device="cuda", generator=g).to(t)
    return a, b, torch.full((m, n), float("nan"), device="cuda", dtype=t)


def check(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bound: float, what: str) -> None:
    """C, once the launch is done, against A @ B^T in f64."""
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < bound, f"{what}: relative error {err:.2e}"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_sm90_gemm_matches_torch(name: str, m: int, n: int, k: int) -> None:
    t = dtype_of(name)
    ma, mb = majors(name)
    if (ma and m % 8) or (mb and n % 8):
        pytest.skip("an MN-major operand's rows are M (N) long: TMA needs 16-byte multiples")
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = operand(m, k, ma, DTYPES[t], g)
    b = operand(n, k, mb, DTYPES[t], g)
    kernel = load(BUNDLES[name])
    out = next(p.dtype for p in kernel.manifest.params if p.name == "C")  # O (T by default)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=DTYPES[out])
    kernel(a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    assert not torch.isnan(c).any(), "unwritten outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < BOUNDS[out], f"relative error {err:.2e}"


def test_sm90_gemm_repeated_launches_agree() -> None:
    """Back-to-back launches on new data (tensor maps re-encoded per launch) stay right."""
    kernel = load(BUNDLES[DEFAULT])
    t = DTYPES[dtype_of(DEFAULT)]
    for seed in range(3):
        a, b, c = fresh(512, 768, 256, t, seed)
        kernel(a, b, c)
        check(a, b, c, BOUNDS[dtype_of(DEFAULT)], f"launch {seed}")


def test_sm90_gemm_variants_by_the_launch_sizes() -> None:
    """The default bundle's nine variants, tried in order: where B's rows are 16-byte but not
    32-byte aligned the cluster build (CM = 2: each block fetches half of B's box rows); else,
    up to 8, 16, 32, 64, 128 and 192 rows, the swapped builds (C^T = B A^T, wgmma n = 8 ... 192,
    ping-pong on 64-row tiles from 33 rows); else,
    where the 128x256 tiles make under three waves and leave the last under 90% full and
    K <= 4096, the ping-pong 128x128 build, with a 5-stage ring from K = 2048 and 4 stages
    below; the default elsewhere. Each against torch on fresh data, the output poisoned."""
    kernel = load(BUNDLES[DEFAULT])
    clusters, *swapped, deep, pingpong = kernel.others
    assert clusters.manifest.cluster == 2 and clusters.manifest.constants["PP"] == 0
    for rows, sw in zip((8, 16, 32, 64, 128, 192), swapped, strict=True):
        assert sw.manifest.constants["SW"] == 1 and sw.manifest.constants["BN"] == rows
        assert sw.manifest.constants["PP"] == int(rows > 32), rows
    for pp, stages in ((deep, 5), (pingpong, 4)):
        assert pp.manifest.constants["PP"] == 1 and pp.manifest.constants["BN"] == 128
        assert pp.manifest.constants["STAGES"] == stages
    t = DTYPES[dtype_of(DEFAULT)]
    cases = [
        (1000, 1500, 3000, clusters),
        (300, 520, 72, clusters),
        (1000, 1500, 3072, deep),  # 48 tiles of 128x256
        (200, 2000, 4096, deep),  # 16, K at the bound
        (256, 2048, 2048, deep),  # 16, K from 2048
        (256, 2048, 1024, pingpong),  # 16
        (1100, 4352, 512, pingpong),  # 153: a wave and a fifth
        (1024, 4096, 256, None),  # 128 tiles: a wave 97% full
        (256, 512, 4160, None),  # K past 4096
        (1, 4096, 4096, swapped[0]),
        (9, 1000, 528, swapped[1]),
        (32, 300, 72, clusters),  # 16-byte rows first
        (32, 300, 80, swapped[2]),
        (64, 11008, 256, swapped[3]),
        (65, 11008, 256, swapped[4]),
        (128, 4096, 11008, swapped[4]),
        (129, 11008, 256, swapped[5]),
        (192, 4096, 4096, swapped[5]),
        (130, 2000, 4096, swapped[5]),
        (193, 11008, 256, pingpong),
    ]
    for seed, (m, n, k, chosen) in enumerate(cases):
        a, b, c = fresh(m, n, k, t, seed)
        bound = bind(kernel.manifest, (a, b, c), lambda device: {"num_sms": 132})
        assert kernel.variant_for(bound) is chosen, (m, n, k)
        kernel(a, b, c)
        check(a, b, c, BOUNDS[dtype_of(DEFAULT)], f"{(m, n, k)}")


# Few rows: the swapped builds' tiles are 128 (from 33 rows: 64, ping-pong) columns of C by BN
# rows (8 ... 192), stored from registers through C's transpose; ragged N and K (K a multiple
# of 16: at 16-byte rows the cluster variant comes first), the split tail (N = 4096: 32 tiles
# in four parts), stream-K over one wave (N = 11008: 86 tiles), several tiles a block
# (N = 20000), K under one k-tile.
SWAPPED = [
    (m, n, k)
    for m in (1, 3, 8, 9, 16, 17, 31, 33, 64, 65, 100, 128, 150, 192)
    for n, k in ((4096, 4096), (200, 48), (11008, 1040), (20000, 272), (1000, 16))
]


@pytest.mark.parametrize("name", ["default_bf16", "default_f16", "o32_bf16"])
@pytest.mark.parametrize(("m", "n", "k"), SWAPPED)
def test_sm90_swapped_rows_match_torch(name: str, m: int, n: int, k: int) -> None:
    if name not in BUNDLES:
        pytest.skip(f"no {name} bundle")
    kernel = load(BUNDLES[name])
    t = DTYPES[dtype_of(name)]
    a, b, _ = fresh(m, n, k, t, m * 131 + n + k)
    out = next(p.dtype for p in kernel.manifest.params if p.name == "C")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=DTYPES[out])
    bound = bind(kernel.manifest, (a, b, c), lambda device: {"num_sms": 132})
    assert kernel.variant_for(bound).manifest.constants["SW"] == 1
    kernel(a, b, c)
    check(a, b, c, BOUNDS[out], f"{name} {(m, n, k)}")


def test_sm90_gemm_refuses_unaligned_k() -> None:
    """TMA needs 16-byte row strides: K = 12 (24-byte rows) is a clear error, not a launch."""
    kernel = load(BUNDLES[DEFAULT])
    t = DTYPES[dtype_of(DEFAULT)]
    a = torch.randn(64, 12, device="cuda").to(t)
    b = torch.randn(64, 12, device="cuda").to(t)
    c = torch.empty(64, 64, device="cuda", dtype=t)
    with pytest.raises(ValueError, match="multiples of 16"):
        kernel(a, b, c)


# --- split tails (SK = 1): the last wave's tiles cut along K, the parts summed by the owner --

SPLIT = [n for n in NAMES if n.startswith("sk_")]
# T tiles of 128x256 over the GPU's P SMs, r = T mod P in the last wave. Stream-K where
# sharing the last two waves' tiles out evenly saves a block at least 16 k-tiles and a tenth
# of its work: 3072 x 3072 x 3000 (288, r = 24, ragged K), 160 tiles with ragged M, N and K
# (each tile over two blocks); over the last wave alone where it fills more than half the
# SMs: 2560^3 (200 tiles, r = 68: shares of 21 k-tiles after a whole tile), 2560 x 2500 x
# 2200 (ragged K, shares of 18 k-tiles), 512 x 21200 x 2104 (332 tiles: two whole waves,
# then 68 tiles in shares of 17 k-tiles; ragged N and K). Else the
# tail split s = min(P div r, max(k-tiles div 16, 1)) ways: one tile in 4 parts (ragged K:
# the last part's box is zero-filled past K); 32 tiles of 47 k-tiles in parts of 23 and 24
# (ragged K); a tail of 66 after 5 whole waves split 2 ways (4224 x 5632 x 2048: stream-K
# would save too little). Else whole tiles: 4096^2 x 256 (r = 116, 4 k-tiles), 2560^2 x 1000
# (r = 68, 16 k-tiles), 2048 x 2560 x 512 (8 k-tiles: parts would be too short), 100 tiles
# (more than half the SMs), one k-tile a tile.
SPLIT_SHAPES = [
    (128, 256, 4096),
    (100, 200, 4040),
    (1000, 999, 2992),
    (3072, 3072, 3000),
    (2560, 2560, 2560),
    (2040, 2504, 1352),
    (2560, 2500, 2200),
    (512, 21200, 2104),
    (4096, 4096, 256),
    (2560, 2500, 1000),
    (2048, 2560, 512),
    (4224, 5632, 2048),
    (300, 600, 64),
    (1280, 2560, 640),
    (4096, 4096, 64),
]


# (the f32-output builds split too: SK = 1 is the default; their owners store f32 sums)
@pytest.mark.parametrize("name", SPLIT + [n for n in NAMES if n.startswith("o32")])
@pytest.mark.parametrize(("m", "n", "k"), SPLIT_SHAPES)
def test_sm90_split_tail_matches_torch(name: str, m: int, n: int, k: int) -> None:
    test_sm90_gemm_matches_torch(name, m, n, k)


@pytest.mark.parametrize("name", SPLIT)
def test_sm90_split_tail_repeated_launches_agree(name: str) -> None:
    """The owners clear the flags they waited on: launch after launch (fresh data each, the
    output poisoned) the parts meet again, and a launch that splits nothing between them
    leaves no flag set."""
    kernel = load(BUNDLES[name])
    t = DTYPES[dtype_of(name)]
    shapes = [(256, 512, 2048), (4096, 4096, 64), (2040, 2504, 1352), (512, 21200, 2104)]
    shapes += [(1280, 2560, 640)]
    for seed, (m, n, k) in enumerate(shapes * 2):
        a, b, c = fresh(m, n, k, t, seed)
        kernel(a, b, c)
        check(a, b, c, BOUNDS[dtype_of(name)], f"launch {seed}")


@pytest.mark.parametrize(
    "name", [n for n in ("default_bf16", "sk_pp_bf16", "sk_cm4_f16", "cm2_pp_bf16") if n in BUNDLES]
)
@pytest.mark.parametrize("sms", [1, 7, 66, 131])
def test_sm90_with_fewer_sms_matches_torch(name: str, sms: int) -> None:
    """Kernel.with_sms(n): the persistent grid takes n blocks (whole clusters among them), and
    every schedule still covers the output: whole waves, split tails and stream-K over n
    blocks, ping-pong turns, clusters (fresh data, the output poisoned, f64 reference)."""
    base = load(BUNDLES[name])
    cluster = base.manifest.cluster
    if sms < cluster:
        with pytest.raises(ValueError, match="SMs hold none"):
            base.with_sms(sms)
        return
    kernel = base.with_sms(sms)
    t = DTYPES[dtype_of(name)]
    for seed, (m, n, k) in enumerate([(1000, 999, 1024), (2040, 2504, 1352), (300, 600, 64)]):
        a, b, c = fresh(m, n, k, t, seed)
        grid = bind(kernel.manifest, (a, b, c), kernel.device_symbols).grid[0]
        assert 0 < grid <= sms and grid % cluster == 0
        kernel(a, b, c)
        check(a, b, c, BOUNDS[dtype_of(name)], f"{m}x{n}x{k}")


def test_sm90_split_tail_launches_on_two_streams_take_turns() -> None:
    """Launches on two streams with nothing ordering them, each sharing its tiles' work out
    (stream-K over two waves, over one): the module's workspace is one, so the runtime (the
    manifest says `stateful`) makes each launch wait for the other stream's last, through the
    driver's events; every result must still be right. (The race the ordering prevents is
    rare: a later launch's blocks start as the earlier one's exit, and its peers write a slot
    only after a segment of 16 k-tiles or more; with the ordering switched off this test
    passed in three runs on the H200. test/unit/test_stateful.py checks the ordering itself.)"""
    kernel = load(BUNDLES["sk_bf16"])
    assert kernel.manifest.stateful
    t = DTYPES["bf16"]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    shapes = [(2040, 2504, 1352), (512, 21200, 2104)]  # stream-K over two waves, over one
    runs = []
    for seed in range(8):
        m, n, k = shapes[seed % 2]
        g = torch.Generator(device="cuda").manual_seed(100 + seed)
        a = torch.randn(m, k, device="cuda", generator=g).to(t)
        b = torch.randn(n, k, device="cuda", generator=g).to(t)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=t)
        s = streams[seed % 2]
        s.wait_stream(torch.cuda.current_stream())  # the inputs are ready; nothing else waits
        with torch.cuda.stream(s):
            kernel(a, b, c)
        runs.append((a, b, c))
    torch.cuda.synchronize()
    for seed, (a, b, c) in enumerate(runs):
        ref = a.double() @ b.double().T
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < BOUNDS["bf16"], f"launch {seed}: relative error {err:.2e}"


def test_sm90_split_tail_in_a_cuda_graph() -> None:
    """A stateful kernel warmed up on one stream, then captured into a CUDA graph on another
    (torch.cuda.graph's): the capture is not ordered by events (the runtime asks whether the
    stream captures), and each replay on fresh data (the output poisoned) is right."""
    kernel = load(BUNDLES["sk_bf16"])
    t, (m, n, k) = DTYPES["bf16"], (2040, 2504, 1352)
    a = torch.empty(m, k, device="cuda", dtype=t)
    b = torch.empty(n, k, device="cuda", dtype=t)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=t)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernel(a.normal_(), b.normal_(), c)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(a, b, c)
    for seed in range(3):
        g = torch.Generator(device="cuda").manual_seed(200 + seed)
        a.copy_(torch.randn(m, k, device="cuda", generator=g))
        b.copy_(torch.randn(n, k, device="cuda", generator=g))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = a.double() @ b.double().T
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < BOUNDS["bf16"], f"replay {seed}: relative error {err:.2e}"


# --- the fused epilogue: examples/gemm_sm90_bias_act.tile -----------------------------------

EPILOGUES = {p.parent.parent.name: p.parent for p in ROOT.glob("epilogue/*/*/manifest.json")}
# (1152, 4352, 2048) and (200, 520, 4096) split their tiles along K (SK = 1): 6 tiles in 4
# parts each (the split tail), 153 tiles over the two last waves (stream-K), each part's sums
# gathered before the epilogue. Up to 64 rows the builds without ping-pong or clusters launch
# their swapped variants (C^T = B A^T; C and the bias read, the result stored, through C's
# transpose): 1, 5, 33 and 64 rows, the last two split along K.
EPILOGUE_SHAPES = [
    (128, 256, 64),
    (256, 512, 1024),
    (129, 257, 72),
    (300, 1000, 136),
    (1, 8, 8),
    (200, 520, 4096),
    (1152, 4352, 2048),
    (5, 300, 72),
    (33, 1000, 1040),
    (64, 4096, 2048),
]


def activation(name: str, y: torch.Tensor) -> torch.Tensor:
    act = int(name[3])  # act<N>...
    if act == 1:
        return torch.relu(y)
    if act == 2:
        return torch.nn.functional.gelu(y)  # the erf form
    if act == 3:
        return torch.nn.functional.gelu(y, approximate="tanh")
    return y


@pytest.mark.parametrize("name", sorted(EPILOGUES))
@pytest.mark.parametrize(("m", "n", "k"), EPILOGUE_SHAPES)
def test_sm90_fused_epilogue_matches_torch(name: str, m: int, n: int, k: int) -> None:
    t = "f16" if "f16" in name else "bf16"
    beta_used = "beta0" not in name
    g = torch.Generator(device="cuda").manual_seed(m + 5 * n + 11 * k)
    dt = DTYPES[t]
    kernel = load(EPILOGUES[name])
    out = next(p.dtype for p in kernel.manifest.params if p.name == "C")  # O (T by default)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    bias = torch.randn(n, device="cuda", generator=g).to(dt)
    if beta_used:
        c0 = torch.randn(m, n, device="cuda", generator=g).to(DTYPES[out])
    else:  # never read: BLAS allows anything for beta = 0, NaN included
        c0 = torch.full((m, n), float("nan"), device="cuda", dtype=DTYPES[out])
    c = c0.clone()
    alpha, beta = 0.75, -0.5
    kernel(a, b, c, bias.expand(m, n), alpha, beta)
    torch.cuda.synchronize()
    y = alpha * (a.double() @ b.double().T) + bias.double()
    if beta_used:
        y = y + beta * c0.double()
    ref = activation(name, y)
    assert not torch.isnan(c).any(), "unwritten or NaN outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < BOUNDS[out], f"relative error {err:.2e}"


def test_sm90_fused_epilogue_routes_few_rows_to_the_swapped_builds() -> None:
    """Up to 8, 16, 32 and 64 rows the fused kernel runs its swapped variants (BN = the bound);
    from 65 rows it does not."""
    if "act1" not in EPILOGUES:
        pytest.skip("no act1 bundle")
    kernel = load(EPILOGUES["act1"])
    t = DTYPES["bf16"]
    for m, rows in ((1, 8), (8, 8), (9, 16), (32, 32), (64, 64), (65, None)):
        a, b, c = fresh(m, 4096, 512, t, m)
        bias = torch.zeros(4096, device="cuda", dtype=t).expand(m, 4096)
        bound = bind(kernel.manifest, (a, b, c, bias, 1.0, 0.0), lambda device: {"num_sms": 132})
        chosen = kernel.variant_for(bound)
        sw = chosen is not None and chosen.manifest.constants.get("SW") == 1
        assert sw == (rows is not None), m
        if rows is not None:
            assert chosen.manifest.constants["BN"] == rows, m


# --- batched: examples/gemm_sm90_batched.tile -----------------------------------------------

BATCHED = {p.parent.parent.name: p.parent for p in ROOT.glob("batched/*/*/manifest.json")}
# The last: a batch's output of 1024 x 1040 elements, which the default bundle launches as its
# ping-pong variant (M * N >= 1024^2).
BATCHED_SHAPES = [
    (3, 128, 256, 64),
    (2, 129, 257, 72),
    (5, 64, 128, 1024),
    (32, 512, 512, 512),
    (2, 1024, 1040, 136),
]


def test_sm90_batched_large_outputs_take_the_pingpong_variant() -> None:
    kernel = load(BATCHED["default"])
    (pingpong,) = kernel.others
    assert pingpong.manifest.constants["PP"] == 1
    for m, n, chosen in ((1024, 1040, True), (1024, 1024, True), (512, 512, False)):
        args = [torch.empty(2, r, 64, device="cuda", dtype=torch.bfloat16) for r in (m, n)]
        args.append(torch.empty(2, m, n, device="cuda", dtype=torch.bfloat16))
        b = bind(kernel.manifest, tuple(args), lambda device: {"num_sms": 132})
        assert (kernel.variant_for(b) is pingpong) is chosen, (m, n)


@pytest.mark.parametrize("name", sorted(BATCHED))
@pytest.mark.parametrize(("l", "m", "n", "k"), BATCHED_SHAPES)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_sm90_batched_matches_torch(name: str, l: int, m: int, n: int, k: int, layout: str) -> None:
    dt = DTYPES["f16" if name == "f16" else "bf16"]
    g = torch.Generator(device="cuda").manual_seed(l + m + 3 * n + 7 * k)
    if layout == "strided":  # every other batch of larger tensors: batch strides not m*k
        a = torch.randn(2 * l, m, k, device="cuda", generator=g).to(dt)[::2]
        b = torch.randn(l, n, k + 8, device="cuda", generator=g).to(dt)[:, :, :k]
    else:
        a = torch.randn(l, m, k, device="cuda", generator=g).to(dt)
        b = torch.randn(l, n, k, device="cuda", generator=g).to(dt)
    c = torch.full((l, m, n), float("nan"), device="cuda", dtype=dt)
    load(BATCHED[name])(a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().transpose(1, 2)
    assert not torch.isnan(c).any(), "unwritten outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < BOUNDS["f16" if name == "f16" else "bf16"], f"relative error {err:.2e}"


@pytest.mark.parametrize(("m", "n", "k"), [(256, 512, 0), (0, 256, 64), (128, 0, 64)])
def test_sm90_gemm_empty_problems(m: int, n: int, k: int) -> None:
    """K = 0 stores zeros (the tensor maps over the empty A and B are null and never read);
    an empty M or N launches blocks that find no tile."""
    kernel = load(BUNDLES[DEFAULT])
    t = DTYPES[dtype_of(DEFAULT)]
    a = torch.randn(m, k, device="cuda").to(t)
    b = torch.randn(n, k, device="cuda").to(t)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=t)
    kernel(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, torch.zeros_like(c))
