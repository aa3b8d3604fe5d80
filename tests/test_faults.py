"""Fault injection: the command line driven as a user would, with broken inputs and signals.

Every case in ``CASES`` is one line: a name, a function that builds the
broken input under the case's own directory and returns the command line,
the exit status and what the one stderr line must say. For each case the
test asserts: that exit status; exactly one line on stderr, naming the
problem (file and line where there is one); no traceback; nothing written
(the case directory is byte-for-byte what it was before the command ran).

The second half kills commands (SIGKILL, SIGINT) at an exact point from
outside (``tests.fault_runner``), reruns them, and compares the outputs
byte for byte with an uninterrupted run's; and runs two sweeps on one
runs directory at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.conftest import write_ner
from tests.sweep_fixtures import MICRO_DEMO, build_study, sweep_config, write_config

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the world

@dataclass
class World:
    """Valid inputs the cases break copies of: a tiny study and a finished sweep over it."""

    root: Path
    study: dict[str, Path]
    runs: Path          # a finished sweep (xnli/de/k1, 5 buckets) named "test-sweep"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("faults")
    study = build_study(root / "study")
    runs = root / "runs"
    config = write_config(root / "sweep.yaml", sweep_config(study, runs))
    assert run_app(["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]) == 0
    return World(root, study, runs)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes (directories too, as empty entries)."""
    return {p.relative_to(root).as_posix() + ("/" if p.is_dir() else ""):
            (b"" if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


# --------------------------------------------------------------------------- data readers

# Per reader: task, language, file name, a valid file (one record per line
# from line 2 on), a line with the wrong columns and a line with an unknown label.
READERS = {
    "tsv-pair": ("xnli", "de", "dev-de.tsv",
                 "".join(f"premise {i}\thypothesis {i}\t"
                         f"{('entailment', 'neutral', 'contradiction')[i % 3]}\n"
                         for i in range(12)),
                 "premise\thypothesis\tneutral\textra", "premise\thypothesis\tmaybe"),
    "mldoc": ("mldoc", "de", "train-de.tsv",
              "".join(f"{('CCAT', 'ECAT', 'GCAT', 'MCAT')[i % 4]}\tdocument {i}\n"
                      for i in range(12)),
              "CCAT", "ZCAT\tdocument"),
    "marc-jsonl": ("marc", "de", "train-de.jsonl",
                   "".join(json.dumps({"review_body": f"body {i}", "review_title": "t",
                                       "product_category": "c", "stars": i % 5 + 1}) + "\n"
                           for i in range(10)),
                   json.dumps({"review_body": "b", "review_title": "t", "stars": 1}),
                   json.dumps({"review_body": "b", "review_title": "t",
                               "product_category": "c", "stars": 7})),
    "conll": ("panx", "de", "train-de.tsv",
              "".join("Ada\tB-PER\nmet\tO\nBonn\tB-LOC\nat\tO\nUN\tB-ORG\n\n" for _ in range(4)),
              "met\tO\textra", "met\tB-XYZ"),
    "conllu": ("udpos", "de", "train-de.conllu",
               "".join("1\tAda\t_\tPROPN\t_\t_\t_\t_\t_\t_\n2\truns\t_\tVERB\t_\t_\t_\t_\t_\t_\n"
                       "3\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n\n" for _ in range(4)),
               "2\truns\t_\tVERB\t_", "2\truns\t_\tFOO\t_\t_\t_\t_\t_\t_"),
}


def _replace_line(text: str, line: str, number: int = 2) -> str:
    lines = text.split("\n")
    lines[number - 1] = line
    return "\n".join(lines)


def _truncated(text: str) -> str:
    """Cut inside the last record, as a copy interrupted mid-file leaves it."""
    body = text.rstrip("\n")
    return body[: body.rindex("\n") + 3]


# defect -> (bytes from (valid text, reader), what the error says, line)
DEFECTS: dict[str, tuple[Callable[[str, tuple], bytes], str, Callable[[str], int] | None]] = {
    "truncated": (lambda text, r: _truncated(text).encode(), "",
                  lambda text: text.rstrip("\n").count("\n") + 1),
    "binary": (lambda text, r: bytes(range(256)) * 4, "not valid UTF-8 text", None),
    "non-utf8": (lambda text, r: _replace_line(text, r[3].split("\n")[1] + "é").encode("latin-1"),
                 "not valid UTF-8 text", lambda text: 2),
    "wrong-columns": (lambda text, r: _replace_line(text, r[4]).encode(), "", lambda text: 2),
    "unknown-label": (lambda text, r: _replace_line(text, r[5]).encode(), "unknown",
                      lambda text: 2),
}


def _sample_argv(reader: tuple, data: Path, out: Path) -> list[str]:
    task, lang = reader[0], reader[1]
    return ["sample", "-t", task, "-l", lang, "-k", "1", "--n-buckets", "1", "--data", str(data),
            "--out", str(out)]


@pytest.mark.parametrize("defect", sorted(DEFECTS))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_broken_data_file_is_one_line_naming_file_and_line(reader, defect, tmp_path, capsys):
    spec = READERS[reader]
    make, says, line = DEFECTS[defect]
    data = tmp_path / spec[2]
    data.write_bytes(make(spec[3], spec))
    before = snapshot(tmp_path)
    status = run_app(_sample_argv(spec, data, tmp_path / "out"))
    err = capsys.readouterr().err
    where = f"{data}:{line(spec[3])}:" if line else f"{data}"
    assert_one_line(status, err, 2, where)
    assert says in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("variant", ["crlf", "bom", "crlf+bom"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_crlf_and_bom_files_read_like_the_plain_file(reader, variant, tmp_path):
    spec = READERS[reader]
    plain, other = tmp_path / "plain" / spec[2], tmp_path / "other" / spec[2]
    for path in (plain, other):
        path.parent.mkdir()
    plain.write_text(spec[3], encoding="utf-8", newline="\n")
    text = spec[3].replace("\n", "\r\n") if "crlf" in variant else spec[3]
    other.write_bytes(("\ufeff" if "bom" in variant else "").encode() + text.encode())
    for path in (plain, other):
        assert run_app(_sample_argv(spec, path, path.parent / "out")) == 0
    a, b = (sorted((path.parent / "out").rglob("00.json")) for path in (plain, other))
    assert [json.loads(p.read_text())["examples"] for p in a] == \
        [json.loads(p.read_text())["examples"] for p in b]


# --------------------------------------------------------------------------- the case table

def assert_one_line(status: int, err: str, expected_status: int, says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == expected_status, err
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert says in lines[0], err


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def bucket_set(w: World, tmp: Path) -> Path:
    """A private copy of the study's bucket store (tmp/b); returns its xnli/de/k1 set."""
    return _copy(w.study["buckets"], tmp / "b") / "xnli" / "de" / "k1"


def adapt(w: World, tmp: Path, bucket: Path | str, start: Path | str | None = None,
          *extra: str, out: Path | None = None) -> list[str]:
    return ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
            "--from", str(start or w.study["checkpoint"]), "--data-dir", str(w.study["data"]),
            "--out", str(out or tmp / "out"), "--device", "cpu", "--max-epochs", "1",
            "--lr", "0.01", *extra]


def good_bucket(w: World) -> Path:
    return w.study["buckets"] / "xnli" / "de" / "k1" / "00.json"


def tamper_example(w: World, tmp: Path) -> Path:
    directory = bucket_set(w, tmp)
    text = (directory / "00.json").read_text()
    first = json.loads(text)["examples"][0]["text_a"]
    (directory / "00.json").write_text(text.replace(first, first + " edited", 1))
    return directory


def wrong_hash(w: World, tmp: Path) -> Path:
    directory = bucket_set(w, tmp)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["buckets"][0]["sha256"] = "0" * 64
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def missing_bucket(w: World, tmp: Path) -> Path:
    directory = bucket_set(w, tmp)
    (directory / "01.json").unlink()
    return directory


def invalid_json(w: World, tmp: Path) -> Path:
    directory = bucket_set(w, tmp)
    text = (directory / "00.json").read_text()
    (directory / "00.json").write_text(text[: len(text) // 2])
    return directory


def store_of(bucket_set_dir: Path) -> str:
    """The store root of a set directory (ROOT/xnli/de/k1)."""
    return str(bucket_set_dir.parents[2])


def model_copy(w: World, tmp: Path, breakage: str) -> Path:
    """A copy of the source-trained checkpoint, broken the way ``breakage`` says."""
    directory = _copy(w.study["checkpoint"], tmp / "model")
    if breakage == "truncated-weights":
        weights = directory / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif breakage == "corrupt-config":
        (directory / "config.json").write_text('{"model_type": "bert", "hidden_')
    elif breakage == "half-written":  # what a killed save leaves: no config yet
        (directory / "config.json").unlink()
    return directory


def sweep_with(w: World, tmp: Path, **change) -> list[str]:
    """``fsxlt sweep`` on the study's config with ``change`` applied, records into tmp/runs."""
    config = sweep_config(w.study, tmp / "runs", **change)
    return ["sweep", str(write_config(tmp / "sweep.yaml", config)), "--workers", "0"]


def sweep_into(w: World, tmp: Path, out: object) -> list[str]:
    """``fsxlt sweep`` on the study's config with its records going to ``out``."""
    config = sweep_config(w.study, tmp / "runs")
    config["out"] = out
    return ["sweep", str(write_config(tmp / "sweep.yaml", config)), "--workers", "0"]


def scores_csv(tmp: Path) -> Path:
    """A per-language scores table as the study prints it (K=0 zero-shot rows)."""
    rows = [("de", 70, 73), ("es", 72, 74), ("zh", 40, 52), ("ar", 38, 47)]
    (tmp / "scores.csv").write_text("task,language,k,mean\n" + "".join(
        f"panx,{lang},0,{zero}\npanx,{lang},1,{few}\n" for lang, zero, few in rows))
    return tmp / "scores.csv"


def sweep_text(tmp: Path, text: str) -> list[str]:
    (tmp / "sweep.yaml").write_text(text)
    return ["sweep", str(tmp / "sweep.yaml"), "--workers", "0"]


def a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("not a directory\n")
    return tmp / "a-file"


def _can_create_in(directory: Path) -> bool:
    try:
        fd, probe = tempfile.mkstemp(dir=directory)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def unwritable(tmp: Path) -> Path:
    """A directory this process cannot create files in: a read-only one, or (as root,
    whom permissions do not stop) a read-only filesystem."""
    locked = tmp / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if not _can_create_in(locked):
        return locked
    locked.chmod(0o755)
    if Path("/sys").is_dir() and not _can_create_in(Path("/sys")):
        return Path("/sys")
    pytest.skip("no unwritable directory on this machine")


def other_study(w: World, tmp: Path) -> list[str]:
    """The finished sweep's records, and another sweep (other name and settings) aimed at them."""
    runs = _copy(w.runs, tmp / "runs")
    config = sweep_config(w.study, runs, name="another-study", max_epochs=2)
    return ["sweep", str(write_config(tmp / "other.yaml", config)), "--workers", "0",
            "--lang", "de", "--k", "1"]


def published_with(tmp: Path) -> Path:
    src = tmp / "published" / "xnli" / "1-shots" / "german" / "0-th"
    src.mkdir(parents=True)
    (src / "sampled.json").write_text(json.dumps({lab: [
        {"uid": f"u-{lab}", "text_a": "a", "text_b": "b", "label": lab}]
        for lab in ("entailment", "neutral", "contradiction")}))
    return tmp / "published"


def ner_file(tmp: Path) -> Path:
    return write_ner(tmp / "train-de.tsv", 60, seed=3)


Build = Callable[[World, Path], list[str]]


@dataclass(frozen=True)
class Case:
    name: str
    build: Build
    says: str
    status: int = 2


CASES = [
    # bucket stores
    Case("adapt-tampered-example", lambda w, t: adapt(w, t, tamper_example(w, t) / "00.json"),
         "00.json: differs from the hash in its manifest"),
    Case("adapt-set-tampered-example", lambda w, t: adapt(w, t, tamper_example(w, t)),
         "00.json: differs from the hash in its manifest"),
    Case("adapt-wrong-hash", lambda w, t: adapt(w, t, wrong_hash(w, t) / "00.json"),
         "00.json: differs from the hash in its manifest"),
    Case("adapt-missing-bucket", lambda w, t: adapt(w, t, missing_bucket(w, t)),
         "01.json: bucket file listed in the manifest is missing"),
    Case("adapt-invalid-json", lambda w, t: adapt(w, t, invalid_json(w, t) / "00.json"),
         "00.json:"),
    Case("check-missing-bucket", lambda w, t: ["buckets", "check", str(missing_bucket(w, t))],
         "01.json: file not found"),
    Case("check-invalid-json", lambda w, t: ["buckets", "check", str(invalid_json(w, t))],
         "invalid JSON"),
    Case("sweep-tampered-example",
         lambda w, t: sweep_with(w, t, buckets=store_of(tamper_example(w, t))),
         "00.json: differs from the hash in its manifest"),
    Case("sweep-wrong-hash", lambda w, t: sweep_with(w, t, buckets=store_of(wrong_hash(w, t))),
         "00.json: differs from the hash in its manifest"),
    Case("sweep-missing-bucket",
         lambda w, t: sweep_with(w, t, buckets=store_of(missing_bucket(w, t))),
         "01.json: bucket file listed in the manifest is missing"),
    Case("check-corrupt-manifest",
         lambda w, t: ["buckets", "check", str(_corrupt_manifest(w, t))], "manifest.json:"),
    # model directories
    Case("model-missing", lambda w, t: adapt(w, t, good_bucket(w),
                                             t / "no-model"),
         "no such directory, and not a model name the hub would accept"),
    Case("model-truncated-weights",
         lambda w, t: adapt(w, t, good_bucket(w),
                            model_copy(w, t, "truncated-weights")), "model.safetensors"),
    Case("model-corrupt-config",
         lambda w, t: adapt(w, t, good_bucket(w),
                            model_copy(w, t, "corrupt-config")), "config.json"),
    Case("model-half-written",
         lambda w, t: adapt(w, t, good_bucket(w),
                            model_copy(w, t, "half-written")), "not a model directory"),
    Case("evaluate-model-missing",
         lambda w, t: ["evaluate", str(t / "nope"), "--task", "xnli", "--lang", "de",
                       "--data-dir", str(w.study["data"]), "--device", "cpu"],
         "no such directory"),
    # sweep configs
    Case("sweep-yaml-syntax", lambda w, t: sweep_text(t, "name: x\ntasks: [xnli\nout: r\n"),
         "sweep.yaml:3: invalid YAML"),
    Case("sweep-not-a-mapping", lambda w, t: sweep_text(t, "- xnli\n"), "must be a YAML mapping"),
    Case("sweep-unknown-key", lambda w, t: sweep_with(w, t, epochs=3), "unknown key(s): epochs"),
    Case("sweep-unknown-task-key",
         lambda w, t: sweep_with(w, t, tasks={"xnli": {"language": ["de"]}}),
         "unknown key(s) for task xnli: language"),
    Case("sweep-k-not-integer",
         lambda w, t: sweep_with(w, t, tasks={"xnli": {"languages": ["de"], "k": ["one"]}}),
         "k must be an integer, got 'one'"),
    Case("sweep-lr-not-number", lambda w, t: sweep_with(w, t, lrs=["fast"]),
         "lrs must be a number, got 'fast'"),
    Case("sweep-lr-negative", lambda w, t: sweep_with(w, t, lrs=[-0.1]), "lrs must be > 0"),
    Case("sweep-epochs-list", lambda w, t: sweep_with(w, t, max_epochs=[3]),
         "max_epochs must be an integer, got [3]"),
    Case("sweep-epochs-zero", lambda w, t: sweep_with(w, t, max_epochs=0),
         "max_epochs must be >= 1"),
    Case("sweep-seed-fraction", lambda w, t: sweep_with(w, t, seed=1.5),
         "seed must be an integer, got 1.5"),
    Case("sweep-out-list", lambda w, t: sweep_into(w, t, ["a", "b"]),
         "out must be a string"),
    Case("sweep-task-settings-list", lambda w, t: sweep_with(w, t, tasks={"xnli": ["de"]}),
         "the settings of task xnli must be a mapping"),
    Case("sweep-tasks-list", lambda w, t: sweep_with(w, t, tasks=["xnli"]),
         "'tasks' must map task names"),
    Case("sweep-unknown-task", lambda w, t: sweep_with(w, t, tasks={"nli": {}}),
         "unknown task 'nli'"),
    Case("sweep-unknown-method", lambda w, t: sweep_with(w, t, methods=["lora-x"]),
         "unknown method 'lora-x'"),
    Case("sweep-unknown-language",
         lambda w, t: sweep_with(w, t, tasks={"xnli": {"languages": ["xx"]}}),
         "unknown language 'xx'"),
    Case("sweep-missing-config", lambda w, t: ["sweep", str(t / "nope.yaml")],
         "nope.yaml: sweep config not found"),
    # output paths: a file, unwritable, another study's records
    Case("sample-out-file",
         lambda w, t: ["sample", "-t", "panx", "-l", "de", "-k", "1", "--n-buckets", "2",
                       "--data", str(ner_file(t)), "--out", str(a_file(t))],
         "the bucket store is a file"),
    Case("sample-out-unwritable",
         lambda w, t: ["sample", "-t", "panx", "-l", "de", "-k", "1", "--n-buckets", "2",
                       "--data", str(ner_file(t)), "--out", str(unwritable(t) / "b")],
         "not writable"),
    Case("import-published-out-file",
         lambda w, t: ["buckets", "import-published", str(published_with(t)), "--out",
                       str(a_file(t))], "is a file"),
    Case("check-json-is-a-directory",
         lambda w, t: ["buckets", "check", str(w.study["buckets"]), "--json", str(t)],
         "is a directory"),
    Case("source-train-out-file",
         lambda w, t: ["source-train", "--task", "xnli", "--out", str(a_file(t)),
                       "--model", str(w.study["encoder"]), "--data-dir", str(w.study["data"])],
         "is a file"),
    Case("adapt-out-file",
         lambda w, t: adapt(w, t, good_bucket(w), out=a_file(t)), "is a file"),
    Case("adapt-out-unwritable",
         lambda w, t: adapt(w, t, good_bucket(w), out=unwritable(t) / "runs"), "not writable"),
    Case("evaluate-out-directory",
         lambda w, t: ["evaluate", str(w.study["checkpoint"]), "--task", "xnli", "--lang", "de",
                       "--data-dir", str(w.study["data"]), "--device", "cpu", "--out", str(t)],
         "is a directory"),
    Case("sweep-out-file", lambda w, t: sweep_into(w, t, str(a_file(t))), "is a file"),
    Case("sweep-out-unwritable", lambda w, t: sweep_into(w, t, str(unwritable(t) / "r")),
         "not writable"),
    Case("sweep-another-studys-records", other_study,
         "written by sweep 'test-sweep'; pass --replace"),
    Case("report-out-file", lambda w, t: ["report", str(w.runs), "--out", str(a_file(t))],
         "is a file"),
    Case("report-out-unwritable",
         lambda w, t: ["report", str(w.runs), "--out", str(unwritable(t) / "rep")],
         "not writable"),
    Case("report-corrupt-only-record",
         lambda w, t: ["report", str(_one_truncated_record(w, t))], "unreadable: "),
    Case("demo-out-file", lambda w, t: ["demo", "--out", str(a_file(t))], "is a file"),
    Case("analyze-out-file",
         lambda w, t: ["analyze", "correlate", str(scores_csv(t)), "--out", str(a_file(t))],
         "is a file"),
    # usage errors
    Case("option-not-a-number", lambda w, t: adapt(w, t, "x", None, "--seed", "abc"),
         "Invalid value for '--seed'"),
    Case("unknown-option", lambda w, t: ["sample", "--nope"], "No such option: --nope"),
]


def _corrupt_manifest(w: World, tmp: Path) -> Path:
    directory = bucket_set(w, tmp)
    (directory / "manifest.json").write_text('{"format": "fsxlt-buckets/1", "buck')
    return directory


def _one_truncated_record(w: World, tmp: Path) -> Path:
    record = next(w.runs.rglob("full/00.json"))
    runs = tmp / "runs"
    target = runs / record.relative_to(w.runs)
    target.parent.mkdir(parents=True)
    target.write_text(record.read_text()[:200])
    return runs


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault(case: Case, world: World, tmp_path: Path, capsys) -> None:
    argv = case.build(world, tmp_path)
    before = snapshot(tmp_path)
    world_before = snapshot(world.runs)
    capsys.readouterr()
    status = run_app(argv)
    err = capsys.readouterr().err
    if case.says.startswith(("Invalid value", "No such option")):  # usage: usage line + Error
        assert status == 2 and "Traceback" not in err, err
        assert [line for line in err.splitlines() if line.startswith("Error:")] == [
            next(line for line in err.splitlines() if line.startswith("Error:"))]
        assert case.says in err and "Usage: fsxlt" in err
    else:
        assert_one_line(status, err, case.status, case.says)
        assert err.startswith("error: ")
    assert snapshot(tmp_path) == before, "the failed command wrote something"
    assert snapshot(world.runs) == world_before


# --------------------------------------------------------------------------- signals

def with_fault(target: str, nth: int, action: str, *args: str,
               wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    """Run ``fsxlt ARGS`` in a subprocess with ``action`` planted at the nth call of target."""
    command = [sys.executable, "-m", "tests.fault_runner", target, str(nth), action, "--",
               *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if not wait:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=_default_sigint)


def wait_until_held(process: subprocess.Popen, gate: Path, limit: float = 120) -> None:
    """Wait until a command started by :func:`with_fault` with ``wait:GATE`` stops at its
    fault (it has written ``GATE.ready``); it must still be running."""
    deadline = time.monotonic() + limit
    while not Path(f"{gate}.ready").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _default_sigint() -> None:
    """In the child: Ctrl-C's default action, even when the suite itself was started with
    SIGINT ignored (a background job of a non-interactive shell inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_interrupted(done: subprocess.CompletedProcess, action: str) -> None:
    """The command died of the signal (SIGKILL) or stopped cleanly on it (SIGINT)."""
    if action == "SIGKILL":
        assert done.returncode == -signal.SIGKILL, done.stderr
    else:
        assert done.returncode == 130, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("interrupted: what finished "
                                                               "is kept"), done.stderr
        assert "Traceback" not in done.stderr


def no_temporaries(root: Path) -> None:
    """No hidden temporary left behind (the sweep's lock file and the directory markers
    are meant to stay)."""
    from fsxlt.demo.pipeline import DEMO_MARKER
    from fsxlt.study.directories import MARKER

    left = [p for p in root.rglob(".*")
            if p.name not in (".fsxlt-writer.lock", MARKER, DEMO_MARKER)]
    assert left == [], left


def then_rerun(argv: list[str], out: Path, reference: dict[str, bytes]) -> None:
    """Rerun the interrupted command; it finishes with the uninterrupted run's files."""
    assert run_app(argv) == 0
    no_temporaries(out)
    assert snapshot(out) == reference


ACTIONS = ["SIGKILL", "SIGINT"]


@pytest.mark.parametrize("action", ACTIONS)
def test_sample_interrupted_at_a_set_rename_then_rerun(action, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for seed, lang in enumerate(("de", "fr")):
        write_ner(data / f"train-{lang}.tsv", 150, seed=seed)
    argv = ["sample", "-t", "panx", "-l", "de", "-l", "fr", "-k", "1", "-k", "2",
            "--n-buckets", "5", "--data-dir", str(data), "--out", str(tmp_path / "b")]
    assert run_app(argv) == 0
    reference = snapshot(tmp_path / "b")
    shutil.rmtree(tmp_path / "b")
    # the store's marker, then four sets, each renamed into place: stop before the third set
    assert_interrupted(with_fault("os.replace", 4, action, *argv), action)
    finished = [p for p in (tmp_path / "b").rglob("manifest.json")
                if not any(part.startswith(".") for part in p.parts)]
    assert len(finished) == 2
    then_rerun(argv, tmp_path / "b", reference)


def _source_files(tmp: Path) -> list[str]:
    from tests.train_fixtures import nli_data, write_pairs

    write_pairs(tmp / "train-en.tsv", nli_data(48, seed=1))
    write_pairs(tmp / "dev-en.tsv", nli_data(9, seed=2))
    return ["--train", str(tmp / "train-en.tsv"), "--dev", str(tmp / "dev-en.tsv")]


@pytest.mark.parametrize("action", ACTIONS)
def test_source_train_interrupted_mid_training_then_rerun(action, world, tmp_path):
    argv = ["source-train", "--task", "xnli", "--model", str(world.study["encoder"]),
            *_source_files(tmp_path), "--lr", "0.003", "--epochs", "2", "--batch-size", "12",
            "--seed", "5", "--device", "cpu", "--out", str(tmp_path / "ckpt")]
    assert run_app(argv) == 0
    reference = snapshot(tmp_path / "ckpt")
    shutil.rmtree(tmp_path / "ckpt")
    assert_interrupted(with_fault("torch.optim.Adam.step", 5, action, *argv), action)
    assert not (tmp_path / "ckpt").exists()
    then_rerun(argv, tmp_path / "ckpt", reference)


def _report(runs: Path, capsys) -> str:
    """The report of ``runs``, less its measured run times and the machine's line (two
    runs' clocks differ, and these tests compare results across thread counts)."""
    from fsxlt.report.reproducibility import without_run_times

    capsys.readouterr()
    assert run_app(["report", str(runs), "--expected-buckets", "5"]) == 0
    return without_run_times(capsys.readouterr().out, machine=True)


@pytest.mark.parametrize("action", ACTIONS)
def test_sweep_interrupted_between_records_then_rerun(action, world, tmp_path, capsys):
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(world.study, runs))
    # the reference's thread count in both processes: a resume with another CPU thread
    # count is refused, and the report says the count (its reproducibility section)
    threads = json.loads(next(world.runs.rglob("full/*.json")).read_text())["torch_threads"]
    argv = ["sweep", str(config), "--workers", "0", "--threads", str(threads), "--lang", "de",
            "--k", "1"]
    # the runs directory's marker, the zero-shot record, then one record per run: stop
    # before the fourth write
    assert_interrupted(with_fault("os.replace", 4, action, *argv), action)
    assert len(list(runs.rglob("full/*.json"))) == 1
    assert run_app(argv) == 0
    no_temporaries(runs)
    assert _report(runs, capsys) == _report(world.runs, capsys)


# The micro demo's 48 atomic writes: its folder's marker (1), corpora and data (2-31),
# encoder (32-33), the bucket store's marker and buckets (34-36), checkpoint (37-38), the
# runs directory's marker, zero-shot and run records (39-45), report and summary.
_DEMO_KEPT = ("buckets/", "ckpt/synth-topic/fsxlt_checkpoint.json", "report/report.md",
              "report/cells.csv")


@dataclass
class MicroDemo:
    """Where the micro demo runs (one folder for every test: what it writes names it) and
    what an uninterrupted run there writes."""

    argv: list[str]
    out: Path
    reference: dict[str, bytes]

    def outputs(self) -> dict[str, bytes]:  # the writer lock names its last holder
        from fsxlt.report.reproducibility import without_run_times

        kept = {name: data for name, data in snapshot(self.out).items()
                if name.startswith(_DEMO_KEPT) and not name.endswith(".fsxlt-writer.lock")}
        return {name: without_run_times(data.decode("utf-8")).encode("utf-8")
                if name.endswith(".md") else data for name, data in kept.items()}

    def fresh_run(self) -> None:
        """The demo in a process of its own, as the interrupted one is: what a checkpoint
        holds cannot depend on what this test process ran before (issue 63)."""
        done = with_fault("os.replace", 10**6, "SIGKILL", *self.argv)
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def micro_demo(tmp_path_factory) -> MicroDemo:
    """The micro demo run once, uninterrupted: the reference every interrupted run of it
    must come back to."""
    root = tmp_path_factory.mktemp("micro-demo")
    (root / "micro.yaml").write_text(MICRO_DEMO)
    out = root / "demo"
    demo = MicroDemo(["demo", "--out", str(out), "--config", str(root / "micro.yaml")], out, {})
    demo.fresh_run()
    demo.reference = demo.outputs()
    assert len(demo.reference) > 5
    shutil.rmtree(out)
    return demo


@pytest.mark.parametrize(("action", "nth"), [("SIGKILL", 38), ("SIGINT", 44)])
def test_demo_interrupted_then_rerun(action, nth, micro_demo):
    out = micro_demo.out
    try:
        assert_interrupted(with_fault("os.replace", nth, action, *micro_demo.argv), action)
        assert not (out / "report").exists()
        micro_demo.fresh_run()
        no_temporaries(out)
        assert micro_demo.outputs() == micro_demo.reference
    finally:
        shutil.rmtree(out, ignore_errors=True)


# --------------------------------------------------------------------------- concurrency

def test_a_second_sweep_on_the_same_runs_directory_refuses(world, tmp_path, capsys):
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(world.study, runs))
    argv = ["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]
    gate = tmp_path / "go"
    first = with_fault("os.replace", 2, f"wait:{gate}", *argv, wait=False)
    try:
        wait_until_held(first, gate)  # the first sweep holds the lock, mid-way
        before = snapshot(runs)
        capsys.readouterr()
        status = run_app(argv)
        err = capsys.readouterr().err
        assert_one_line(status, err, 2,
                        f"another fsxlt command is writing this runs directory (pid {first.pid}")
        assert snapshot(runs) == before
    finally:
        gate.write_text("")
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert _report(runs, capsys) == _report(world.runs, capsys)


def test_a_record_from_other_settings_is_refused_unless_replaced(world, tmp_path, capsys):
    runs = _copy(world.runs, tmp_path / "runs")
    config = write_config(tmp_path / "sweep.yaml", sweep_config(world.study, runs, lrs=[0.02]))
    argv = ["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]
    assert run_app([*argv, "--dry-run"]) == 0
    assert "5 to run (5 different)" in capsys.readouterr().err
    before = snapshot(runs)
    assert_one_line(run_app(argv), capsys.readouterr().err, 2, "(lrs differ), written by "
                    "sweep 'test-sweep'; pass --replace")
    assert snapshot(runs) == before
    assert run_app([*argv, "--replace"]) == 0
    assert capsys.readouterr().err.count("replacing ") == 5
    for path in runs.rglob("full/*.json"):
        assert json.loads(path.read_text())["lrs"] == [0.02]


# --------------------------------------------------------------------------- usage errors

def _numeric_options() -> list[tuple[list[str], str]]:
    """(command path, flag) of every int or float option of every command."""
    import typer.main

    from fsxlt.cli import app

    found = []

    def walk(command, path: list[str]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])
        for param in getattr(command, "params", []):
            kind = param.bare_type() if hasattr(param, "bare_type") else ""
            if param.param_type_name == "option" and kind in ("int", "float", "list[int]",
                                                              "list[float]", "tuple[int, int]"):
                found.append((path, param.opts[0]))

    walk(typer.main.get_command(app), [])
    return found


NUMERIC_OPTIONS = _numeric_options()


@pytest.mark.parametrize(("path", "flag"), NUMERIC_OPTIONS,
                         ids=[" ".join(p) + " " + f for p, f in NUMERIC_OPTIONS])
def test_a_non_numeric_value_is_a_usage_error(path, flag, tmp_path, capsys):
    status = run_app([*path, flag, "abc"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Usage: fsxlt" in err, err
    assert not any(tmp_path.iterdir())


def test_the_numeric_options_were_found_in_every_command_that_has_them():
    commands = {" ".join(path) for path, _flag in NUMERIC_OPTIONS}
    assert {"sample", "select", "adapt", "sweep", "source-train", "report", "demo",
            "analyze seeds-vs-buckets"} <= commands


def test_report_names_a_truncated_record_among_good_ones(world, tmp_path, capsys):
    runs = _copy(world.runs, tmp_path / "runs")
    record = sorted(runs.rglob("full/*.json"))[1]
    record.write_text(record.read_text()[:150])
    capsys.readouterr()
    assert run_app(["report", str(runs), "--expected-buckets", "5"]) == 0
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith(f"warning: {record}: unreadable run record, not counted: truncated")
    assert "(n=4)" in captured.out and "Unreadable records" in captured.out

