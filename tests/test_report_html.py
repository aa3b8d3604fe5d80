"""Issue 62, item 1: report.html, the report as one self-contained page (no network, no
other file: plots inline), opened in a real headless Chromium (Debian's package, which
.ci/run installs), which must render its tables and decode its images."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.test_report import runs  # noqa: F401 - the module's runs directory fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# the page, as the browser rendered it: how many tables, rows and images it holds, and how
# many images decoded (their natural width, after loading)
PROBE = ("<script>window.addEventListener('load', () => {"
         "const imgs = [...document.images];"
         "document.title = 'probe ' + document.querySelectorAll('table').length + ' ' +"
         "document.querySelectorAll('tr').length + ' ' + imgs.length + ' ' +"
         "imgs.filter(i => i.complete && i.naturalWidth > 0).length;});</script>")


def rendered(page: Path, tmp_path: Path) -> str:
    """The DOM Chromium built of ``page`` (with the probe added), network off."""
    if CHROMIUM is None:
        if os.environ.get("FSXLT_BROWSER_TESTS") == "1":
            pytest.fail("no chromium: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium here (apt install chromium; .ci/run does)")
    probed = tmp_path / f"probed-{page.name}"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
         "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_html_renders_its_tables_and_plots_in_chromium(runs, tmp_path):  # noqa: F811
    out = tmp_path / "report"
    assert run_app(["report", str(runs), "--out", str(out), "--expected-buckets", "8"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert not re.search(r'src="(?!data:image/png;base64,)', page)  # nothing from a file
    markdown = (out / "report.md").read_text(encoding="utf-8")
    n_tables = markdown.count("\n### ")
    n_images = markdown.count("](plots/")
    assert n_images >= 3
    dom = rendered(out / "report.html", tmp_path)
    tables, rows, images, decoded = map(int, re.search(
        r"<title>probe (\d+) (\d+) (\d+) (\d+)</title>", dom).groups())
    assert tables == n_tables and images == decoded == n_images
    assert rows == markdown.count("\n| ")  # every header and body row of every table
    assert "Every bucket" in dom and "Every cell" in dom


def test_a_comparison_page_shows_each_cells_differences_bucket_by_bucket(runs, tmp_path):  # noqa: F811
    out = tmp_path / "compare"
    assert run_app(["report", str(runs), "--compare", "full", "fc-pooler", "--out", str(out),
                    "--bootstrap", "200"]) == 0
    markdown = (out / "compare_full_vs_fc-pooler.md").read_text(encoding="utf-8")
    cells = len(re.findall(r"^\| xnli \|", markdown, re.M)) // 3  # three tables per cell
    plots = sorted((out / "plots").glob("compare_full_vs_fc-pooler_*.png"))
    assert cells and len(plots) == cells
    dom = rendered(out / "compare_full_vs_fc-pooler.html", tmp_path)
    tables, _rows, images, decoded = map(int, re.search(
        r"<title>probe (\d+) (\d+) (\d+) (\d+)</title>", dom).groups())
    assert tables == 3 and images == decoded == cells  # differences, spreads, power
