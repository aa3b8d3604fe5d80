"""README's "Writing your own method" example runs as printed, on a demo output."""

from __future__ import annotations

import re
from pathlib import Path

from fsxlt.cli import run_app
from tests.sweep_fixtures import MICRO_DEMO

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Writing your own method"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_method_example_runs_on_a_demo_output(tmp_path, monkeypatch, capsys):
    (tmp_path / "micro.yaml").write_text(MICRO_DEMO)
    assert run_app(["demo", "--out", str(tmp_path / "demo-out"), "--config",
                    str(tmp_path / "micro.yaml")]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    exec(compile(_example(), "README.md", "exec"), {"__name__": "readme_example"})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["full", "bias-only", "lora"]
    assert all("best epoch" in line and "test" in line for line in lines)
