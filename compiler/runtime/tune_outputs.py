"""The timing half of `tilec tune` (runtime/tuning.py) checks what it times: each candidate's
outputs against the baseline's (the kernel at its defaults with its variant clauses) on the
shape's own arguments, so that a fast build computing something else cannot win a table.
Torch tensors only (where tilec tune times with CUDA graphs); the judging is plain Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tilec.runtime.binding import user_params
from tilec.runtime.bundle import Manifest, TensorParam

OUTPUT_TOLERANCE = 2e-2  # relative Frobenius error of a candidate's outputs to the baseline's


def written(manifest: Manifest) -> list[tuple[int, bool]]:
    """The tensors a launch writes: (position, whether it reads them first: intent inout)."""
    params = user_params(manifest)
    return [(i, p.intent == "inout") for i, p in enumerate(params)
            if isinstance(p, TensorParam) and p.intent != "in"]  # fmt: skip


def check_outputs(
    fns: dict[str, Callable[[], object]], args: list[Any], outs: list[tuple[int, bool]], torch: Any
) -> dict[str, str]:
    """Each build of `fns` run once on `args` and its outputs compared with the baseline's
    (run first): the builds whose outputs differ, with why (`judge_outputs`). Before each run
    an output it only writes is NaN-poisoned (an element left unwritten shows) and one it also
    reads gets its first contents back."""
    first = [args[i].clone() for i, _ in outs]

    def run(fn: Callable[[], object]) -> list[Any]:
        for (i, reads), was in zip(outs, first, strict=True):
            args[i].copy_(was) if reads else args[i].fill_(math.nan)
        fn()
        torch.cuda.synchronize()
        return [args[i].double() for i, _ in outs]

    want = run(fns["baseline"])
    errors = {"baseline": [relative_error(w, w) for w in want]}
    for name, fn in fns.items():
        if name != "baseline":
            errors[name] = [relative_error(a, w) for a, w in zip(run(fn), want, strict=True)]
    return judge_outputs(errors, OUTPUT_TOLERANCE)


def relative_error(got: Any, want: Any) -> float:
    """‖got − want‖ / ‖want‖ (Frobenius; ‖want‖ = 0 counts as 1), infinite where either holds
    a NaN or an infinity (torch tensors)."""
    if not (bool(got.isfinite().all()) and bool(want.isfinite().all())):
        return math.inf
    return float((got - want).norm()) / (float(want.norm()) or 1.0)


def judge_outputs(errors: dict[str, list[float]], tolerance: float) -> dict[str, str]:
    """From each build's outputs' errors against the baseline's (the baseline's own: 0, or
    infinite where its outputs are not finite), the builds to leave out, with why. A baseline
    whose outputs are not finite judges nothing: it alone is left out."""
    if not all(e <= tolerance for e in errors["baseline"]):
        return {"baseline": "its outputs hold NaN or infinity: no build checked against them"}
    out = {}
    for name, errs in errors.items():
        bad = [(k, e) for k, e in enumerate(errs) if not e <= tolerance]
        if bad:
            k, e = bad[0]
            out[name] = f"output {k} differs from the baseline's (relative error {e:.3g})"
    return out
