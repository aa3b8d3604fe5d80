"""A researcher's own shot-selection strategy is one class: defined here, registered the way
``pip install`` registers a plug-in (a ``*.dist-info`` with its ``entry_points.txt`` on
``sys.path``), and run through ``fsxlt select``, ``fsxlt buckets check``, a sweep, ``fsxlt
adapt`` and ``fsxlt report --strategies`` without touching anything in ``fsxlt/``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from fsxlt.cli import run_app
from fsxlt.sampling.strategies import BUILTIN, Pool, Strategy, discover, get_strategy
from fsxlt.tasks import get_task
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.train_fixtures import nli_data, write_pairs

NAME = "shortest-first"
REFERENCE = "tests.test_new_strategy:ShortestFirst"


class ShortestFirst(Strategy):
    """Label the shortest pairs: fewest words first (a model-free strategy)."""

    name = NAME
    summary = "fewest words first"
    kinds = ("classification",)
    options = {"order": "words of both texts, fewest first"}

    def preference(self, pool: Pool) -> np.ndarray:
        return -np.array([words(ex) for ex in pool.examples], dtype=float)


class Greedy(Strategy):
    """Breaks the guarantee on purpose: the whole pool as one bucket."""

    name = "greedy"

    def pick_classification(self, pool: Pool) -> list[int]:
        return list(range(pool.size))


class Tilde(ShortestFirst):
    name = "short~first"  # would break arm names (full~short~first)


def register(root: Path, monkeypatch, entries: dict[str, str]) -> None:
    """``entries`` (name -> module:Class) installed under ``fsxlt.strategies``."""
    dist = root / "site" / "fsxlt_my_strategies-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fsxlt-my-strategies\n"
                                   "Version: 0.1.0\n")
    lines = "".join(f"{name} = {ref}\n" for name, ref in entries.items())
    (dist / "entry_points.txt").write_text(f"[fsxlt.strategies]\n{lines}")
    monkeypatch.syspath_prepend(str(root / "site"))


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    register(tmp_path, monkeypatch, {NAME: REFERENCE, "greedy": "tests.test_new_strategy:Greedy",
                                     "broken": "fsxlt_no_such_module:Thing"})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("new-strategy"))


def words(example) -> int:
    return len(f"{example.text_a} {example.text_b}".split())


def select_args(data: Path, out: Path, *strategies: str) -> list[str]:
    args = ["select", "--task", "xnli", "--lang", "de", "--data-dir", str(data), "-k", "1",
            "--n-pools", "3", "--pool-size", "30", "--out", str(out)]
    for strategy in strategies:
        args += ["-s", strategy]
    return args


def test_discovery_lists_the_plugin_and_names_the_broken_one(plugin, capsys):
    found, broken = discover()
    assert found[NAME] is ShortestFirst and set(BUILTIN) <= set(found)
    assert list(broken) == ["broken"] and "\n" not in broken["broken"]
    assert "plug-in strategy broken (fsxlt_no_such_module:Thing): cannot import it " \
        "(ModuleNotFoundError" in broken["broken"]
    assert run_app(["strategies"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line and line[0] != " "}
    assert REFERENCE in lines[NAME] and "fewest words first" in lines[NAME]
    assert " model " in lines["diverse"] and " model " not in lines["random"]
    assert "plug-ins that failed to load" in out


def test_the_strategy_by_entry_point_by_reference_and_its_task_check(plugin):
    assert type(get_strategy(NAME)) is ShortestFirst
    assert type(get_strategy(REFERENCE)) is ShortestFirst
    with pytest.raises(Exception, match="strategy shortest-first selects for classification "
                                        "tasks, not tagging"):
        get_strategy(NAME, get_task("panx"))


def test_the_whole_pipeline_on_the_new_strategy(study, plugin, tmp_path, capsys):
    from fsxlt.data import load_split
    from fsxlt.sampling.check import check_store
    from fsxlt.sampling.select import candidate_pools
    from fsxlt.sampling.store import read_bucket, read_manifest

    data = tmp_path / "pools"
    write_pairs(data / "dev-de.tsv", nli_data(60, seed=7, source="dev-de"))
    buckets = tmp_path / "buckets"
    assert run_app(select_args(data, buckets, "random", NAME)) == 0
    directory = buckets / NAME / "xnli" / "de" / "k1"
    manifest = read_manifest(directory)
    assert manifest["strategy"]["name"] == NAME
    assert manifest["strategy"]["options"] == ShortestFirst.options
    split = load_split(get_task("xnli"), "de", "dev", path=data / "dev-de.tsv")
    pool = [split.examples[int(i)] for i in candidate_pools(60, 3, 30, 0, "xnli", "de")[0]]
    first = read_bucket(directory / manifest["buckets"][0]["file"]).examples
    assert sorted(ex.label for ex in first) == sorted(["entailment", "neutral", "contradiction"])
    for ex in first:  # the shortest pair of its label in pool 0
        assert words(ex) == min(words(other) for other in pool if other.label == ex.label)
    assert all(r.ok for r in check_store(buckets / NAME, data / "dev-de.tsv"))

    runs = tmp_path / "runs"
    for strategy in ("random", NAME):
        config = sweep_config(study, runs, buckets=str(buckets / strategy), n_buckets=3,
                              max_epochs=2, name=f"new-strategy-{strategy}")
        config["tasks"] = {"xnli": {"languages": ["de"], "k": [1]}}
        path = write_config(tmp_path / f"{strategy}.yaml", config)
        assert run_app(["sweep", str(path), "--workers", "0", "--device", "cpu"]) == 0
    arm = runs / "xnli" / "de" / "k1" / f"full~{NAME}"
    assert sorted(p.name for p in arm.glob("*.json")) == ["00.json", "01.json", "02.json"]
    assert json.loads((arm / "00.json").read_text())["bucket"]["strategy"] == NAME

    adapted = tmp_path / "adapted"
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                    str(directory / "01.json"), "--from", str(study["checkpoint"]),
                    "--data-dir", str(study["data"]), "--out", str(adapted), "--device", "cpu",
                    "--max-epochs", "2", "--lr", "0.01"]) == 0
    assert (adapted / "xnli" / "de" / "k1" / f"full~{NAME}" / "01.json").is_file()

    capsys.readouterr()
    assert run_app(["report", str(runs), "--strategies", "--bootstrap", "200"]) == 0
    assert f"| xnli | de | 1 | Full FT | {NAME} |" in capsys.readouterr().out


def test_a_strategy_that_breaks_the_guarantee_or_fails_to_load_is_one_line(plugin, tmp_path,
                                                                           capsys):
    data = tmp_path / "pools"
    write_pairs(data / "dev-de.tsv", nli_data(60, seed=7, source="dev-de"))
    cases = [("greedy", "strategy greedy broke the bucket guarantee: not exactly 1 examples"),
             ("broken", "plug-in strategy broken (fsxlt_no_such_module:Thing): cannot import"),
             ("tests.test_new_strategy:Nothing", "strategy tests.test_new_strategy:Nothing: "
                                                 "cannot import it (AttributeError"),
             ("tests.test_new_strategy:Tilde", "strategy 'short~first': a name is a letter")]
    for name, message in cases:
        code = run_app(select_args(data, tmp_path / "out", "random", name))
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()


def test_an_uninstalled_plugin_is_unknown():
    sys.modules.pop("fsxlt_no_such_module", None)
    with pytest.raises(Exception, match="unknown strategy 'shortest-first'; valid: random, "
                                        "diverse"):
        get_strategy(NAME)
