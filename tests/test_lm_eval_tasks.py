"""fsxlt's buckets as lm-eval tasks (issue 43, part 2), run by lm-eval itself: on every
bucket of an exported XNLI and PAWS-X set, lm-eval's own evaluation of a tiny causal LM
and ``fsxlt icl --preset lm-eval`` predict the same label for every test example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fsxlt.cli import run_app
from fsxlt.icl.lm_eval_tasks import export_lm_eval
from tests.icl_fixtures import make_causal_lm_dir
from tests.train_fixtures import nli_data, write_bucket_set, write_pairs

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is an optional extra ([lmeval])")

NLI = ["entailment", "neutral", "contradiction"]
WORDS = ("richtig", "auch", "ja", "nein", "right", "also", "yes", "no", ",", "?")


def paws_data(n: int, seed: int):
    from fsxlt.data import TextExample

    return [TextExample(f"p:{seed}:{i}", e.text_a, e.text_b, str(i % 2))
            for i, e in enumerate(nli_data(n, seed))]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("lmeval")
    xnli, paws = nli_data(12, 5), paws_data(8, 6)
    write_bucket_set(root / "buckets", "xnli", "de", 1, [xnli[0:3], xnli[3:6]], NLI)
    write_bucket_set(root / "buckets", "pawsx", "de", 2, [paws[0:4], paws[4:8]], ["0", "1"])
    tests = {"xnli": write_pairs(root / "test-xnli.tsv", nli_data(6, 9)),
             "pawsx": write_pairs(root / "test-pawsx.tsv", paws_data(6, 8))}
    exported = export_lm_eval(root / "buckets", root / "tasks", lambda task, lang: tests[task])
    return {"root": root, "tests": tests, "exported": exported,
            "model": make_causal_lm_dir(root / "lm", "llama", extra_words=WORDS)}


def test_the_export_writes_one_task_per_bucket_on_lm_eval_s_own_task(study):
    groups = {one.group: one for one in study["exported"]}
    assert set(groups) == {"fsxlt_xnli_de_k1", "fsxlt_pawsx_de_k2"}
    one = groups["fsxlt_xnli_de_k1"]
    assert one.tasks == ["fsxlt_xnli_de_k1_b00", "fsxlt_xnli_de_k1_b01"]
    config = yaml.safe_load((one.directory / "fsxlt_xnli_de_k1_b01.yaml").read_text())
    assert config["include"].endswith("tasks/xnli/xnli_de.yaml")
    assert config["num_fewshot"] == 3 and config["fewshot_config"] == {"sampler": "first_n"}
    manifest = json.loads((study["root"] / "buckets/xnli/de/k1/manifest.json").read_text())
    assert config["metadata"]["bucket"]["sha256"] == manifest["buckets"][1]["sha256"]


def _lm_eval_predictions(study: dict, group: str) -> dict[str, dict[str, int]]:
    """lm-eval's own run of the group: per task, each test document's predicted label."""
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    # the tiny model's WordPiece tokenizer has no BOS or EOS: lm-eval is told to add no
    # special tokens (fsxlt adds none where the tokenizer has no BOS) and given the one
    # prefix token it asks for (used only before an empty context, which these have not)
    model = HFLM(pretrained=str(study["model"]), device="cpu", batch_size=4,
                 add_bos_token=False, prefix_token_id=2)
    results = simple_evaluate(model=model, tasks=[group], log_samples=True,
                              task_manager=TaskManager(include_path=str(study["root"] /
                                                                        "tasks")))
    study.setdefault("arguments", {}).update(
        {task: {s["doc"]["id"]: [tuple(a)[:2] for a in s["arguments"]]  # (context, option)
                for s in samples} for task, samples in results["samples"].items()})
    return {task: {s["doc"]["id"]: [float(r[0]) for r in s["filtered_resps"]]
                   for s in samples} for task, samples in results["samples"].items()}


def _fsxlt_logliks(study: dict, task: str, k: int) -> dict[str, dict[str, list[float]]]:
    """fsxlt's own log-likelihood of every option (the lm-eval preset's prompt, the
    demonstrations in fsxlt icl's order), per bucket and test example."""
    from fsxlt.data import read_examples
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.icl.presets import render_for
    from fsxlt.icl.run import IclSettings, demonstration_order
    from fsxlt.icl.scoring import option_scores, tokenize_prompt
    from fsxlt.sampling.store import read_set
    from fsxlt.tasks import get_task
    from fsxlt.tasks.prompts import PromptSettings

    spec, lm = get_task(task), load_causal_lm(str(study["model"]))
    test = read_examples(study["tests"][task], spec, language="de", split="test")
    _manifest, buckets, _ = read_set(study["root"] / "buckets" / task / "de" / f"k{k}")
    out = {}
    for bucket in buckets:
        demos = demonstration_order(list(bucket.examples),
                                    IclSettings(model="", preset="lm-eval"), bucket.index)
        text = render_for(spec, PromptSettings(), "lm-eval", "de", demos, test)
        scores = option_scores(lm.model, tokenize_prompt(lm.tokenizer, text, "b"), "b")
        out[f"fsxlt_{task}_de_k{k}_b{bucket.index:02d}"] = {
            ex.id: row for ex, row in zip(test, scores.loglik, strict=True)}
    return out


