"""docs/results/ (issue 44): one dated page per study, each with its facts (date, commit,
data, command, reduced settings), listed in docs/results.md; each page's tables kept as a
CSV beside it (``scripts/results_tables.py``); its data slices built by
``scripts/results_data.py`` from the files as downloaded."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
PAGES = sorted(RESULTS.glob("20*.md"))
FACTS = ("measured", "recorded in", "data", "command", "reduced")


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def facts(page: Path) -> dict[str, str]:
    rows = re.findall(r"^\| ([a-z ]+) \| (.+) \|$", page.read_text(encoding="utf-8"), re.M)
    return {key: value for key, value in rows if key in (*FACTS, "scores")}


def test_there_are_pages_and_an_index_of_them():
    index = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\(results/(20[^)]+\.md)\)", index))
    assert len(PAGES) >= 15
    assert linked == {page.name for page in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_each_page_states_its_facts(page):
    found = facts(page)
    assert set(FACTS) <= set(found), page.name
    assert found["measured"] == page.name[:10]
    assert re.fullmatch(r"commit `[0-9a-f]{7,40}` \(fsxlt \d+\.\d+\.\d+\)", found["recorded in"])
    csvs = [page.with_suffix(".csv"), page.with_suffix(".records.csv")]
    assert ("scores" in found) == any(csv.is_file() for csv in csvs), page.name


def test_every_csv_matches_its_page(capsys):
    script("results_tables").main(["--check"])  # exits 1 naming a stale CSV


def test_the_tables_script_reads_cells_not_facts_or_code():
    page = ("| | |\n|---|---|\n| measured | 2026-11-28 |\n\n```\n| a | b |\n|---|---|\n"
            "| x | 1 |\n```\n\n| target | K=1 |\n|---|---|\n| de | **52.1 ± 2.0** |\n")
    assert script("results_tables").page_csv(page) == \
        "table,row,column,value\n1,de,K=1,52.1 ± 2.0\n"


def test_a_malformed_table_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Issue 50, item 16: a row with a cell too many (0.6.0: ValueError from zip)."""
    tables_script = script("results_tables")
    (tmp_path / "2026-01-01-x.md").write_text("| target | K=1 |\n|---|---|\n| de | 1 | 2 |\n",
                                              encoding="utf-8")
    monkeypatch.setattr(tables_script, "RESULTS", tmp_path)
    with pytest.raises(SystemExit) as stop:
        tables_script.main(["--check"])
    assert str(stop.value).count("\n") == 0
    assert "2026-01-01-x.md: table 1, row 'de': 3 cells under a header of 2" in str(stop.value)


def test_the_panx_slices_are_the_ranges_the_pages_name(tmp_path):
    panx = tmp_path / "panx"
    panx.mkdir()
    for name, count in (("train-en", 2100), ("dev-en", 800), ("dev-ar", 600), ("dev-de", 600),
                        ("dev-zh", 600)):
        (panx / f"{name}.tsv").write_text(
            "".join(f"{name}-{i}\tO\nword\tB-PER\n\n" for i in range(1, count + 1)),
            encoding="utf-8")
    script("results_data").main(["panx-regimes", "--panx", str(panx),
                                 "--out", str(tmp_path / "data2")])

    def sentences(name: str) -> list[str]:
        text = (tmp_path / "data2" / name).read_text(encoding="utf-8")
        return [block.split("\t")[0] for block in text.strip().split("\n\n")]

    assert sentences("train-en.tsv") == [f"train-en-{i}" for i in range(1, 2001)]
    assert sentences("dev-en-select.tsv") == [f"dev-en-{i}" for i in range(201, 701)]
    assert sentences("dev-en.tsv") == [f"dev-en-{i}" for i in range(1, 101)]
    assert sentences("test-zh.tsv") == [f"dev-zh-{i}" for i in range(201, 501)]
    assert sentences("dev-ar.tsv")[-1] == "dev-ar-100"


def test_a_file_too_short_for_its_range_is_one_line(tmp_path):
    (tmp_path / "dev-de.tsv").write_text("a\tb\tneutral\n" * 10, encoding="utf-8")
    with pytest.raises(SystemExit, match="has 10 units, the range 1-500 does not fit"):
        script("results_data").main(["icl-xnli-de", "--xnli", str(tmp_path),
                                     "--out", str(tmp_path / "out")])
