"""tilec.ops.attention's dispatch without a GPU or torch (tilec/ops/attention_specs.py,
tilec/ops/attention.py): which build each head dim, mask, dtype and device picks (the rules'
formulas evaluated as a family evaluates them), that the builds' parameters are the rules'
promises, and the mask and scale arguments' checks."""

from __future__ import annotations

import math

import pytest

from tilec.ops import op_specs
from tilec.ops.attention import attention_scale, causal_mode
from tilec.ops.attention_specs import (
    ATTENTION_SPECS,
    FAMILIES,
    HEAD_DIMS,
    SM80_DIMS,
    SM90_DIMS,
    VARLEN_FAMILIES,
    attention_spec,
)
from tilec.runtime.family import FamilySpec, runs_on
from tilec.runtime.formula import all_hold


def chosen(spec: FamilySpec, arch: str, dtype: str, d: int) -> str | None:
    """The first rule's build that runs on `arch`, takes `dtype` and holds for head dim d."""
    sizes = {"B": 2, "H": 8, "HK": 2, "M": 129, "N": 257, "D": d, "TQ": 300, "TK": 500, "B1": 4}
    for rule in spec.rules:
        if not runs_on(spec.builds[rule.build].arch, arch):
            continue
        if any(rule.dtypes.get(a, dtype) != dtype for a in ("Q", "K", "V", "O")):
            continue
        if all_hold(rule.when, sizes):
            return rule.build
    return None


def test_one_family_a_mask() -> None:
    assert FAMILIES == {0: "attention", 1: "attention_causal", 2: "attention_causal_br"}
    assert set(ATTENTION_SPECS) == {*FAMILIES.values(), *VARLEN_FAMILIES.values()}
    assert set(ATTENTION_SPECS) <= set(op_specs())
    for causal, name in FAMILIES.items():
        spec = ATTENTION_SPECS[name]()
        assert spec.name == name
        assert {b.params["CAUSAL"] for b in spec.builds.values()} == {str(causal)}
        assert [n for n, _ in spec.args] == ["Q", "K", "V", "O", "LSE", "scale"]
        assert spec.sizes["D"] == ("Q", 3) and spec.sizes["N"] == ("K", 2)
        assert FamilySpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("causal", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_86", "sm_89"])
def test_each_head_dim_picks_its_build(causal: int, dtype: str, arch: str) -> None:
    spec = attention_spec(causal)
    for d in HEAD_DIMS:
        name = chosen(spec, arch, dtype, d)
        assert name is not None, (arch, dtype, d)
        build = spec.builds[name]
        assert build.params == {"D": str(d), "T": dtype, "CAUSAL": str(causal)}
        sm90 = arch == "sm_90" and d in SM90_DIMS
        assert build.arch == ("sm_90a" if sm90 else "sm_80"), (arch, d)
        assert build.kernel == ("attention90" if sm90 else "attention")
        assert build.source == (
            "examples/attention_sm90.tile" if sm90 else "examples/attention.tile"
        )


def test_head_dims_and_builds() -> None:
    assert HEAD_DIMS == (64, 96, 128, 256)
    spec = attention_spec(0)
    assert sorted(spec.builds) == sorted(
        [f"d{d}_{t}_sm90a" for d in SM90_DIMS for t in ("f16", "bf16")]
        + [f"d{d}_{t}_sm80" for d in SM80_DIMS for t in ("f16", "bf16")]
    )
    # an sm_90a build on SM 9.0 first; a D it lacks (96) runs the sm_80 build there
    assert chosen(spec, "sm_90", "f16", 96) == "d96_f16_sm80"
    assert chosen(spec, "sm_90", "bf16", 128) == "d128_bf16_sm90a"
    # every sm_90a rule has an sm_80 rule of the same head dim and dtype behind it (a launch
    # TMA refuses goes on to it)
    rules = [r.build for r in spec.rules]
    for d in SM90_DIMS:
        for t in ("f16", "bf16"):
            assert rules.index(f"d{d}_{t}_sm90a") < rules.index(f"d{d}_{t}_sm80")


@pytest.mark.parametrize("d", [0, 32, 80, 160, 512])
def test_other_head_dims_have_no_rule(d: int) -> None:
    for arch in ("sm_90", "sm_80"):
        assert chosen(attention_spec(1), arch, "f16", d) is None


def test_causal_modes() -> None:
    assert causal_mode(False) == 0 and causal_mode(False, "bottom_right") == 0
    assert causal_mode(True) == 1 and causal_mode(True, "top_left") == 1
    assert causal_mode(True, "bottom_right") == 2
    with pytest.raises(ValueError, match="causal_alignment one of"):
        causal_mode(True, "lower_right")
    with pytest.raises(ValueError, match="causal_alignment"):
        causal_mode(False, "diagonal")
    with pytest.raises(TypeError, match="causal must be a bool"):
        causal_mode(1)  # type: ignore[arg-type]


def test_scale() -> None:
    assert attention_scale(None, 64) == 0.125
    assert attention_scale(None, 96) == 1 / math.sqrt(96)
    assert attention_scale(2, 64) == 2.0 and isinstance(attention_scale(2, 64), float)
    for bad in (0, -0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="scale must be finite and > 0"):
            attention_scale(bad, 64)
    for bad in (True, "0.1", [0.1]):
        with pytest.raises(TypeError, match="scale must be a Python float"):
            attention_scale(bad, 64)


def test_varlen_families() -> None:
    """tilec.ops.attention_varlen: a family a mask, the packed kernels' arguments and sizes."""
    assert VARLEN_FAMILIES == {
        0: "attention_varlen", 1: "attention_varlen_causal", 2: "attention_varlen_causal_br"
    }  # fmt: skip
    assert set(VARLEN_FAMILIES.values()) <= set(op_specs())
    for causal, name in VARLEN_FAMILIES.items():
        spec = ATTENTION_SPECS[name]()
        assert spec.name == name
        assert {b.params["CAUSAL"] for b in spec.builds.values()} == {str(causal)}
        assert spec.args == (
            ("Q", "tensor"), ("K", "tensor"), ("V", "tensor"), ("O", "tensor"),
            ("LSE", "tensor"), ("cu_q", "tensor"), ("cu_k", "tensor"), ("max_q", "scalar"),
            ("scale", "scalar"),
        )  # fmt: skip
        assert spec.sizes["D"] == ("Q", 2) and spec.sizes["TK"] == ("K", 0)
        assert FamilySpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("causal", [0, 1, 2])
@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_89"])
def test_varlen_head_dims_pick_their_build(causal: int, arch: str) -> None:
    """The sm_90a build (examples/attention_sm90_varlen.tile) where it has the head dim on SM
    9.0, else examples/attention_varlen.tile's sm_80 build; every sm_90a rule has the sm_80
    rule of its D and dtype behind it."""
    spec = attention_spec(causal, varlen=True)
    for d in HEAD_DIMS:
        for dtype in ("f16", "bf16"):
            build = spec.builds[chosen(spec, arch, dtype, d)]
            assert build.params == {"D": str(d), "T": dtype, "CAUSAL": str(causal)}
            sm90 = arch == "sm_90" and d in SM90_DIMS
            assert (build.arch, build.kernel, build.source) == (
                ("sm_90a", "attention90_varlen", "examples/attention_sm90_varlen.tile")
                if sm90
                else ("sm_80", "attention_varlen", "examples/attention_varlen.tile")
            ), (arch, d)
    rules = [r.build for r in spec.rules]
    for d in SM90_DIMS:
        assert rules.index(f"d{d}_f16_sm90a") < rules.index(f"d{d}_f16_sm80")
