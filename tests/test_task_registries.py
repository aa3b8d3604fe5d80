"""What a task YAML names picks the code: its sampler (``sampling.sampler``), its metric
(``metric``) and its benchmark (``benchmark: fewclue``), each from one registry."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from fsxlt.errors import FsxltError
from fsxlt.sampling import api
from fsxlt.tasks import METRICS, SAMPLERS, builtin_tasks, get_task, parse_task
from tests.train_fixtures import nli_data


def raw_config(task: str) -> dict:
    text = resources.files("fsxlt").joinpath("configs", f"{task}.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def test_every_sampler_a_yaml_may_name_draws_and_every_builtin_task_fits_its_sampler():
    assert set(api.SAMPLERS) == set(SAMPLERS)
    for spec in builtin_tasks().values():
        assert spec.kind in SAMPLERS[spec.sampling.sampler], spec.name


@pytest.mark.parametrize(("task", "sampler", "message"), [
    ("panx", "nway-kshot", "sampler nway-kshot draws classification buckets, not tagging "
                           "ones; use sampler: minimum-including"),
    ("chid", "nway-kshot", "not multiple_choice ones; use sampler: k-examples"),
    ("xnli", "minimum-including", "not classification ones; use sampler: nway-kshot or "
                                  "k-queries"),
])
def test_a_sampler_for_another_kind_is_a_one_line_error(task, sampler, message):
    raw = raw_config(task)
    with pytest.raises(FsxltError, match=message):
        parse_task(dict(raw, sampling=dict(raw["sampling"], sampler=sampler)), f"{task}.yaml")


def test_the_bucket_sampler_is_the_one_the_yaml_names(tmp_path, monkeypatch):
    """xnli names nway-kshot: sample_set calls that registry entry, and its buckets are what
    the entry drew."""
    from fsxlt.data import load_split
    from tests.train_fixtures import write_pairs

    calls = []
    original = api.SAMPLERS["nway-kshot"]

    def recording(*args):
        calls.append(args[0].name)
        return original(*args)

    monkeypatch.setitem(api.SAMPLERS, "nway-kshot", recording)
    split = load_split(get_task("xnli"), "de", "dev",
                       path=write_pairs(tmp_path / "dev-de.tsv", nli_data(30, seed=1)))
    bucket_set = api.sample_set("xnli", split, 2, n_buckets=3, seed=0)
    assert calls == ["xnli"] and bucket_set.sampler == "nway-kshot"
    drawn = original(get_task("xnli"), split, 2, 3, 0, "xnli/de K=2")
    assert [[ex.id for ex in b] for b in bucket_set.buckets] == \
        [[ex.id for ex in b] for b in drawn.buckets]


def test_every_metric_a_yaml_may_name_has_a_scorer():
    from fsxlt.metrics.scores import METRIC_SCORERS, compute_scores

    assert set(METRIC_SCORERS) == set(METRICS)
    gold, predicted = [["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]]
    precision = compute_scores(get_task("xglue-pos"), gold, predicted)
    f1 = compute_scores(get_task("panx"), gold, predicted)
    assert precision["metric"] == "seqeval_precision" and precision["score"] == 1.0
    assert f1["metric"] == "seqeval_f1" and f1["score"] == pytest.approx(2 / 3)


def test_fewclue_tasks_are_the_yamls_that_say_so(tmp_path):
    from fsxlt.sampling.fewclue import fewclue_tasks, import_fewclue

    assert fewclue_tasks() == ("bustm", "chid", "cluewsc", "csl", "csldcp", "eprstmt",
                               "iflytek", "ocnli", "tnews")
    (tmp_path / "src").mkdir()
    with pytest.raises(FsxltError, match="unknown FewCLUE task 'xnli'; valid: bustm, chid, "):
        import_fewclue(tmp_path / "src", tmp_path / "out", tasks=["xnli"])
