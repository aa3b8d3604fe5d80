"""The "Writing your own method" example (docs/training.md) runs as printed, on a demo output."""

from __future__ import annotations

import re
from pathlib import Path

from fsxlt.cli import run_app
from tests.sweep_fixtures import MICRO_DEMO

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HEADING = "Writing your own method"


def _example() -> tuple[str, str]:
    """The first Python block under the heading, and the page that holds it (exactly one)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        match = re.search(rf"^#+ {HEADING}\n", text, re.M)
        if match:
            block = re.search(r"```python\n(.*?)```", text[match.end():], re.S)
            found.append((block.group(1), page.relative_to(ROOT).as_posix()))
    assert len(found) == 1, f"{HEADING!r} should be on one page, found {len(found)}"
    return found[0]


def test_the_method_example_runs_on_a_demo_output(tmp_path, monkeypatch, capsys):
    (tmp_path / "micro.yaml").write_text(MICRO_DEMO)
    assert run_app(["demo", "--out", str(tmp_path / "demo-out"), "--config",
                    str(tmp_path / "micro.yaml")]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code, page = _example()
    exec(compile(code, page, "exec"), {"__name__": "readme_example"})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["full", "bias-only", "lora"]
    assert all("best epoch" in line and "test" in line for line in lines)
