"""fsxlt report: cells against a pandas recomputation, flags, comparisons, formats, plots."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr, spearmanr, wilcoxon
from statsmodels.stats.multitest import multipletests

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.report import aggregate, compare, load_records, report_text, write_report
from fsxlt.report.compare import spread

LANGS = ("de", "fr")
KS = (1, 4)
ARMS = {"full": ("full", True), "fc-pooler": ("fc-pooler", True),
        "full-nosource": ("full", False)}
MISSING = {("de", 4, "fc-pooler"): {2, 5}}  # buckets that never ran


def fake_record(lang: str, k: int, arm: str, index: int, score: float) -> dict:
    method, source = ARMS[arm]
    return {
        "format": "fsxlt-adapt-run/1", "status": "ok", "task": "xnli", "language": lang,
        "k": k, "method": method, "metric": "accuracy",
        "bucket": {"id": f"xnli/{lang}/k{k}/{index:02d}", "index": index, "k": k},
        "model": {"source_training": source}, "selected_lr": 1e-5,
        "runs": [{"lr": 3e-5, "epochs": [{"epoch": 1, "dev_score": 0.0}]},
                 {"lr": 1e-5, "epochs": [{"epoch": e, "dev_score": round(score - 0.01 * (3 - e), 4)}
                                         for e in range(1, 4 + index % 2)]}],
        "best_epoch": 3, "dev_score": score - 0.01, "test_score": score,
        "sweep": {"config_hash": "sweep:test", "arm": arm},
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    rng = random.Random(7)
    for lang in LANGS:
        atomic_write_json(root / "xnli" / lang / "k0" / "zero-shot.json", {
            "format": "fsxlt-zero-shot/1", "status": "ok", "task": "xnli", "language": lang,
            "k": 0, "test_score": 0.5 + 0.1 * LANGS.index(lang), "metric": "accuracy"})
        for k in KS:
            for arm in ARMS:
                for index in range(8):
                    if index in MISSING.get((lang, k, arm), ()):
                        continue
                    score = round(0.55 + 0.02 * k - 0.1 * (arm != "full") + rng.random() / 10, 4)
                    atomic_write_json(root / "xnli" / lang / f"k{k}" / arm / f"{index:02d}.json",
                                      fake_record(lang, k, arm, index, score))
    return root


def raw_frame(root: Path) -> pd.DataFrame:
    rows = []
    for path in sorted(root.rglob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if rec.get("status") == "ok" and rec.get("format") == "fsxlt-adapt-run/1":
            rows.append({"language": rec["language"], "k": rec["k"], "arm": rec["sweep"]["arm"],
                         "bucket": rec["bucket"]["index"], "score": rec["test_score"]})
    return pd.DataFrame(rows)


def test_cells_equal_a_pandas_recomputation(runs):
    cells = aggregate(load_records(runs), expected=8)
    expected = raw_frame(runs).groupby(["arm", "language", "k"])["score"].agg(
        ["mean", "std", "count", "min", "max"])
    shots = cells[cells["k"] > 0].set_index(["arm", "language", "k"])
    assert len(shots) == len(expected) == len(LANGS) * len(KS) * len(ARMS)
    for key, row in expected.iterrows():
        assert shots.loc[key, "mean"] == pytest.approx(100 * row["mean"], abs=1e-9)
        assert shots.loc[key, "std"] == pytest.approx(100 * row["std"], abs=1e-9)  # ddof=1
        assert shots.loc[key, "n"] == row["count"]
        # the spread over buckets (issue 51, item 12): cells.csv's min and max
        assert shots.loc[key, "min"] == pytest.approx(100 * row["min"], abs=1e-9)
        assert shots.loc[key, "max"] == pytest.approx(100 * row["max"], abs=1e-9)
        zero = 50.0 + 10 * LANGS.index(key[1])
        if key[0] != "full-nosource":
            assert shots.loc[key, "gain"] == pytest.approx(100 * row["mean"] - zero)
    population = aggregate(load_records(runs), ddof=0, expected=8)
    assert population.loc[1, "std"] == pytest.approx(
        100 * raw_frame(runs).query("arm == 'full' and language == 'de' and k == 1")["score"]
        .std(ddof=0))
    text = report_text(runs, "md", expected=8)
    de1 = expected.loc[("full", "de", 1)]
    assert f"| de | 50.00 | {100 * de1['mean']:.2f} ± {100 * de1['std']:.2f} |" in text


def test_missing_buckets_are_flagged(runs):
    text = report_text(runs, "md", expected=8)
    assert "(n=6)" in text
    assert "- xnli/de/k4/fc-pooler: 02 05" in text
    assert text.count("(n=6)") == 2  # its own table and the variants table; no other cell
    assert text.count("(n=8)") == 0


def test_variant_gain_and_no_source_tables(runs):
    text = report_text(runs, "md", expected=8)
    assert "xnli: adapting variants side by side, K=1" in text
    assert "| language | Full FT | FC+Pooler |" in text
    assert "xnli: Full FT, source en, gain over zero-shot" in text
    cells = aggregate(load_records(runs), expected=8).set_index(["arm", "language", "k"])
    drop = cells.loc[("full", "fr", 4), "mean"] - cells.loc[("full-nosource", "fr", 4), "mean"]
    assert "xnli: drop without source-training, Full FT, source en" in text
    assert f"{drop:+.2f}" in text
    # the no-source arm has no zero-shot column
    assert "xnli: Full FT, no source-training (test" in text


def test_corrupt_error_and_foreign_files_are_never_counted(runs, tmp_path):
    import shutil

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    before = aggregate(load_records(copy), expected=8)
    good = (copy / "xnli/de/k1/full/03.json").read_text()
    (copy / "xnli/de/k1/full/03.json").write_text(good[: len(good) // 2])  # truncated
    (copy / "xnli/de/k1/full/09.json").write_text("\x00\x01garbage")
    atomic_write_json(copy / "xnli/de/k1/full/10.json", {
        "format": "fsxlt-adapt-error/1", "status": "error", "error": "RuntimeError: boom"})
    atomic_write_json(copy / "notes.json", {"hello": "world"})
    # an `fsxlt evaluate --out` file kept for the analyses: known, not a run, not listed
    atomic_write_json(copy / "xnli/de/k0/zero-shot-test.json", {
        "format": "fsxlt-evaluation/1", "scores": {"accuracy": 0.5}, "split": "test"})
    records = load_records(copy)
    after = aggregate(records, expected=8)
    assert records.skipped == ["notes.json"]
    assert [path for path, _ in records.unreadable] == ["xnli/de/k1/full/03.json",
                                                        "xnli/de/k1/full/09.json"]
    assert records.unreadable[0][1].startswith("truncated")
    assert records.unreadable[1][1].startswith("not valid JSON")
    assert records.failed == ["xnli/de/k1/full/10.json"]
    row = after[(after["arm"] == "full") & (after["language"] == "de") & (after["k"] == 1)]
    assert int(row["n"].iloc[0]) == 7
    assert row["missing"].iloc[0] == "03"
    untouched = ~((after["arm"] == "full") & (after["language"] == "de") & (after["k"] == 1))
    pd.testing.assert_frame_equal(after[untouched].reset_index(drop=True),
                                  before[untouched].reset_index(drop=True))
    text = report_text(copy, "md", expected=8)
    assert "Error records (not counted): 1" in text
    assert "Unreadable records (not counted; fsxlt sweep reruns them): 2" in text
    assert "Files that are not run records (not counted): 1" in text


def test_a_lone_corrupt_record_is_named_not_reported_as_nothing(runs, tmp_path):
    one = tmp_path / "runs" / "xnli/de/k1/full"
    one.mkdir(parents=True)
    good = (runs / "xnli/de/k1/full/03.json").read_text()
    (one / "03.json").write_text(good[:100])
    with pytest.raises(FsxltError, match=r"unreadable: xnli/de/k1/full/03.json: truncated"):
        report_text(tmp_path / "runs")


def test_paired_comparison_matches_scipy(runs):
    records = load_records(runs)
    result = compare(records, "full", "fc-pooler", seed=3, n_boot=2000)
    raw = raw_frame(runs)
    a = raw[raw["arm"] == "full"]
    b = raw[raw["arm"] == "fc-pooler"]
    paired = a.merge(b, on=["language", "k", "bucket"], suffixes=("_a", "_b"))
    assert len(result) == len(LANGS) * len(KS)
    for row in result.itertuples(index=False):
        sub = paired[(paired["language"] == row.language) & (paired["k"] == row.k)]
        diffs = 100 * (sub["score_a"] - sub["score_b"]).to_numpy()
        assert row.n == len(diffs) == (6 if (row.language, row.k) == ("de", 4) else 8)
        assert row.mean_diff == pytest.approx(diffs.mean())
        assert row.p_value == pytest.approx(wilcoxon(diffs).pvalue)
        assert row.ci_low <= row.mean_diff <= row.ci_high
        score_a, score_b = 100 * sub["score_a"].to_numpy(), 100 * sub["score_b"].to_numpy()
        assert row.sd_a == pytest.approx(np.std(score_a, ddof=1))
        assert row.sd_b == pytest.approx(np.std(score_b, ddof=1))
        assert row.sd_ratio == pytest.approx(row.sd_a / row.sd_b)
        assert row.sd_ratio_low <= row.sd_ratio_high
        assert row.sd_p_value == pytest.approx(
            pearsonr(score_a + score_b, score_a - score_b).pvalue)
        assert row.rho == pytest.approx(spearmanr(score_a, score_b).statistic)
    again = compare(records, "full", "fc-pooler", seed=3, n_boot=2000)
    pd.testing.assert_frame_equal(result, again)
    # one cell's interval does not depend on which other cells exist
    only_de = records.scores[records.scores["language"] == "de"]
    records.scores = only_de
    alone = compare(records, "full", "fc-pooler", seed=3, n_boot=2000)
    pd.testing.assert_frame_equal(alone.drop(columns="q_value"),
                                  result[result["language"] == "de"]
                                  .drop(columns="q_value").reset_index(drop=True))
    # the BH adjustment is over the cells compared: statsmodels' own, on the cells' p-values
    assert list(result["q_value"]) == pytest.approx(list(
        multipletests(result["p_value"], method="fdr_bh")[1]))


def test_spread_ratio_swaps_with_the_arms_sees_a_wider_arm_and_ranks_buckets():
    rng = np.random.default_rng(5)
    narrow = 50 + rng.normal(0, 1, 40)
    wide = 50 + rng.normal(0, 4, 40)
    one, other = spread(wide, narrow), spread(narrow, wide)
    assert one["sd_ratio"] == pytest.approx(1 / other["sd_ratio"])
    assert one["sd_p_value"] == pytest.approx(other["sd_p_value"]) and one["sd_p_value"] < 0.001
    assert 1 < one["sd_ratio_low"] <= one["sd_ratio"] <= one["sd_ratio_high"]
    same = spread(narrow, narrow + 3)  # a shift: the same spread, the same order
    assert same["sd_ratio"] == pytest.approx(1) and np.isnan(same["sd_p_value"])
    assert same["rho"] == pytest.approx(1) and same["rho_p_value"] < 0.001
    assert spread(narrow, -narrow)["rho"] == pytest.approx(-1)
    assert np.isnan(spread(narrow[:2], wide[:2])["sd_ratio"])
    assert one["sd_ratio_low"] == pytest.approx(1 / other["sd_ratio_high"])


def test_all_zero_differences_give_no_p_value_and_say_why(runs):
    """Issue 62, item 2: no test is possible when every paired difference is 0; no
    p-value is printed, and the page says why."""
    from fsxlt.report.compare import render_compare

    records = load_records(runs)
    result = compare(records, "full", "full", n_boot=100)
    assert result["p_value"].isna().all() and np.all(result["mean_diff"] == 0.0)
    page = render_compare(result, "full", "full", "md", seed=0, n_boot=100)
    assert "no test is possible (every paired difference is 0" in page
    assert "1.0000" not in page


def test_cli_formats_plots_and_byte_identical_output(runs, tmp_path, capsys):
    for fmt, name in (("md", "report.md"), ("latex", "report.tex"), ("csv", "report.csv")):
        out = tmp_path / fmt
        assert run_app(["report", str(runs), "--format", fmt, "--out", str(out),
                        "--expected-buckets", "8"] + (["--no-plots"] if fmt != "md" else [])) == 0
        assert (out / name).is_file()
    latex = (tmp_path / "latex" / "report.tex").read_text()
    assert "\\begin{tabular}" in latex and "$\\pm$" in latex
    csv = pd.read_csv(tmp_path / "csv" / "report.csv")
    assert {"task", "language", "k", "mean", "std", "n", "gain"} <= set(csv.columns)
    per_record = pd.read_csv(tmp_path / "md" / "records.csv")  # one row per bucket's run
    records = load_records(runs).scores
    assert len(per_record) == len(records) > 0
    assert list(per_record.columns[:6]) == ["task", "language", "k", "arm", "bucket",
                                            "test_points"]  # issue 62: one unit, named
    mine = per_record.set_index(["language", "k", "arm", "bucket"])["test_points"]
    theirs = records.set_index(["language", "k", "arm", "bucket"])["test_score"]
    assert np.allclose(mine.sort_index(), 100 * theirs.sort_index(), atol=1e-4)
    cells_file = pd.read_csv(tmp_path / "md" / "cells.csv")
    joined = per_record.groupby(["language", "k", "arm"])["test_points"].mean()
    for row in cells_file[cells_file["k"] > 0].itertuples():
        assert joined[(row.language, row.k, row.arm)] == pytest.approx(row.mean, abs=1e-3)
    plots = sorted(p.name for p in (tmp_path / "md" / "plots").iterdir())
    for kind in ("distribution", "vs_k", "curves"):
        assert f"xnli_full_{kind}.png" in plots and f"xnli_full_{kind}.pdf" in plots
    again = tmp_path / "again"
    write_report(runs, again, "md", expected=8)
    for path in sorted((tmp_path / "md").rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(tmp_path / "md")).read_bytes()
    capsys.readouterr()
    assert run_app(["report", str(runs), "--compare", "full", "full-nosource",
                    "--bootstrap", "500"]) == 0
    printed = capsys.readouterr().out
    assert "full minus full-nosource" in printed and "Wilcoxon" in printed
    assert "spread over the same buckets" in printed and "Pitman-Morgan" in printed


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/runs"], "no such directory"),
    (["{empty}"], "no finished run records"),
    (["{runs}", "--compare", "full", "lora"], "no records for method 'lora'"),
    (["{runs}", "--format", "html"], "unknown format"),
])
def test_cli_errors_are_one_line(runs, tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    args = [a.format(runs=runs, empty=tmp_path / "empty") for a in args]
    assert run_app(["report", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_help_has_examples():
    from typer.testing import CliRunner

    from fsxlt.cli import app

    for command in ("report", "sweep"):
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output


def test_the_page_has_every_cell_with_its_interval_every_bucket_and_its_plots(runs, tmp_path):
    """Issue 62, item 1: report.md a researcher can paste from: per cell n, mean ± std, the
    95% bootstrap interval over buckets (recomputed here from the records) and min–max;
    per (task, language) every bucket's run with its hash; each arm's plots under its
    table; one unit (points) in every file."""
    from fsxlt.report.compare import bootstrap_ci
    from fsxlt.report.tables import BOOTSTRAP

    write_report(runs, tmp_path / "out", "md", expected=8)
    page = (tmp_path / "out" / "report.md").read_text()
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    scores = load_records(runs).scores
    for (lang, k, arm), group in scores.groupby(["language", "k", "arm"]):
        row = cells[(cells["language"] == lang) & (cells["k"] == k) & (cells["arm"] == arm)]
        low, high = bootstrap_ci(100 * group["test_score"].to_numpy(), seed=0,
                                 key=f"xnli/{arm}/{lang}/{k}", n_boot=BOOTSTRAP)
        assert row["ci_low"].item() == pytest.approx(low, abs=1e-3)
        assert row["ci_high"].item() == pytest.approx(high, abs=1e-3)
        assert low <= row["mean"].item() <= high
        mean, std = 100 * group["test_score"].mean(), 100 * group["test_score"].std()
        assert (f"| {arm} | {lang} | {k} | {len(group)} | {mean:.2f} ± {std:.2f} | "
                f"[{low:.2f}, {high:.2f}] | {100 * group['test_score'].min():.2f}–"
                f"{100 * group['test_score'].max():.2f} |") in page
        for r in group.itertuples():
            dev = f"{100 * r.dev_score:.2f}" if r.dev_score == r.dev_score else "–"
            hashed = f"`{r.bucket_sha256[:16]}`" if r.bucket_sha256 else "–"
            assert (f"| {k} | {arm} | {int(r.bucket):02d} | {hashed} | "
                    f"{100 * r.test_score:.2f} | {dev} |") in page
    assert "![xnli_full_distribution](plots/xnli_full_distribution.png)" in page
    for image in re.findall(r"\]\((plots/[^)]+)\)", page):
        assert (tmp_path / "out" / image).is_file()
