"""Carry the GPU tier's bundles to the GPU machine as one compressed file.

    python test/gpu/pack_bundles.py pack [DIR ...]     # here: build/tier.tar.xz
    python3 test/gpu/pack_bundles.py unpack            # there, in the repository root

The tier's bundle folders (build/sm90, build/gemm, build/bundles, ...) hold PTX text, ~70 MB
in all, past the 64 MiB the device tool carries; xz packs them ~10x (build/sm90: 32 MB ->
3.3 MB). `pack` takes the folders named, or every tier folder that exists; `unpack` writes
them back where they were (an existing folder of the same name is replaced). Only the Python
standard library: the GPU machine needs no xz binary.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path

ARCHIVE = Path("build/tier.tar.xz")
FOLDERS = (
    "sm90",
    "examples",
    "gemm",
    "bundles",
    "variants",
    "rows",
    "splitk",
    "attention",
    "attention_sm90",
    "attention_sm90_varlen",
    "sm90_rungs",
)


def pack(folders: list[str]) -> None:
    chosen = [Path(f) for f in folders] or [Path("build", f) for f in FOLDERS]
    present = [f for f in chosen if f.is_dir()]
    if not present:
        raise SystemExit(f"none of {[str(f) for f in chosen]} exists: build the bundles first")
    with tarfile.open(ARCHIVE, "w:xz", preset=1) as tar:
        for folder in present:
            tar.add(folder)
    size = ARCHIVE.stat().st_size / 2**20
    print(f"{ARCHIVE}: {', '.join(map(str, present))} ({size:.1f} MiB); carry it")


def unpack() -> None:
    if not ARCHIVE.is_file():
        raise SystemExit(f"no {ARCHIVE}: carry it (python test/gpu/pack_bundles.py pack)")
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        tops = packed(tar.getmembers())
        if any(len(t.parts) < 2 or t.parts[0] != "build" for t in tops):
            raise SystemExit(f"{ARCHIVE} holds more than build/<folder> trees: {sorted(tops)}")
        for top in tops:
            shutil.rmtree(top, ignore_errors=True)
        tar.extractall(".", filter="data")
    print(f"unpacked {', '.join(sorted(map(str, tops)))}")


def packed(members: list[tarfile.TarInfo]) -> list[Path]:
    """The folders `pack` added (each replaces its namesake, nothing beside it: build/families/gemm
    packed alone leaves the other families): the members whose folder is not in the archive."""
    names = {Path(m.name) for m in members}
    return sorted({n for n in names if n.parent not in names})


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in ("pack", "unpack"):
        raise SystemExit(__doc__)
    if argv[0] == "pack":
        pack(argv[1:])
    else:
        unpack()


if __name__ == "__main__":
    main(sys.argv[1:])