def _fsxlt_predictions(study: dict, task: str, k: int, labels: list[str],
                       ) -> dict[str, dict[str, int]]:
    """``fsxlt icl --preset lm-eval`` on every bucket: each test example's label's place."""
    out_dir = study["root"] / f"runs-{task}"
    assert run_app(["icl", "--task", task, "--lang", "de", "--model", str(study["model"]),
                    "--bucket", str(study["root"] / "buckets" / task / "de" / f"k{k}"),
                    "--test", str(study["tests"][task]), "--preset", "lm-eval",
                    "--save-predictions", "--save-prompts", "--threads", "1",
                    "--out", str(out_dir)]) == 0
    found = {}
    for path in sorted(out_dir.rglob("*.predictions.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()][1:]  # header
        name = f"fsxlt_{task}_de_k{k}_b{path.name.split('.')[0]}"
        found[name] = {row["id"]: labels.index(row["predicted"]) for row in rows}
        study.setdefault("files", {})[name] = {row["id"]: row for row in rows}
    return found


@pytest.mark.parametrize("task, k, labels", [("xnli", 1, NLI), ("pawsx", 2, ["0", "1"])])
def test_lm_eval_and_fsxlt_score_and_predict_every_test_example_alike(study, task, k,
                                                                     labels):
    """Every option's log-likelihood is the same number in lm-eval's run and in fsxlt's
    (to float32 rounding), so every prediction is the same too; and fsxlt icl's own run
    predicts as lm-eval does on every bucket."""
    theirs = _lm_eval_predictions(study, f"fsxlt_{task}_de_k{k}")
    logliks = _fsxlt_logliks(study, task, k)
    predicted = _fsxlt_predictions(study, task, k, labels)
    names = {f"fsxlt_{task}_de_k{k}_b00", f"fsxlt_{task}_de_k{k}_b01"}
    assert set(theirs) == set(logliks) == set(predicted) == names
    for name in names:
        assert set(theirs[name]) == set(logliks[name]) == set(predicted[name])
        assert len(theirs[name]) == 6
        for doc, options in theirs[name].items():
            assert options == pytest.approx(logliks[name][doc], abs=1e-3)
            assert predicted[name][doc] == max(range(len(options)), key=options.__getitem__)
            # issue 51, item 10: the predictions file says as much as lm-eval's samples
            row = study["files"][name][doc]
            assert sorted(row["loglik"]) == sorted(labels)
            assert [row["loglik"][label] for label in labels] == pytest.approx(options,
                                                                               abs=1e-3)
            prompt = row["prompt"]
            assert [prompt["prefix"] + prompt["options"][label] for label in labels] == \
                [context + rest for context, rest in study["arguments"][name][doc]]
    # the two buckets' demonstrations give other numbers: the buckets do enter the prompt
    first, second = (theirs[name] for name in sorted(names))
    assert any(first[doc] != pytest.approx(second[doc], abs=1e-3) for doc in first)


def test_the_command_line_exports_from_a_data_dir_and_refuses_in_one_line(study, tmp_path,
                                                                          capsys):
    for task in ("xnli", "pawsx"):
        (tmp_path / "data" / task).mkdir(parents=True)
        (tmp_path / "data" / task / "test-de.tsv").write_bytes(study["tests"][task].read_bytes())
    data = tmp_path / "data" / "xnli"
    base = ["buckets", "export", str(study["root"] / "buckets" / "xnli"), str(tmp_path / "t"),
            "--format", "lm-eval"]
    for extra, says in ((["--data-dir", str(data)], "needs --preset lm-eval"),
                        (["--preset", "lm-eval"], "needs --data-dir"),
                        (["--preset", "lm-eval", "--data-dir", str(tmp_path)],
                         "no set to export as lm-eval tasks; left out xnli/de k1 (no xnli "
                         "test file for de)")):
        capsys.readouterr()
        assert run_app([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "t").exists()
    assert run_app([*base, "--preset", "lm-eval", "--data-dir", str(data)]) == 0
    assert "2 lm-eval tasks in 1 groups" in capsys.readouterr().out
    assert (tmp_path / "t" / "xnli-de-k1" / "fsxlt_xnli_de_k1.yaml").is_file()
    capsys.readouterr()  # both tasks of a store, each from its own folder
    assert run_app(["buckets", "export", str(study["root"] / "buckets"), str(tmp_path / "u"),
                    "--format", "lm-eval", "--preset", "lm-eval", "--data-dir",
                    str(tmp_path / "data" / "{task}")]) == 0
    assert "4 lm-eval tasks in 2 groups" in capsys.readouterr().out


def test_a_task_lm_eval_s_preset_does_not_cover_is_refused(tmp_path):
    from fsxlt.errors import FsxltError
    from fsxlt.tasks import get_task
    from tests.train_fixtures import ner_data

    write_bucket_set(tmp_path / "b", "panx", "de", 1, [ner_data(3, seed=1)],
                     list(get_task("panx").labels))
    with pytest.raises(FsxltError, match="left out panx .lm-eval's preset covers xnli"):
        export_lm_eval(tmp_path / "b", tmp_path / "t", lambda task, lang: tmp_path)
    assert not (tmp_path / "t").exists()


def test_a_store_of_many_tasks_exports_what_it_can_and_names_the_rest(study, tmp_path,
                                                                      capsys):
    """Issue 51, item 4: README's store (PAN-X beside XNLI, a language without a test file)
    exports its XNLI sets and says what it left out."""
    import shutil

    from fsxlt.tasks import get_task
    from tests.train_fixtures import ner_data

    store = tmp_path / "b"
    shutil.copytree(study["root"] / "buckets", store)
    write_bucket_set(store, "panx", "de", 1, [ner_data(3, seed=1)], list(get_task("panx").labels))
    write_bucket_set(store, "xnli", "fr", 1, [nli_data(3, seed=2)], NLI)
    (tmp_path / "data" / "xnli").mkdir(parents=True)
    (tmp_path / "data" / "xnli" / "test-de.tsv").write_bytes(study["tests"]["xnli"].read_bytes())
    capsys.readouterr()
    assert run_app(["buckets", "export", str(store), str(tmp_path / "t"), "--format",
                    "lm-eval", "--preset", "lm-eval", "--data-dir",
                    str(tmp_path / "data" / "{task}")]) == 0
    out = capsys.readouterr().out
    assert "left out: panx (lm-eval's preset covers xnli and pawsx); pawsx/de k2 (no pawsx " \
        "test file for de); xnli/fr k1 (no xnli test file for fr)" in out
    assert "2 lm-eval tasks in 1 groups" in out
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["xnli-de-k1"]


# --------------------------------------------------------------------------- results back

@pytest.fixture(scope="module")
def results(study) -> Path:
    """lm-eval's own command line on the exported XNLI set: results and per-sample files."""
    import os
    import subprocess
    import sys

    out = study["root"] / "results"
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
         f"pretrained={study['model']},add_bos_token=False,prefix_token_id=2",
         "--include_path", str(study["root"] / "tasks"), "--tasks", "fsxlt_xnli_de_k1",
         "--log_samples", "--output_path", str(out), "--device", "cpu"],
        capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_lm_eval_results_become_records_that_the_report_pairs(study, results, tmp_path,
                                                              capsys):
    runs, buckets = tmp_path / "runs", study["root"] / "buckets"
    args = ["import", "lm-eval", str(results), "--runs", str(runs), "--buckets", str(buckets)]
    assert run_app(args) == 0
    from fsxlt.identity import fingerprint

    arm = f"lm-eval-lm-{fingerprint(study['model'])[7:15]}"
    data = json.loads(next(results.rglob("results_*.json")).read_text())
    for index in (0, 1):
        record = json.loads((runs / f"xnli/de/k1/{arm}/{index:02d}.json").read_text())
        task = f"fsxlt_xnli_de_k1_b{index:02d}"
        assert record["run"]["arm"] == arm and record["test"]["n"] == 6
        assert record["test_score"] == pytest.approx(data["results"][task]["acc,none"])
        assert record["run"]["identity"]["lm_eval"] == data["lm_eval_version"]
        assert (runs / f"xnli/de/k1/{arm}/{index:02d}.predictions.jsonl").is_file()
    capsys.readouterr()
    assert run_app(args) == 0
    out = capsys.readouterr().out  # issue 51, item 13: counts what it imported
    assert "already done" in out and "0 lm-eval runs imported" in out and "2 already done" in out
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(study["model"]),
                    "--bucket", str(buckets / "xnli/de/k1"), "--test",
                    str(study["tests"]["xnli"]), "--preset", "lm-eval", "--threads", "1",
                    "--out", str(runs)]) == 0
    capsys.readouterr()
    assert run_app(["report", str(runs), "--compare", arm, "icl-lmeval"]) == 0
    report = capsys.readouterr().out
    assert f"{arm} against icl-lmeval" in report and "| xnli | de | 1 | 2 | +0.00" in report


