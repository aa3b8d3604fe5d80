"""The runs directory's write rule: records are written once, by adapt and sweep alike.

Each test drives the command line (``fsxlt.cli.run_app``) over a tiny study
(tests.sweep_fixtures): a finished record is never replaced without
``--replace``, the same settings find the finished record, the arm comes
from the record's facts, a bucket store and a runs directory stay apart, and
mixed fsxlt versions are said. The last test is the property: any sequence of
``sample``, ``adapt``, ``sweep`` and ``report`` over the same two directories
never removes or changes a file that was there, unless told to replace.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsxlt import __version__
from fsxlt.cli import run_app
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.train_fixtures import NLI_LABELS, nli_data, write_pairs


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    study = build_study(tmp_path_factory.mktemp("study"))
    write_pairs(study["data"] / "dev-de.tsv", nli_data(30, seed=9, source="dev-de"))
    return study


def files(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (but the lock, rewritten by every writer) with its bytes."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".fsxlt-writer.lock"}


def adapt(study, out: Path, *extra: str, bucket: Path | None = None,
          start: Path | None = None, lr: str = "1e-2", epochs: str = "3") -> list[str]:
    bucket = bucket or study["buckets"] / "xnli/de/k1/00.json"
    return ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
            "--from", str(start or study["checkpoint"]), "--data-dir", str(study["data"]),
            "--lr", lr, "--max-epochs", epochs, "--patience", "2", "--device", "cpu",
            "--out", str(out), *extra]


def swept(study, tmp_path: Path) -> tuple[list[str], Path]:
    """A finished sweep of German K=1 into ``tmp_path/runs``: its argv and the runs dir."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    argv = ["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]
    assert run_app(argv) == 0
    return argv, runs


