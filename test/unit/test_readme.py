"""The README and docs/performance.md stay what they promise: the README's kernel is the real
file, its index names every doc, its images exist; the performance reference has no dated
work-log headings, and its recorded results parse."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_kernel_is_the_example_verbatim() -> None:
    blocks = re.findall(r"```tile\n(.*?)```", README, re.S)
    assert blocks == [(ROOT / "examples" / "vadd.tile").read_text()]


def test_readme_indexes_every_doc_once_and_stays_short() -> None:
    section = README.split("## Documentation", 1)[1]
    linked = re.findall(r"^- \[docs/([\w-]+\.md)\]\(docs/\1\): \S", section, re.M)
    assert sorted(linked) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(README.splitlines()) <= 150


def test_images_the_docs_show_exist() -> None:
    for doc, text in (("README.md", README), ("docs/performance.md", None)):
        text = text or (ROOT / doc).read_text()
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
            path = (ROOT / doc).parent / image
            assert path.is_file(), f"{doc} shows {image}, which is missing"
            assert path.stat().st_size <= 150 * 1024, f"{image} is over 150 KB"


def test_performance_is_a_reference_not_a_journal() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    dated = [h for h in re.findall(r"^#+ .*$", text, re.M) if re.search(r"\d{4}-\d\d-\d\d", h)]
    assert dated == []
    assert len(text.splitlines()) <= 600


def test_recorded_results_parse_and_their_tables_are_rectangular() -> None:
    files = sorted((ROOT / "bench" / "results").glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text())
        for name, table in data.get("tables", {}).items():
            width = len(table["columns"])
            bad = [row for row in table["rows"] if len(row) != width]
            assert not bad, f"{path.name} {name}: rows of the wrong width {bad}"