def _copy(results: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "res"
    shutil.copytree(results, copy)
    return copy


@pytest.mark.parametrize("damage, says", [
    ("other-task", "results of task xnli_de, which fsxlt buckets export did not write"),
    ("hash", "matches no bucket of"),
    ("samples", "the per-sample file of fsxlt_xnli_de_k1_b01 is missing"),
])
def test_bad_lm_eval_results_are_one_line_and_write_nothing(study, results, tmp_path,
                                                            capsys, damage, says):
    copy = _copy(results, tmp_path)
    path = next(copy.rglob("results_*.json"))
    data = json.loads(path.read_text())
    if damage == "other-task":
        data["configs"]["xnli_de"] = {"task": "xnli_de"}
    elif damage == "hash":
        data["configs"]["fsxlt_xnli_de_k1_b00"]["metadata"]["bucket"]["sha256"] = "0" * 64
    else:
        next(copy.rglob("samples_fsxlt_xnli_de_k1_b01_*.jsonl")).unlink()
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert run_app(["import", "lm-eval", str(copy), "--runs", str(tmp_path / "runs"),
                    "--buckets", str(study["root"] / "buckets")]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- results as input

def _import(copy: Path, study: dict, tmp_path: Path, *extra: str) -> int:
    return run_app(["import", "lm-eval", str(copy), "--runs", str(tmp_path / "runs"),
                    "--buckets", str(study["root"] / "buckets"), *extra])


def _refused(copy: Path, study: dict, tmp_path: Path, capsys, says: str, *extra: str) -> None:
    capsys.readouterr()
    assert _import(copy, study, tmp_path, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "runs").exists()


def _with_test_file(study: dict, tmp_path: Path, edit) -> Path:
    """The results, with every task's test file replaced by an edited copy of it."""
    copy = _copy(study["root"] / "results", tmp_path)
    lines = study["tests"]["xnli"].read_text(encoding="utf-8").splitlines(keepends=True)
    edited = tmp_path / "edited" / study["tests"]["xnli"].name  # its ids name the file
    edited.parent.mkdir()
    edited.write_text("".join(edit(lines)), encoding="utf-8")
    path = next(copy.rglob("results_*.json"))
    data = json.loads(path.read_text())
    for config in data["configs"].values():
        if "bucket" in (config.get("metadata") or {}):
            config["metadata"]["bucket"]["test"] = str(edited)
    path.write_text(json.dumps(data))
    return copy


def _relabel(lines: list[str]) -> list[str]:
    cells = lines[0].rstrip("\n").split("\t")
    cells[-1] = next(label for label in NLI if label != cells[-1])
    return ["\t".join(cells) + "\n", *lines[1:]]


def _reword(lines: list[str]) -> list[str]:
    cells = lines[1].rstrip("\n").split("\t")
    cells[0] = "an edited premise"
    return [lines[0], "\t".join(cells) + "\n", *lines[2:]]


@pytest.mark.parametrize("edit, says", [
    (_relabel, "with gold label"),
    (_reword, "with another text than"),
    (lambda lines: lines[::-1], "the test file is not the one lm-eval ran"),
])
def test_samples_are_matched_to_the_test_file_by_content(study, results, tmp_path, capsys,
                                                         edit, says):
    """Issue 50, item 7: a gold label edited after lm-eval ran, an edited sentence, a
    reversed test file (its line-number ids now name other examples) are refused."""
    _refused(_with_test_file(study, tmp_path, edit), study, tmp_path, capsys, says)


def test_another_bucket_s_samples_are_refused(study, results, tmp_path, capsys):
    """Issue 50, item 8: bucket 00's samples filed as bucket 01's: the prompts do not hold
    bucket 01's demonstrations."""
    copy = _copy(results, tmp_path)
    first = next(copy.rglob("samples_fsxlt_xnli_de_k1_b00_*.jsonl"))
    second = next(copy.rglob("samples_fsxlt_xnli_de_k1_b01_*.jsonl"))
    second.write_bytes(first.read_bytes())
    _refused(copy, study, tmp_path, capsys, "do not hold bucket 1's demonstrations")


@pytest.mark.parametrize("where", ["results", "samples"])
def test_an_acc_that_disagrees_with_the_samples_is_refused(study, results, tmp_path, capsys,
                                                           where):
    """Issue 50, item 9: lm-eval's acc edited, or a per-sample acc edited: refused, naming
    both numbers."""
    copy = _copy(results, tmp_path)
    if where == "results":
        path = next(copy.rglob("results_*.json"))
        data = json.loads(path.read_text())
        data["results"]["fsxlt_xnli_de_k1_b00"]["acc,none"] = 0.5
        path.write_text(json.dumps(data))
    else:
        path = next(copy.rglob("samples_fsxlt_xnli_de_k1_b00_*.jsonl"))
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        rows[0]["acc"] = 1.0 - rows[0]["acc"]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        _refused(copy, study, tmp_path, capsys, "of fsxlt_xnli_de_k1_b00 stores acc ")
        return
    _refused(copy, study, tmp_path, capsys, "lm-eval's acc of fsxlt_xnli_de_k1_b00 is ")


def test_two_models_in_folders_of_one_name_are_two_arms(study, results, tmp_path, capsys):
    """Issue 50, item 10: the model is its files' hash, and the default arm carries it: the
    same results imported for another model folder named ``lm`` (``--model``) is another
    arm beside the first, and --arm names one."""
    import shutil

    from fsxlt.identity import fingerprint

    other = tmp_path / "b" / "lm"
    shutil.copytree(study["model"], other)
    (other / "config.json").write_text((other / "config.json").read_text() + "\n")
    assert _import(results, study, tmp_path) == 0
    assert _import(results, study, tmp_path, "--model", str(other)) == 0
    arms = sorted(p.name for p in (tmp_path / "runs/xnli/de/k1").iterdir())
    assert arms == sorted([f"lm-eval-lm-{fingerprint(study['model'])[7:15]}",
                           f"lm-eval-lm-{fingerprint(other)[7:15]}"])
    identities = {json.loads((tmp_path / f"runs/xnli/de/k1/{arm}/00.json").read_text())
                  ["run"]["identity"]["model"] for arm in arms}
    assert identities == {fingerprint(study["model"]), fingerprint(other)}
    assert _import(results, study, tmp_path, "--arm", "lm-eval-mine") == 0
    assert (tmp_path / "runs/xnli/de/k1/lm-eval-mine/01.json").is_file()
    capsys.readouterr()
    assert _import(results, study, tmp_path, "--arm", "../x") == 2
    assert "arm name starts with lm-eval" in capsys.readouterr().err
    assert _import(results, study, tmp_path, "--model", str(tmp_path / "nowhere")) == 2


def test_an_export_with_a_relative_data_dir_imports_from_anywhere(study, tmp_path,
                                                                  monkeypatch):
    """Issue 50, item 11: the test file's path in each task's metadata is absolute."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test-de.tsv").write_bytes(study["tests"]["xnli"].read_bytes())
    monkeypatch.chdir(tmp_path)
    assert run_app(["buckets", "export", str(study["root"] / "buckets" / "xnli"), "t",
                    "--format", "lm-eval", "--preset", "lm-eval", "--data-dir", "data"]) == 0
    config = yaml.safe_load((tmp_path / "t/xnli-de-k1/fsxlt_xnli_de_k1_b00.yaml").read_text())
    assert config["metadata"]["bucket"]["test"] == str((tmp_path / "data/test-de.tsv").resolve())
    assert config["metadata"]["bucket"]["seed"] == 0


@pytest.mark.parametrize("metric", ["acc", "acc_norm"])
def test_each_sample_s_metrics_follow_from_its_own_log_likelihoods(study, results, tmp_path,
                                                                   capsys, metric):
    """Issue 61, item 4: log-likelihoods edited so that one right sample turns wrong and one
    wrong sample right keep every average lm-eval reports; the samples whose stored metric
    no longer follows from their log-likelihoods are refused by name. lm-eval's own
    samples (the fixture) pass the same check (the import test above)."""
    copy = _copy(results, tmp_path)
    path = next(copy.rglob("samples_fsxlt_xnli_de_k1_b00_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    right = next(r for r in rows if r["acc"] == 1.0)
    wrong = next(r for r in rows if r["acc"] == 0.0)
    for row, make_right in ((right, False), (wrong, True)):
        gold = row["doc"]["label"]
        pick = gold if make_right else (gold + 1) % 3
        row["filtered_resps"] = [[-1.0 if i == pick else -500.0, False] for i in range(3)]
        row["resps"] = [[list(resp)] for resp in row["filtered_resps"]]
        if metric == "acc_norm":  # acc follows; the stored acc_norm no longer does
            row["acc"] = 1.0 if make_right else 0.0
            row["acc_norm"] = 0.0 if make_right else 1.0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = min((right, wrong), key=rows.index)
    _refused(copy, study, tmp_path, capsys,
             f"sample {first['doc_id']} ({first['doc']['id']}) of fsxlt_xnli_de_k1_b00 "
             f"stores {metric} ")


def test_an_icl_arm_s_eee_records_are_every_eval_ever_s_lm_eval_converter_s(study, results,
                                                                           tmp_path):
    """Issue 75: the same model and prompts give the same Every Eval Ever records whether
    fsxlt icl ran them (``runs export --format eee``) or lm-eval did (every-eval-ever
    0.3.0's own lm-eval converter, run here): each bucket's result (name, score, metric
    config) and each sample (input, choices, reference, output, score, hash), plus
    fsxlt's bucket fields. What differs by nature: the ids (a converter's evaluation id is
    its task and time; fsxlt's names the cell and arm), a local model's id (the converter
    takes the path lm-eval was given, fsxlt the folder by content) and ``sample_id``
    beside the bucket in fsxlt's metadata."""
    from tests.eee_package import eee_root, validate_tree

    eee_root()
    from every_eval_ever.converters.lm_eval.adapter import LMEvalAdapter
    from every_eval_ever.converters.lm_eval.instance_level_adapter import (
        LMEvalInstanceLevelAdapter,
    )

    runs, export = tmp_path / "runs", tmp_path / "eee"
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(study["model"]),
                    "--bucket", str(study["root"] / "buckets/xnli/de/k1"), "--test",
                    str(study["tests"]["xnli"]), "--preset", "lm-eval", "--save-predictions",
                    "--save-prompts", "--threads", "1", "--out", str(runs)]) == 0
    assert run_app(["runs", "export", str(runs), str(export), "--format", "eee"]) == 0
    assert validate_tree(export) == []
    ours = json.loads(next((export / "data").rglob("*.json")).read_text())
    samples = next((export / "data").rglob("*_samples.jsonl"))
    our_rows = [json.loads(line) for line in samples.read_text().splitlines()]
    results_file = next(results.rglob("results_*.json"))
    logs = LMEvalAdapter().transform_from_file(results_file, {
        "source_organization_name": "x", "evaluator_relationship": "third_party"})
    theirs = {log.evaluation_results[0].evaluation_name: log.model_dump(mode="json")
              for log in logs}
    # lm-eval's group is fsxlt's cell: the mean over the buckets (of equal test sets)
    group = theirs.pop("fsxlt_xnli_de_k1")["evaluation_results"]
    assert ours["evaluation_results"][0]["score_details"]["score"] == pytest.approx(
        next(r for r in group if r["metric_config"]["metric_name"] == "acc")
        ["score_details"]["score"], abs=1e-12)
    assert set(theirs) == {"fsxlt_xnli_de_k1_b00", "fsxlt_xnli_de_k1_b01"}
    buckets = {result["evaluation_name"]: result for result in ours["evaluation_results"][1:]}
    assert set(buckets) == set(theirs)
    compared = ("metric_id", "metric_kind", "metric_unit", "lower_is_better", "score_type",
                "min_score", "max_score", "additional_details")
    for name, log in theirs.items():
        (result,) = [r for r in log["evaluation_results"] if r["metric_config"]["metric_name"]
                     == "acc"]
        mine = buckets[name]
        assert mine["score_details"]["score"] == pytest.approx(
            result["score_details"]["score"], abs=1e-12)
        for key in compared:
            assert mine["metric_config"][key] == result["metric_config"][key], key
        assert log["model_info"]["inference_engine"]["name"] == \
            ours["model_info"]["inference_engine"]["name"] == "transformers"
        (sample_file,) = results_file.parent.glob(f"samples_{name}_*.jsonl")
        rows = LMEvalInstanceLevelAdapter().transform_samples(
            sample_file, log["evaluation_id"], log["model_info"]["id"], name)
        their_rows = {row.sample_id: row.model_dump(mode="json") for row in rows
                      if row.evaluation_result_id == "acc"}
        mine_rows = {row["sample_id"]: row for row in our_rows
                     if row["evaluation_name"] == name}
        assert set(their_rows) == set(mine_rows) and len(mine_rows) == 6
        for sample_id, row in mine_rows.items():
            other = their_rows[sample_id]
            for key in ("input", "interaction_type", "sample_hash", "output",
                        "answer_attribution", "evaluation", "evaluation_name"):
                assert row[key] == _without_nulls(other[key]), (name, sample_id, key)
            assert row["metadata"]["fsxlt_bucket_sha256"] == \
                mine["score_details"]["details"]["fsxlt_bucket_sha256"]


def _without_nulls(value):
    """A pydantic dump without the optional fields it writes as null (fsxlt leaves them
    out; the schema reads both alike)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