def one_line(status: int, err: str, says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert says in lines[0], err


def test_adapt_is_write_once(study, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    record = runs / "xnli/de/k1/full/00.json"
    saved = json.loads(record.read_text())
    assert saved["status"] == "ok" and saved["run"]["writer"] == "fsxlt adapt"
    assert saved["run"]["arm"] == "full" and saved["run"]["fsxlt_version"]
    before = files(runs)
    capsys.readouterr()
    assert run_app(adapt(study, runs)) == 0
    assert "already done with these settings" in capsys.readouterr().out
    assert files(runs) == before
    one_line(run_app(adapt(study, runs, lr="2e-2")), capsys.readouterr().err,
             "(lrs differ), written by fsxlt adapt; pass --replace")
    assert files(runs) == before
    assert run_app(adapt(study, runs, "--replace", lr="2e-2")) == 0
    assert f"replacing {record} (lrs differ)" in capsys.readouterr().err
    assert json.loads(record.read_text())["lrs"] == [2e-2]


def test_a_sweep_finds_adapts_records_and_never_overwrites_them(study, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    adapted = (runs / "xnli/de/k1/full/00.json").read_bytes()
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    argv = ["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]
    capsys.readouterr()
    assert run_app(argv) == 0
    assert "4 runs completed, 0 failed, 1 already done" in capsys.readouterr().out
    assert (runs / "xnli/de/k1/full/00.json").read_bytes() == adapted
    before = files(runs)
    other = write_config(tmp_path / "other.yaml", sweep_config(study, runs, lrs=[2e-2]))
    one_line(run_app(["sweep", str(other), "--workers", "0", "--lang", "de", "--k", "1"]),
             capsys.readouterr().err, "(and 4 more): a finished record of other settings "
             "(lrs differ), written by fsxlt adapt")
    assert files(runs) == before


def test_an_old_adapt_record_counts_as_finished_and_is_not_overwritten(study, tmp_path,
                                                                       capsys):
    from fsxlt.report.records import load_records

    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    path = runs / "xnli/de/k1/full/00.json"
    old = json.loads(path.read_text())
    del old["status"], old["run"]  # as fsxlt adapt wrote records before this version
    path.write_text(json.dumps(old))
    assert len(load_records(runs).scores) == 1
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    capsys.readouterr()
    one_line(run_app(["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]),
             capsys.readouterr().err, "predates recorded identities) differ), written by "
             "fsxlt adapt; pass --replace")
    assert json.loads(path.read_text()) == old


@pytest.mark.parametrize("content, says", [
    ({"format": "fsxlt-adapt-run/2", "status": "ok", "test_score": 0.5,
      "run": {"fsxlt_version": "0.9.0"}},
     "a record of format fsxlt-adapt-run/2 written by fsxlt 0.9.0, which this fsxlt"),
    ({"format": "fsxlt-adapt-run/2", "status": "running"},
     "a record of format fsxlt-adapt-run/2, which this fsxlt"),
    ({"notes": "my own file"}, "a JSON object with no record format, which this fsxlt"),
])
def test_a_record_of_another_format_is_not_overwritten(study, tmp_path, capsys, content,
                                                       says):
    """Finished means finished in any version (issue 31, mechanism 2): fsxlt 0.2.0 took
    these for corrupt records and reran and overwrote them without a word."""
    argv, runs = swept(study, tmp_path)
    path = runs / "xnli/de/k1/full/02.json"
    path.write_text(json.dumps(content))
    before = files(runs)
    capsys.readouterr()
    one_line(run_app(argv), capsys.readouterr().err, f"{path}: {says}")
    one_line(run_app(adapt(study, runs, bucket=study["buckets"] / "xnli/de/k1/02.json")),
             capsys.readouterr().err, f"{path}: {says}")
    assert files(runs) == before
    assert run_app([*argv, "--replace"]) == 0
    assert f"replacing {path} (format differ)" in capsys.readouterr().err
    assert json.loads(path.read_text())["format"] == "fsxlt-adapt-run/1"


def test_the_no_source_arm_is_its_own(study, tmp_path, capsys):
    from fsxlt.report.records import load_records

    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    assert run_app(adapt(study, runs, start=study["encoder"])) == 0
    plain = json.loads((runs / "xnli/de/k1/full-nosource/00.json").read_text())
    assert plain["model"]["source_training"] is False
    assert json.loads((runs / "xnli/de/k1/full/00.json").read_text())["model"][
        "source_training"] is True
    assert sorted(load_records(runs).scores["arm"]) == ["full", "full-nosource"]


def test_adapt_refuses_a_set_file_that_changed_since_its_manifest(study, tmp_path, capsys):
    buckets = tmp_path / "buckets"
    shutil.copytree(study["buckets"], buckets)
    remaining = buckets / "xnli/de/k1/dev-remaining.jsonl"
    remaining.write_text("".join(remaining.read_text().splitlines(keepends=True)[:2]))
    one_line(run_app(adapt(study, tmp_path / "runs", bucket=buckets / "xnli/de/k1")),
             capsys.readouterr().err, "dev-remaining.jsonl: differs from the hash in its "
             "manifest")
    from fsxlt.sampling.store import BucketSet, write_sets

    with_test = BucketSet(task="xnli", language="de", k=1, sampler="test", seed=0,
                          split="train", source_file="toy", source_sha256=None,
                          labels=list(NLI_LABELS), buckets=[nli_data(3, seed=2)],
                          devs=[nli_data(6, seed=3)], test=nli_data(9, seed=4))
    directory = write_sets(tmp_path / "own", [with_test])[0].path
    test = directory / "test.jsonl"
    test.write_text("".join(test.read_text().splitlines(keepends=True)[:3]))
    argv = ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(directory),
            "--from", str(study["checkpoint"]), "--out", str(tmp_path / "runs2"),
            "--device", "cpu"]
    one_line(run_app(argv), capsys.readouterr().err,
             "test.jsonl: differs from the hash in its manifest")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "runs2").exists()


@pytest.mark.parametrize("where", ["same", "inside", "around"])
def test_a_sweep_keeps_records_and_buckets_apart(study, tmp_path, capsys, where):
    buckets = tmp_path / "store"
    shutil.copytree(study["buckets"], buckets)
    out = {"same": buckets, "inside": buckets / "runs", "around": tmp_path}[where]
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, out, buckets=str(buckets)))
    before = files(tmp_path)
    one_line(run_app(["sweep", str(config), "--workers", "0"]), capsys.readouterr().err,
             {"same": "is", "inside": "lies inside", "around": "holds"}[where]
             + " the bucket store")
    assert files(tmp_path) == before


def test_adapt_refuses_a_bucket_store_as_its_runs_directory(study, tmp_path, capsys):
    buckets = tmp_path / "store"
    shutil.copytree(study["buckets"], buckets)
    before = files(buckets)
    one_line(run_app(adapt(study, buckets, bucket=buckets / "xnli/de/k1/00.json")),
             capsys.readouterr().err, "--out is a bucket store")
    (buckets / ".fsxlt-directory").unlink()  # a store written before stores were marked
    before = files(buckets)
    one_line(run_app(adapt(study, buckets, bucket=buckets / "xnli/de/k1/00.json")),
             capsys.readouterr().err, "holds bucket sets")
    assert files(buckets) == before


def test_mixed_versions_are_said(study, tmp_path, capsys):
    argv, runs = swept(study, tmp_path)
    path = runs / "xnli/de/k1/full/01.json"
    record = json.loads(path.read_text())
    record["run"]["fsxlt_version"] = "0.1.0"
    path.write_text(json.dumps(record))
    capsys.readouterr()
    assert run_app(argv) == 0
    err = capsys.readouterr().err
    assert f"5 finished records of this sweep were written by fsxlt 0.1.0, {__version__}" in err
    assert run_app(["report", str(runs), "--expected-buckets", "5"]) == 0
    assert f"xnli/de/k1/full mix records of fsxlt 0.1.0, {__version__}" in \
        capsys.readouterr().err


# --------------------------------------------------------------------------- the property

OPERATIONS = st.lists(st.tuples(st.sampled_from(["sample", "adapt", "sweep", "report"]),
                                st.sampled_from([0, 1]), st.sampled_from(["store", "runs"])),
                      min_size=2, max_size=5)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(OPERATIONS)
def test_no_command_sequence_changes_a_finished_file(study, operations):
    """Whatever runs in whatever order on the two directories, without --replace, a file
    that was there stays byte for byte (refusals are fine; losses are not)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = {"store": root / "store", "runs": root / "runs"}
        assert run_app(["sample", "--task", "xnli", "--lang", "de", "--k", "1",
                        "--n-buckets", "2", "--seed", "0", "--data-dir", str(study["data"]),
                        "--out", str(dirs["store"])]) == 0
        for name, variant, target in operations:
            before = files(root)
            out = dirs[target]
            if name == "sample":
                argv = ["sample", "--task", "xnli", "--lang", "de", "--k", "1",
                        "--n-buckets", "2", "--seed", str(variant),
                        "--data-dir", str(study["data"]), "--out", str(out)]
            elif name == "adapt":
                argv = adapt(study, out, bucket=dirs["store"] / "xnli/de/k1/00.json",
                             lr=("1e-2", "2e-2")[variant], epochs="1")
            elif name == "sweep":
                config = write_config(root / "sweep.yaml", sweep_config(
                    study, out, buckets=str(dirs["store"]), lrs=[(1e-2, 2e-2)[variant]],
                    max_epochs=1, tasks={"xnli": {"languages": ["de"], "k": [1]}}))
                argv = ["sweep", str(config), "--workers", "0"]
            else:
                argv = ["report", str(dirs["runs"]), "--expected-buckets", "2"]
            run_app(argv)
            after = files(root)
            changed = [path for path, data in before.items()
                       if path != "sweep.yaml" and after.get(path) != data]
            assert not changed, (name, variant, target, changed)


def test_a_record_scored_with_another_metric_is_not_done(study, tmp_path, capsys):
    """A task's metric changed between versions (xglue-pos, wpr): its old records are
    other settings, never silently counted as this version's."""
    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    path = runs / "xnli/de/k1/full/00.json"
    record = json.loads(path.read_text())
    record["metric"] = "token_accuracy"
    path.write_text(json.dumps(record))
    capsys.readouterr()
    one_line(run_app(adapt(study, runs)), capsys.readouterr().err,
             "(metric differ), written by fsxlt adapt; pass --replace")


def test_adapt_through_a_link_into_a_bucket_store_is_refused(study, tmp_path, capsys):
    """Paths are resolved before the rules (issue 31, mechanism 5): fsxlt 0.2.0 wrote a
    runs directory through a symbolic link into a bucket store."""
    store = tmp_path / "store"
    shutil.copytree(study["buckets"], store)
    link = tmp_path / "link"
    link.symlink_to(store / "xnli")
    before = files(store)
    one_line(run_app(adapt(study, link, bucket=store / "xnli/de/k1/00.json")),
             capsys.readouterr().err, f"{link}: --out (a link to "
             f"{(store / 'xnli').resolve()}) lies inside {store.resolve()}, which is a "
             "bucket store")
    assert files(store) == before


@pytest.mark.parametrize("kind", ["runs", "store", "other", "inside"])
def test_the_demo_refuses_a_folder_it_did_not_create(study, tmp_path, capsys, kind):
    """A command owns only what it wrote (issue 31, mechanism 4): fsxlt 0.2.0's demo
    replaced a sweep's records in the runs directory it was pointed at ("replacing records
    of an earlier config") and left 40-60 files before refusing a store."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    assert run_app(["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]) == 0
    store = tmp_path / "store"
    shutil.copytree(study["buckets"], store)
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    out, says = {"runs": (runs, "is or lies inside"), "store": (store, "is or lies inside"),
                 "other": (other, "not a folder fsxlt demo created"),
                 "inside": (runs / "xnli" / "demo", "is or lies inside")}[kind]
    before = files(tmp_path)
    capsys.readouterr()
    one_line(run_app(["demo", "--out", str(out), "--config", "quick"]),
             capsys.readouterr().err, says)
    assert files(tmp_path) == before


def test_evaluate_refuses_an_out_inside_a_bucket_store(study, tmp_path, capsys):
    """A writer of the wrong kind (issue 31, mechanism 4): 0.2.0's evaluate wrote its
    scores into a bucket set's folder."""
    store = tmp_path / "store"
    shutil.copytree(study["buckets"], store)
    before = files(store)
    out = store / "xnli/de/k1/zero-shot-test.json"
    one_line(run_app(["evaluate", str(study["checkpoint"]), "--task", "xnli", "--lang", "de",
                      "--data-dir", str(study["data"]), "--split", "test", "--out", str(out)]),
             capsys.readouterr().err, f"{out}: --out lies inside {store.resolve()}, a bucket "
             "store")
    assert files(store) == before


def test_a_file_where_a_record_folder_goes_is_named_before_training(study, tmp_path, capsys):
    """Messages that say what to do (issue 31, mechanism 11): 0.2.0 trained, then failed on
    the record's temporary file; now the folder that is a file is named first."""
    runs = tmp_path / "runs"
    (runs / "xnli" / "de").mkdir(parents=True)
    (runs / "xnli" / "de" / "k1").write_text("not a folder")
    before = files(runs)
    one_line(run_app(adapt(study, runs)), capsys.readouterr().err,
             f"{runs / 'xnli' / 'de' / 'k1'}: a file where the runs directory needs a folder")
    assert files(runs) == before


def test_a_zero_shot_record_of_the_same_start_says_what_differs(study, tmp_path, capsys):
    """0.2.0 called any other K=0 record "of another start"."""
    argv, runs = swept(study, tmp_path)
    path = runs / "xnli/de/k0/zero-shot.json"
    record = json.loads(path.read_text())
    record["oracle"] = {"edited": True}
    path.write_text(json.dumps(record))
    capsys.readouterr()
    one_line(run_app(argv), capsys.readouterr().err,
             "a zero-shot record of the same start is there (oracle differ)")


def test_a_replaced_zero_shot_record_is_named_on_stderr(study, tmp_path, capsys):
    """Issue 41, case 2: ``sweep --replace`` over a hand-edited K=0 record of the same start
    rewrote it with stderr empty, though each replacement is named."""
    argv, runs = swept(study, tmp_path)
    path = runs / "xnli/de/k0/zero-shot.json"
    edited = json.loads(path.read_text())
    edited["test_score"] = 0.99
    path.write_text(json.dumps(edited))
    before = files(runs)
    capsys.readouterr()
    one_line(run_app(argv), capsys.readouterr().err,
             f"{path}: a zero-shot record of the same start is there (test_score differ)")
    assert files(runs) == before
    assert run_app([*argv, "--replace"]) == 0
    assert f"replacing {path} (test_score differ)" in capsys.readouterr().err
    assert json.loads(path.read_text())["test_score"] != 0.99


def test_a_report_expects_the_sets_own_number_of_buckets(study, tmp_path, capsys):
    """Issue 41, case 20: a set of 5 buckets was reported as "Missing buckets: 05 06 ... 39"
    (the task's 40); records now say their set's size and the report expects it."""
    _, runs = swept(study, tmp_path)
    record = json.loads((runs / "xnli/de/k1/full/00.json").read_text())
    assert record["bucket"]["set_size"] == 5
    capsys.readouterr()
    assert run_app(["report", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "Missing buckets" not in out and "(n=5)" not in out, out
    (runs / "xnli/de/k1/full/04.json").unlink()
    assert run_app(["report", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "Missing buckets" in out and "k1/full: 04" in out and "05" not in out.split(
        "Missing buckets")[1].splitlines()[1], out


def test_a_report_says_where_the_zero_shot_score_is_when_runs_lack_it(study, tmp_path,
                                                                      capsys):
    """Issue 41, case 20: after ``fsxlt adapt`` (which copies no K=0 record) the report
    had no K=0 column and did not say that the checkpoint holds the zero-shot score."""
    runs = tmp_path / "runs"
    assert run_app(adapt(study, runs)) == 0
    capsys.readouterr()
    assert run_app(["report", str(runs)]) == 0
    out = capsys.readouterr().out
    assert (f"No K=0 score for xnli/de: the zero-shot score of the start is in its "
            f"checkpoint ({study['checkpoint']}/fsxlt_checkpoint.json)") in " ".join(
                out.split()), out
    (tmp_path / "swept").mkdir()
    _, swept_runs = swept(study, tmp_path / "swept")
    assert run_app(["report", str(swept_runs)]) == 0
    assert "No K=0 score" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["icl", "lm-adapt", "adapt"])
def test_a_locked_runs_directory_is_refused_before_any_model_loads(study, tmp_path, capsys,
                                                                   monkeypatch, command):
    """Issue 41, case 18: ``fsxlt icl`` on a runs directory another command was writing
    refused only after loading the model (91 s for Gemma 3 270M)."""
    import fsxlt.training as training
    from fsxlt.icl import model as lm_module
    from fsxlt.study.directories import RUNS, claim, writer_lock
    from tests.icl_fixtures import make_causal_lm_dir

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded before the lock was taken")

    monkeypatch.setattr(lm_module, "load_causal_lm", no_load)
    monkeypatch.setattr(training, "load_start", no_load)
    runs = claim(tmp_path / "runs", RUNS)
    lm = make_causal_lm_dir(tmp_path / "lm")
    bucket = str(study["buckets"] / "xnli/de/k1/00.json")
    test = str(study["data"] / "test-de.tsv")
    argv = {"icl": ["icl", "--task", "xnli", "--lang", "de", "--model", str(lm), "--bucket",
                    bucket, "--test", test, "--out", str(runs)],
            "lm-adapt": ["lm-adapt", "--task", "xnli", "--lang", "de", "--model", str(lm),
                         "--bucket", bucket, "--test", test, "--max-epochs", "1", "--out",
                         str(runs)],
            "adapt": adapt(study, runs)}[command]
    with writer_lock(runs, RUNS):  # another command writing this runs directory
        capsys.readouterr()
        one_line(run_app(argv), capsys.readouterr().err,
                 "another fsxlt command is writing this runs directory")


def test_a_sweep_refuses_an_unusable_test_file_before_writing(study, tmp_path, capsys):
    """Issue 41, case 17, for sweeps: a test file that cannot be read failed in every
    worker, leaving the runs directory and an error record per run; it is read (once)
    before anything is written now."""
    data = tmp_path / "data"
    shutil.copytree(study["data"], data)
    (data / "test-de.tsv").write_bytes(b"\xff\xfe not a tsv \x00\n")
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, runs, data_dir=str(data)))
    capsys.readouterr()
    one_line(run_app(["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]),
             capsys.readouterr().err, "test-de.tsv")
    assert not runs.exists()
