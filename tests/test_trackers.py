"""Records sent to trackers (issue 53, item 4), each read back with the tracker's own
reader: MLflow on its embedded SQLite store, Weights & Biases in offline mode (its
``.wandb`` files), TensorBoard event files (its ``EventAccumulator``). A sweep logged live
and the same study logged afterwards give one tracker run per record with equal
parameters and metrics; a second ``fsxlt runs log`` adds nothing; a tracker that fails
mid-sweep leaves every record written and says so once; a missing extra is one line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from fsxlt.cli import run_app
from fsxlt.study.runs import record_files
from tests.sweep_fixtures import build_study, sweep_config, write_config

KINDS = ("mlflow", "wandb", "tensorboard")
N_RECORDS = 5  # de, K 1 and 2, two buckets, and the K=0 record (issue 72, item 4)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    return build_study(tmp_path_factory.mktemp("tracker-study"))


@pytest.fixture(autouse=True)
def _offline_wandb(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")


def config(study: dict[str, Path], out: Path) -> Path:
    return write_config(out.parent / f"{out.name}.yaml", sweep_config(
        study, out, n_buckets=2, max_epochs=2, tasks={"xnli": {"languages": ["de"],
                                                               "k": [1, 2]}}))


def uri(kind: str, folder: Path) -> str:
    return f"sqlite:///{folder / 'mlflow.db'}" if kind == "mlflow" else str(folder)


# --------------------------------------------------------------------------- readers

def read_mlflow(where: str, project: str) -> dict[str, dict[str, Any]]:
    from mlflow.tracking import MlflowClient

    from fsxlt.report.trackers import quiet_store_setup

    with quiet_store_setup():
        client = MlflowClient(tracking_uri=where)
        experiment = client.get_experiment_by_name(project)
    runs = {}
    for run in client.search_runs([experiment.experiment_id]):
        curve = sorted((m.step, m.value) for m in
                       client.get_metric_history(run.info.run_id, "dev_score"))
        runs[run.data.tags["fsxlt.run_hash"]] = {
            "params": dict(run.data.params), "dev": curve,
            "test_score": run.data.metrics["test_score"],
            "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id))}
    return runs


def _wandb_records(path: Path) -> list[bytes]:
    """The protobuf records of a ``.wandb`` file (a LevelDB-style log of 32 KiB blocks
    after a 7-byte header), for reading an offline run back in a test."""
    data, pos, out, pending = path.read_bytes(), 7, [], b""
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 1:
            out.append(chunk)
        elif kind in (2, 3):
            pending += chunk
        elif kind == 4:
            out.append(pending + chunk)
            pending = b""
    return out


def _name(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


def read_wandb(where: str, project: str) -> dict[str, dict[str, Any]]:
    from wandb.proto import wandb_internal_pb2 as pb

    runs: dict[str, dict[str, Any]] = {}
    for file in sorted(Path(where).glob("wandb/offline-run-*/*.wandb")):
        config, dev, summary = {}, [], {}
        for raw in _wandb_records(file):
            record = pb.Record()
            record.ParseFromString(raw)
            kind = record.WhichOneof("record_type")
            if kind in ("run", "config"):
                items = record.run.config.update if kind == "run" else record.config.update
                config.update({_name(i): json.loads(i.value_json) for i in items})
            elif kind == "history":
                values = {_name(i): json.loads(i.value_json) for i in record.history.item}
                if "dev_score" in values:
                    dev.append((values["_step"], values["dev_score"]))
            elif kind == "summary":
                summary.update({_name(i): json.loads(i.value_json)
                                for i in record.summary.update})
        key = config.pop("tag.fsxlt.run_hash")
        params = {k: v for k, v in config.items() if not k.startswith(("tag.", "_", "fsxlt."))}
        runs.setdefault(key, {"params": params, "dev": sorted(dev),
                              "test_score": summary.get("test_score"), "files": 0})
        runs[key]["files"] += 1
    return runs


def read_tensorboard(where: str, project: str) -> dict[str, dict[str, Any]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    runs = {}
    for marker in sorted(Path(where).rglob("fsxlt_sent.json")):
        events = EventAccumulator(str(marker.parent))
        events.Reload()
        text = events.Tensors("params/text_summary")[0].tensor_proto.string_val[0]
        runs[json.loads(marker.read_text())["key"]] = {
            "params": json.loads(text.decode("utf-8")),
            "dev": [(e.step, e.value) for e in events.Scalars("dev_score")]
            if "dev_score" in events.Tags()["scalars"] else [],  # ICL: no dev curve
            "test_score": events.Scalars("test_score")[0].value,
            "files": sorted(p.name for p in marker.parent.iterdir()
                            if not p.name.startswith("events."))}
    return runs


READERS = {"mlflow": read_mlflow, "wandb": read_wandb, "tensorboard": read_tensorboard}


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("kind", KINDS)
def test_live_and_afterwards_give_one_run_per_record_alike(study, tmp_path, capsys, kind):
    runs = tmp_path / "runs"
    live, later = tmp_path / "live", tmp_path / "later"
    live.mkdir()
    later.mkdir()
    assert run_app(["sweep", str(config(study, runs)), "--workers", "0", "--threads", "1",
                    "--save-predictions", "--log-to", kind, "--log-uri", uri(kind, live),
                    "--log-project", "study"]) == 0
    sent_live = READERS[kind](uri(kind, live), "study")
    assert len(sent_live) == N_RECORDS
    from fsxlt.report.trackers import entry_of

    keys = {json.loads(p.read_text())["run"]["hash"] for p in record_files(runs)}
    zero = entry_of(runs / "xnli" / "de" / "k0" / "zero-shot.json")
    assert set(sent_live) == keys | {zero.key} and zero.key.startswith("zero-shot:")
    assert sent_live[zero.key]["test_score"] == pytest.approx(
        json.loads((runs / "xnli/de/k0/zero-shot.json").read_text())["test_score"])
    one = sent_live[sorted(keys)[0]]
    assert one["params"]["arm"] == "full" and one["params"]["task"] == "xnli"
    assert [step for step, _ in one["dev"]] == [1, 2]
    capsys.readouterr()
    assert run_app(["runs", "log", str(runs), "--to", kind, "--uri", uri(kind, later),
                    "--project", "study"]) == 0
    assert f"{N_RECORDS} records sent to {kind}, 0 sent before" in capsys.readouterr().out
    assert READERS[kind](uri(kind, later), "study") == sent_live
    assert run_app(["runs", "log", str(runs), "--to", kind, "--uri", uri(kind, later),
                    "--project", "study"]) == 0
    assert f"0 records sent to {kind}, {N_RECORDS} sent before" in capsys.readouterr().out
    assert READERS[kind](uri(kind, later), "study") == sent_live


def test_a_tracker_failing_mid_sweep_loses_no_record(study, tmp_path, capsys, monkeypatch):
    from fsxlt.report import trackers

    calls = []
    send = trackers._TensorBoard.send

    def flaky(self, entry):
        calls.append(entry.name)
        if len(calls) == 2:
            raise ConnectionError("server down")
        send(self, entry)

    monkeypatch.setattr(trackers._TensorBoard, "send", flaky)
    runs = tmp_path / "runs"
    assert run_app(["sweep", str(config(study, runs)), "--workers", "0", "--threads", "1",
                    "--log-to", "tensorboard", "--log-uri", str(tmp_path / "tb")]) == 0
    err = capsys.readouterr().err
    assert err.count("tensorboard: logging failed (ConnectionError: server down); the "
                     "records are written, send them later with fsxlt runs log") == 1
    assert len(record_files(runs)) == N_RECORDS - 1 and len(calls) == 2  # and the K=0
    monkeypatch.setattr(trackers._TensorBoard, "send", send)
    assert run_app(["runs", "log", str(runs), "--to", "tensorboard", "--uri",
                    str(tmp_path / "tb")]) == 0
    assert len(read_tensorboard(str(tmp_path / "tb"), "")) == N_RECORDS


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_extra_is_one_line_and_nothing_is_written(study, tmp_path, capsys,
                                                            monkeypatch, kind):
    monkeypatch.setitem(sys.modules, "tensorboard" if kind == "tensorboard" else kind, None)
    runs = tmp_path / "runs"
    assert run_app(["sweep", str(config(study, runs)), "--log-to", kind, "--log-uri",
                    uri(kind, tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--log-to {kind} needs {kind}: pip install 'fsxlt[{kind}]'" in err
    assert err.count("\n") == 1 and not runs.exists()


def test_adapt_and_icl_send_their_records_as_they_write_them(study, tmp_path, capsys):
    from tests.icl_fixtures import make_causal_lm_dir

    bucket_set = study["buckets"] / "xnli" / "de" / "k1"
    runs, tb = tmp_path / "runs", tmp_path / "tb"
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket_set),
                    "--from", str(study["checkpoint"]), "--data-dir", str(study["data"]),
                    "--out", str(runs), "--lr", "0.01", "--max-epochs", "2",
                    "--log-to", "tensorboard", "--log-uri", str(tb)]) == 0
    lm = make_causal_lm_dir(tmp_path / "lm", "llama")
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(lm), "--bucket",
                    str(bucket_set), "--data-dir", str(study["data"]), "--out", str(runs),
                    "--test-limit", "4", "--threads", "1", "--log-to", "tensorboard",
                    "--log-uri", str(tb)]) == 0
    sent = read_tensorboard(str(tb), "")
    keys = {json.loads(p.read_text())["run"]["hash"] for p in record_files(runs)}
    assert set(sent) == keys and len(keys) == 10  # five buckets, two arms


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def one_run(study, tmp_path_factory) -> Path:
    """A finished runs directory of one record."""
    runs = tmp_path_factory.mktemp("one-run") / "runs"
    small = write_config(runs.parent / "one.yaml", sweep_config(
        study, runs, n_buckets=1, max_epochs=1, tasks={"xnli": {"languages": ["de"],
                                                                "k": [1]}}))
    assert run_app(["sweep", str(small), "--workers", "0", "--threads", "1"]) == 0
    return small


@pytest.mark.parametrize("kind", ["mlflow", "wandb"])
def test_an_unreachable_tracker_is_said_once_and_early(one_run, tmp_path, capsys, monkeypatch,
                                                       kind):
    """Issue 61, item 7: a tracker server nothing answers at is one line within seconds
    (a timeout of ours, not the clients' retries of minutes), for runs log and for a
    sweep, which opens its tracker before it runs anything."""
    import time

    address = f"http://127.0.0.1:{_closed_port()}"
    if kind == "wandb":
        monkeypatch.setenv("WANDB_MODE", "online")
        monkeypatch.setenv("WANDB_BASE_URL", address)
    where = address if kind == "mlflow" else str(tmp_path / "wandb")
    runs = one_run.parent / "runs"
    capsys.readouterr()
    began = time.monotonic()
    assert run_app(["sweep", str(one_run), "--workers", "0", "--threads", "1",
                    "--log-to", kind, "--log-uri", where]) == 0  # all done: nothing to run
    assert run_app(["runs", "log", str(runs), "--to", kind, "--uri", where]) == 1
    assert time.monotonic() - began < 20
    err = capsys.readouterr().err
    said = f"{kind}: logging failed (ConnectionError: "
    assert err.count(said) == 2 and "nothing answers at 127.0.0.1:" in err
    assert len(record_files(runs)) == 1


def test_every_mlflow_request_is_bounded_unless_the_user_bounds_it(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from fsxlt.report import trackers

    seen = []
    real = MlflowClient.get_experiment_by_name

    def looking(self, name):
        seen.append({key: os.environ.get(key) for key in trackers.MLFLOW_BOUNDS})
        return real(self, name)

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", looking)
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
    trackers.open_tracker("mlflow", f"sqlite:///{tmp_path / 'm.db'}", "p")
    assert seen == [{**trackers.MLFLOW_BOUNDS, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3"}]
    assert "MLFLOW_HTTP_REQUEST_TIMEOUT" not in os.environ


def test_an_unreadable_record_is_named_where_it_is_left_out(study, tmp_path, capsys):
    """Issue 72, item 4: runs log and runs export name a record they cannot read; runs log
    refuses a folder that holds no run record in one line."""
    runs = tmp_path / "runs"
    assert run_app(["sweep", str(config(study, runs)), "--workers", "0", "--threads", "1"]) == 0
    broken = runs / "xnli" / "de" / "k1" / "full" / "01.json"
    broken.write_text("{not json")
    capsys.readouterr()
    assert run_app(["runs", "log", str(runs), "--to", "tensorboard", "--uri",
                    str(tmp_path / "tb")]) == 0
    out = capsys.readouterr()
    assert f"warning: {broken}: unreadable record (not JSON), not sent" in out.err
    assert (f"{N_RECORDS - 1} records sent to tensorboard, 0 sent before with the same bytes; "
            "0 error or unfinished records left out; 1 unreadable (named above)") in out.out
    assert run_app(["runs", "export", str(runs), str(tmp_path / "export")]) == 0
    out = capsys.readouterr()
    assert f"warning: {broken}: unreadable record (not JSON), not exported" in out.err
    assert "1 unreadable (named above)" in out.out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_app(["runs", "log", str(empty), "--to", "tensorboard", "--uri",
                    str(tmp_path / "tb2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run records" in err
    assert not (tmp_path / "tb2").exists()
