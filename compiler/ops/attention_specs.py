"""The families behind tilec.ops.attention (tilec/ops/attention.py): builds of the attention
examples and the rules that pick one by head dim, dtype and device.

The mask is a compile-time parameter of the kernels (CAUSAL) that no argument's shape or stride
shows, so each mask is a family of its own, as each GEMM epilogue is (tilec/ops/gemm_specs.py):

- `attention`: no mask (CAUSAL = 0);
- `attention_causal`: top-left causal (CAUSAL = 1, torch's `is_causal`: key c for query r
  where c <= r);
- `attention_causal_br`: bottom-right causal (CAUSAL = 2, FlashAttention's: c <= r + N - M).

Each holds, for f16 and bf16, examples/attention_sm90.tile (`attention90`, sm_90a: head dims
64, 128 and 256) and examples/attention.tile (`attention`, sm_80: 64, 96, 128 and 256; its
bundle holds the `variant(N % BN == 0, MASK = 0)` build). The rules try the sm_90a builds
first: an SM 9.0 device runs them where they have the head dim, and the sm_80 build (whose PTX
runs there too) for D = 96; an SM 8.x device runs the sm_80 builds. A launch whose sm_90a
build refuses its arguments (TMA's alignment) goes on to the sm_80 rule of its D.

The arguments are the kernels' (Q, K, V, O, LSE, scale): Q and O of (B, H, M, D), K and V of
(B, HK, N, D), LSE f32 of (B, H, M); `D` in a rule is Q's last extent.

tilec.ops.attention_varlen's families (`attention_varlen`, `attention_varlen_causal`,
`attention_varlen_causal_br`) are the same over packed variable-length sequences:
examples/attention_sm90_varlen.tile (`attention90_varlen`, sm_90a: 64, 128, 256) first, then
examples/attention_varlen.tile (`attention_varlen`, sm_80: 64, 96, 128, 256), taking
(Q, K, V, O, LSE, cu_q, cu_k, max_q, scale): Q and O of (TQ, H, D), K and V of (TK, HK, D),
LSE f32 of (H, TQ), cu_q and cu_k i32 of B + 1 cumulative lengths, max_q the longest query
sequence.
"""

from __future__ import annotations

from collections.abc import Callable

from tilec.runtime.family import Build, FamilySpec, Rule

DTYPES = ("f16", "bf16")
SM90_DIMS = (64, 128, 256)  # examples/attention_sm90.tile's head dims
SM80_DIMS = (64, 96, 128, 256)  # examples/attention.tile's
HEAD_DIMS = tuple(sorted({*SM90_DIMS, *SM80_DIMS}))
# CAUSAL -> family
FAMILIES = {0: "attention", 1: "attention_causal", 2: "attention_causal_br"}
ARGS = (("Q", "tensor"), ("K", "tensor"), ("V", "tensor"), ("O", "tensor"), ("LSE", "tensor"),
        ("scale", "scalar"))  # fmt: skip
SIZES = {"B": ("Q", 0), "H": ("Q", 1), "M": ("Q", 2), "D": ("Q", 3), "HK": ("K", 1), "N": ("K", 2)}
# arch -> (source, kernel, head dims)
KERNELS = {
    "sm_90a": ("examples/attention_sm90.tile", "attention90", SM90_DIMS),
    "sm_80": ("examples/attention.tile", "attention", SM80_DIMS),
}


VARLEN_FAMILIES = {0: "attention_varlen", 1: "attention_varlen_causal",
                   2: "attention_varlen_causal_br"}  # fmt: skip
VARLEN_ARGS = (*ARGS[:5], ("cu_q", "tensor"), ("cu_k", "tensor"), ("max_q", "scalar"),
               ("scale", "scalar"))  # fmt: skip
VARLEN_SIZES = {"TQ": ("Q", 0), "H": ("Q", 1), "D": ("Q", 2), "TK": ("K", 0), "HK": ("K", 1),
                "B1": ("cu_q", 0)}  # fmt: skip
VARLEN_KERNELS = {
    "sm_90a": ("examples/attention_sm90_varlen.tile", "attention90_varlen", SM90_DIMS),
    "sm_80": ("examples/attention_varlen.tile", "attention_varlen", SM80_DIMS),
}


def build_name(d: int, dtype: str, arch: str) -> str:
    return f"d{d}_{dtype}_{arch.replace('_', '')}"


def attention_spec(causal: int, varlen: bool = False) -> FamilySpec:
    """The family of one mask (`varlen`: over packed sequences): every head dim of each
    kernel, f16 and bf16, sm_90a first."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for arch, (source, kernel, dims) in (VARLEN_KERNELS if varlen else KERNELS).items():
        for d in dims:
            for t in DTYPES:
                name = build_name(d, t, arch)
                params = {"D": str(d), "T": t, "CAUSAL": str(causal)}
                builds[name] = Build(name, source, kernel, params, arch)
                dtypes = {"Q": t, "K": t, "V": t, "O": t}
                rules.append(Rule(name, (f"D == {d}",), dtypes, (), f"head dim {d}, {kernel}"))
    if varlen:
        return FamilySpec(VARLEN_FAMILIES[causal], VARLEN_ARGS, builds, tuple(rules),
                          sizes=VARLEN_SIZES)  # fmt: skip
    return FamilySpec(FAMILIES[causal], ARGS, builds, tuple(rules), sizes=SIZES)


ATTENTION_SPECS: dict[str, Callable[[], FamilySpec]] = {
    **{name: (lambda c=causal: attention_spec(c)) for causal, name in FAMILIES.items()},
    **{
        name: (lambda c=causal: attention_spec(c, True)) for causal, name in VARLEN_FAMILIES.items()
    },
}
