"""Runtime: tuning tables, the written result of `tilec tune` (runtime/tuning.py times a plan),
and what a family makes of one: each timed shape whose best candidate beat the baseline as a
rule ahead of the family's own (`tilec family build --tuning`), or a family of the plan's own
bundles (`family_from_plan`: a tuning run's result, launchable where it ran, no MLIR)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tilec import __version__
from tilec.runtime.binding import user_params
from tilec.runtime.bundle import ScalarParam
from tilec.runtime.kernel import load
from tilec.runtime.tuning import (
    FORMAT_VERSION,
    TABLE_FORMAT,
    Entry,
    Plan,
    TuneError,
    read_plan,
)


def table_json(plan: Plan, entries: list[Entry], gpu: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": TABLE_FORMAT,
        "format_version": FORMAT_VERSION,
        "source": plan.source,
        "source_hash": plan.source_hash,
        "kernel": plan.kernel,
        "arch": plan.arch,
        "defines": plan.defines,
        "tilec_version": __version__,
        **gpu,
        "entries": [e.to_json() for e in entries if e.ranked],
    }


def read_table(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TuneError(f"{path}: cannot read a tuning table: {err}") from None
    if data.get("format") != TABLE_FORMAT or data.get("format_version") != FORMAT_VERSION:
        raise TuneError(f"{path}: not a {TABLE_FORMAT} version {FORMAT_VERSION} file")
    return data


@dataclass(frozen=True)
class TunedRule:
    """One shape of a tuning table as a family rule: the best parameters, where they apply."""

    params: dict[str, str]  # the table's defines and the best candidate's parameters
    when: tuple[str, ...]
    dtypes: dict[str, str]
    note: str


def tuned_rules(table: dict[str, Any]) -> list[TunedRule]:
    """Each timed shape of `table` (read_table) whose best candidate beat the baseline as a
    rule, in the table's order (a shape the baseline kept has none: the family's own rules
    take it)."""
    out = []
    for entry in _ruled(table):
        best = entry["ranked"][0]
        params = {**table["defines"], **{k: str(v) for k, v in entry["best"].items()}}
        note = f"tuned on {table['gpu']}: {best['ms'] * 1e3:.1f} µs at {entry['shape']}"
        out.append(TunedRule(params, tuple(entry["when"]), dict(entry["dtypes"]), note))
    return out


def family_from_plan(table: dict[str, Any], directory: str | Path) -> Any:
    """A family whose builds are the plan's bundles that `table` (timed from that plan) found
    best, one rule a shape: a tuning run's result, launchable where it ran (no MLIR)."""
    from tilec.runtime.family import Build, Family, FamilySpec, Rule

    root = Path(directory)
    plan = read_plan(root)
    found = {
        _params_key(c.params): (i, c) for i, c in enumerate(plan.candidates) if c.pruned is None
    }
    builds: dict[str, Build] = {}
    rules = []
    for entry, rule in zip(_ruled(table), tuned_rules(table), strict=True):
        i, c = found[_params_key(entry["best"])]
        builds[f"c{i}"] = Build(
            f"c{i}", plan.source, plan.kernel, rule.params, plan.arch, c.bundle, variants=False
        )
        rules.append(Rule(f"c{i}", rule.when, rule.dtypes, (), rule.note))
    if not builds:
        raise TuneError("no shape of the table has a candidate faster than the baseline")
    first = load(root / next(b.bundle for b in builds.values()))
    args = tuple(
        (p.name, "scalar" if isinstance(p, ScalarParam) else "tensor")
        for p in user_params(first.manifest)
    )
    return Family(FamilySpec(plan.kernel, args, builds, tuple(rules)), root)


def _ruled(table: dict[str, Any]) -> list[dict[str, Any]]:
    return [entry for entry in table["entries"] if entry["best"] is not None]


def _params_key(params: dict[str, Any]) -> str:
    return json.dumps({k: int(v) for k, v in params.items()}, sort_keys=True)


def tuned(spec: Any, tables: list[dict[str, Any]]) -> Any:
    """`spec` with each table's shapes as builds and rules ahead of its own rules, the narrower
    buckets first (`bucket_extent`): a table that split a bucket another table timed whole (gemm's
    (32, 48] and (48, 64] rows beside (32, 64]) wins inside its part."""
    from tilec.runtime.family import Build, Rule

    builds = dict(spec.builds)
    rules: list[Rule] = []
    for table in tables:
        for t in tuned_rules(table):
            what = [table["source"], table["kernel"], t.params, table["arch"]]
            digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]
            name = f"tuned_{table['kernel']}_{digest}"
            params, arch = t.params, table["arch"]
            build = Build(name, table["source"], table["kernel"], params, arch, variants=False)
            builds.setdefault(name, build)
            rules.append(Rule(name, t.when, t.dtypes, (), t.note))
    rules.sort(key=lambda r: bucket_extent(r.when))  # stable: equal extents keep the tables' order
    return replace(spec, builds=builds, rules=(*rules, *spec.rules))


def bucket_extent(when: tuple[str, ...]) -> float:
    """How many shapes a bucket's formulas (`bucket`'s `X > lo`, `X <= hi`) admit: the product
    of its ranges' widths, unbounded ones infinite. `bucket`'s ranges of one size are nested or
    apart, so of two rules that both match a shape, the one of smaller extent is the narrower."""
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    for formula in when:
        name, op, value = (formula.split() + ["", ""])[:3]
        if op in (">", "<=") and value.lstrip("-").isdigit():
            (lo if op == ">" else hi)[name] = int(value)
    extent = 1.0
    for name in lo.keys() | hi.keys():
        extent *= hi[name] - lo.get(name, 0) if name in hi else float("inf")
    return extent
