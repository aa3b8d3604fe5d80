"""fsxlt demo end to end on the reduced config: outputs, FS-XLT behaviours, resume, CLI, errors.

Behaviours asserted on the numbers the run produced (never exact values):
few-shot beats zero-shot on a low-overlap target; less spread over buckets
at the largest K than at K=1 for most (task, target) pairs; a lower lexical
overlap gives a lower zero-shot score among targets with the same word order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fsxlt
from fsxlt.cli import run_app
from fsxlt.demo import SUMMARY_FILE, load_demo_config, parse_demo_config, run_demo
from fsxlt.errors import FsxltError


def _tested_raw() -> dict:
    """The smallest config that proves what these tests assert: the quick demo less
    synth-ner, its strategy stage on synth-pos with one model-based strategy against
    random. Every cell it keeps is the quick demo's, number for number (each task's data,
    buckets, source-training and runs are seeded by the task; checked 2026-12-01 on all 18
    cells), and it costs a sixth less CPU time than the quick demo (41 of 250 s)."""
    import yaml

    raw = yaml.safe_load((Path(fsxlt.__file__).parent / "configs" / "demo" / "quick.yaml")
                         .read_text(encoding="utf-8"))
    raw["tasks"].pop("synth-ner")
    raw["strategies"] = {"task": "synth-pos", "language": "sov20", "k": 1, "n_pools": 4,
                         "pool_size": 100, "names": ["random", "uncertain"]}
    return raw


QUICK = parse_demo_config(_tested_raw(), "the tested quick config")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict, list[str]]:
    import yaml

    root = tmp_path_factory.mktemp("demo")
    out = root / "out"
    (root / "quick-tested.yaml").write_text(yaml.safe_dump(_tested_raw(), sort_keys=False),
                                            encoding="utf-8")
    lines: list[str] = []
    summary = run_demo(out, root / "quick-tested.yaml", progress=False, log=lines.append)
    return out, summary, lines


def _cells(summary: dict) -> dict[tuple[str, str, int], dict]:
    return {(c["task"], c["language"], c["k"]): c for c in summary["cells"]}


def _info(summary: dict) -> dict[str, dict]:
    return {lang["code"]: lang for lang in summary["languages"]}


def test_every_stage_wrote_its_artifacts(demo):
    out, summary, _ = demo
    assert summary["n_failed"] == 0
    expected_runs = sum(len(QUICK.languages) * len(ks) * QUICK.n_buckets for _, ks in QUICK.tasks)
    assert summary["n_runs"] == expected_runs
    for task, ks in QUICK.tasks:
        assert (out / "ckpt" / task / "fsxlt_checkpoint.json").is_file()
        for lang in QUICK.languages:
            assert (out / "runs" / task / lang / "k0" / "zero-shot.json").is_file()
            for k in ks:
                manifest = json.loads((out / "buckets" / task / lang / f"k{k}" /
                                       "manifest.json").read_text())
                assert len(manifest["buckets"]) == QUICK.n_buckets
                records = sorted((out / "runs" / task / lang / f"k{k}" / "full").glob("*.json"))
                assert len(records) == QUICK.n_buckets
    report = (out / "report" / "report.md").read_text()
    for task, _ in QUICK.tasks:
        assert task in report
    assert list((out / "report" / "plots").glob("*.png"))
    assert json.loads((out / SUMMARY_FILE).read_text()) == summary


def test_few_shot_beats_zero_shot_on_a_low_overlap_target(demo):
    """The mean few-shot score (over tasks and K) beats the mean zero-shot score."""
    _, summary, _ = demo
    cells, info = _cells(summary), _info(summary)
    lowest = min(info[code]["overlap"] for code in QUICK.languages)
    for low in [code for code in QUICK.languages if info[code]["overlap"] == lowest]:
        few = [sum(cells[(task, low, k)]["mean"] for k in ks) / len(ks) for task, ks in QUICK.tasks]
        zero = [cells[(task, low, 0)]["mean"] for task, _ in QUICK.tasks]
        assert sum(few) > sum(zero), (low, few, zero)


def test_more_shots_give_less_spread_for_most_targets(demo):
    """The std over buckets at the largest K is below the std at K=1 for most targets.

    Pooled over the (task, target) pairs, as the other behaviours are pooled
    over tasks: per task there are only three targets here, and with 6
    buckets a std is known to about a third of itself. It is the weakest of
    the three behaviours on this reduced run (4 of 6 pairs here, 5 of 9 in the quick
    demo, on 2026-12-01 on the development machine, with the seed-0 encoder and one
    torch thread; at K=1
    early stopping keeps runs near the zero-shot model, which compresses the
    spread). The count depends on the CPU's kernels, not on the load
    (docs/demo.md, running it again), so a failure here is a finding to look at,
    not noise to hide (docs/results/2026-11-25-demo.md). The summary's per-task
    finding must count the same cells.
    """
    _, summary, _ = demo
    cells = _cells(summary)
    shrinking, pairs = 0, 0
    for task, ks in QUICK.tasks:
        smaller = sum(1 for lang in QUICK.languages
                      if cells[(task, lang, max(ks))]["std"] < cells[(task, lang, min(ks))]["std"])
        finding = next(f for f in summary["findings"]
                       if f["task"] == task and f["behaviour"] == "more shots, less spread")
        assert f"for {smaller}/{len(QUICK.languages)} languages" in finding["detail"]
        assert finding["holds"] == (smaller > len(QUICK.languages) / 2)
        shrinking += smaller
        pairs += len(QUICK.languages)
    assert shrinking > pairs / 2, f"std shrank for only {shrinking}/{pairs} (task, target) pairs"


def test_lower_overlap_gives_lower_zero_shot_within_a_word_order(demo):
    _, summary, _ = demo
    cells, info = _cells(summary), _info(summary)
    orders = {info[code]["order"] for code in QUICK.languages}
    pairs = [(a, b) for a in QUICK.languages for b in QUICK.languages
             if info[a]["order"] == info[b]["order"] and info[a]["overlap"] > info[b]["overlap"]]
    assert pairs, f"the quick config needs two targets of one word order ({orders})"
    for task, _ in QUICK.tasks:
        for high, low in pairs:
            assert cells[(task, high, 0)]["mean"] > cells[(task, low, 0)]["mean"], \
                (task, high, low)


def test_the_summary_states_each_finding_per_task(demo):
    _, summary, _ = demo
    behaviours = {"few-shot beats zero-shot", "more shots, less spread",
                  "lower overlap, lower zero-shot"}
    for task, _ in QUICK.tasks:
        mine = {f["behaviour"]: f for f in summary["findings"] if f["task"] == task}
        assert set(mine) == behaviours
        assert all(isinstance(f["holds"], bool) and f["detail"] for f in mine.values())
        assert mine["lower overlap, lower zero-shot"]["holds"], mine


def test_the_strategy_stage_judges_every_strategy_against_random(demo):
    out, summary, _ = demo
    settings = QUICK.strategies
    judged = {row["strategy"]: row for row in summary["strategies"]["judged"]}
    assert set(judged) == set(settings.names) - {"random"}
    for row in judged.values():
        assert 0.0 <= row["p_beat"] <= 1.0 and row["ci"][0] <= row["diff"] <= row["ci"][1]
    runs = out / "strategies" / "runs" / settings.task / settings.language / f"k{settings.k}"
    assert sorted(p.name for p in runs.iterdir()) == sorted(f"full~{n}" for n in settings.names)
    assert all(len(list(p.glob("*.json"))) == settings.n_pools for p in runs.iterdir())
    assert (out / "report" / "strategies.md").is_file()


def test_a_second_run_reuses_everything_and_the_cli_prints_the_summary(demo, capsys):
    out, summary, _ = demo
    before = {p: p.stat().st_mtime_ns for p in out.glob("*runs/**/*.json")}
    before.update({p: p.stat().st_mtime_ns for p in (out / "strategies").rglob("runs/**/*.json")})
    assert run_app(["demo", "--out", str(out), "--config", str(out.parent / "quick-tested.yaml"),
                    "--workers", "0"]) == 0
    printed = capsys.readouterr()
    assert str(out / "report" / "report.md") in printed.out
    for task, _ in QUICK.tasks:
        assert task in printed.out
    assert "reusing" in printed.err and "0 run now" in printed.err
    after = {p: p.stat().st_mtime_ns for p in out.glob("*runs/**/*.json")}
    after.update({p: p.stat().st_mtime_ns for p in (out / "strategies").rglob("runs/**/*.json")})
    assert after == before
    assert "which shots to label" in printed.out
    again = json.loads((out / SUMMARY_FILE).read_text())
    assert again["cells"] == summary["cells"]


@pytest.mark.parametrize("raw, message", [
    ({"tasks": {"synth-pos": {}}, "colour": 1}, "unknown key(s): colour"),
    ({"tasks": {"panx": {}}}, "unknown synthetic task 'panx'"),
    ({"tasks": {"synth-pos": {"k": [0]}}}, "tasks.synth-pos.k must be > 0"),
    ({"tasks": {"synth-pos": {}}, "languages": ["de"]}, "unknown target language 'de'"),
    ({"tasks": {"synth-pos": {}}, "n_buckets": 1}, "at least 2"),
    ({"tasks": {"synth-pos": {}}, "adapt": {"lrs": "fast"}},
     "adapt.lrs must be a number, got 'fast'"),
    ({"tasks": {"synth-pos": {}}, "source": {"epoch": 3}}, "unknown key(s) in source: epoch"),
    ({}, "tasks must name"),
    ({"tasks": {"synth-pos": {}}, "strategies": {"task": "synth-pos", "language": "sov20",
                                                 "names": ["random", "entity-rich"]}},
     "strategy entity-rich ranks sentences by their entity"),
    ({"tasks": {"synth-ner": {}}, "strategies": {"task": "synth-ner", "language": "sov20",
                                                 "names": ["diverse"]}},
     "names must hold random and at least one other"),
])
def test_bad_configs_are_one_line_errors(raw, message):
    with pytest.raises(FsxltError, match=None) as err:
        parse_demo_config(raw, "demo.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_unknown_config_name_is_a_one_line_error(tmp_path):
    with pytest.raises(FsxltError, match="demo config not found"):
        load_demo_config(tmp_path / "nope.yaml")


def test_invalid_yaml_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ntasks: {synth-pos: {k: [1, 2}\n", encoding="utf-8")
    with pytest.raises(FsxltError) as err:
        load_demo_config(path)
    assert str(err.value).startswith(f"{path}:2: invalid YAML")
