"""What travels between a sweep's driver and its Ray workers (fsxlt.execution.shipping), and
the driver's loop (fsxlt.execution.ray_executor), without a cluster: inputs put once per
content and laid out byte for byte, paths mapped both ways whole-name only, outputs kept
inside RUNS_DIR, and node loss, a task's own failure and a crashed worker each handled as
documented. The cluster itself: tests/test_ray_cluster.py."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from fsxlt.errors import FsxltError
from fsxlt.execution.ray_executor import NODE_LOSS_RETRIES, _Driver, _waiting_note
from fsxlt.execution.shipping import (
    Relocation,
    Shipper,
    _map_strings,
    group_inputs,
    take_outputs,
    unpack,
    write_outputs,
)
from fsxlt.execution.spec import RunSpec
from fsxlt.execution.worker import Outcome
from fsxlt.fileio import dumps_json
from fsxlt.study.runs import read_record


class Counting:
    """``ray.put``/``ray.get`` stand-ins that count what they move."""

    def __init__(self) -> None:
        self.puts: list[bytes] = []
        self.gets = 0

    def put(self, data: Any) -> int:
        self.puts.append(bytes(data))
        return len(self.puts) - 1

    def get(self, ref: int) -> bytes:
        self.gets += 1
        return self.puts[ref]


def make_run(tmp_path: Path, index: int = 0, **changes: Any) -> RunSpec:
    sets = tmp_path / "buckets" / "xnli" / "de" / "k1"
    fields = dict(task="xnli", language="de", k=1, index=index, method="full",
                  source_training=True, start=str(tmp_path / "ckpt"),
                  bucket_path=str(sets / f"0{index}.json"), bucket_sha256="b",
                  dev_path=str(sets / "dev-remaining.jsonl"),
                  test_path=str(tmp_path / "data" / "test-de.tsv"), lrs=(1e-3,), seed=0,
                  max_epochs=1, patience=1, max_seq_length=64,
                  record_path=str(tmp_path / "runs" / "xnli" / "de" / "k1" / "full" /
                                  f"0{index}.json"),
                  config_hash="h", identity_json=json.dumps({"start": str(tmp_path / "ckpt")}))
    fields.update(changes)
    return RunSpec(**fields)


def lay_out(tmp_path: Path) -> None:
    sets = tmp_path / "buckets" / "xnli" / "de" / "k1"
    sets.mkdir(parents=True)
    for name in ("00.json", "01.json", "manifest.json", "dev-remaining.jsonl"):
        (sets / name).write_text(f"{name}\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test-de.tsv").write_text("same\n", encoding="utf-8")
    (tmp_path / "ckpt" / ".cache").mkdir(parents=True)
    (tmp_path / "ckpt" / "config.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "ckpt" / ".cache" / "junk").write_text("not shipped", encoding="utf-8")


# --------------------------------------------------------------------------- inputs

def test_a_group_ships_its_sets_files_and_start_each_content_once(tmp_path):
    lay_out(tmp_path)
    runs = [make_run(tmp_path, 0), make_run(tmp_path, 1)]
    inputs = group_inputs(runs)
    # the dev file lies in the bucket's set folder: shipped with it, not apart
    assert inputs == sorted([str(tmp_path / "buckets/xnli/de/k1"), str(tmp_path / "ckpt"),
                             str(tmp_path / "data/test-de.tsv")])
    relative = make_run(tmp_path, 0, dev_path=os.path.relpath(runs[0].dev_path))
    assert os.path.relpath(runs[0].dev_path) in group_inputs([relative])  # another spelling
    (tmp_path / "data" / "copy.tsv").write_text("same\n", encoding="utf-8")
    moved = Counting()
    shipper = Shipper(moved.put)
    parcels = shipper.parcels_for(runs) + shipper.parcels_for(runs)  # a second group
    parcels.append(shipper.parcel(str(tmp_path / "data" / "copy.tsv")))  # same content
    assert sorted(moved.puts) == sorted({b"00.json\n", b"01.json\n", b"manifest.json\n",
                                         b"dev-remaining.jsonl\n", b"same\n", b"{}\n"})
    ckpt = shipper.parcel(str(tmp_path / "ckpt"))
    assert [blob.rel for blob in ckpt.blobs] == ["config.json"]  # no hidden caches
    node = tmp_path / "node"
    local = unpack(parcels, moved.get, node)
    for parcel in parcels:
        origin, copy = Path(parcel.path), Path(local[parcel.path])
        assert copy.name == origin.name and not str(copy).startswith(str(tmp_path / "buckets"))
        if parcel.is_dir:
            assert sorted(p.name for p in copy.iterdir()) == [b.rel for b in parcel.blobs]
        else:
            assert copy.read_bytes() == origin.read_bytes()
    fetched = moved.gets
    assert unpack(parcels, moved.get, node) == local and moved.gets == fetched  # cached


def test_a_blob_that_arrives_changed_is_refused(tmp_path):
    lay_out(tmp_path)
    moved = Counting()
    parcel = Shipper(moved.put).parcel(str(tmp_path / "data" / "test-de.tsv"))
    moved.puts[0] = b"other\n"
    with pytest.raises(FsxltError, match="arrived changed"):
        unpack([parcel], moved.get, tmp_path / "node")


def test_a_changed_input_is_a_new_parcel(tmp_path):
    lay_out(tmp_path)
    moved = Counting()
    first = Shipper(moved.put).parcel(str(tmp_path / "ckpt"))
    (tmp_path / "ckpt" / "config.json").write_text('{"changed": 1}\n', encoding="utf-8")
    again = Shipper(moved.put).parcel(str(tmp_path / "ckpt"))
    assert first.digest != again.digest
    before = Path(unpack([first], moved.get, tmp_path / "node")[first.path])
    after = Path(unpack([again], moved.get, tmp_path / "node")[again.path])
    assert before != after and (before / "config.json").read_text() == "{}\n"
    assert (after / "config.json").read_text() == '{"changed": 1}\n'


# --------------------------------------------------------------------------- paths

@pytest.mark.parametrize("driver", ["/d/sets", "/d/é t\"s", "rel/sets"])
def test_paths_map_whole_names_both_ways(driver):
    relocation = Relocation({driver: "/node/cache/ab12/sets", "/d/runs": "/node/scratch"})
    there = relocation
    assert there(f"{driver}/00.json") == "/node/cache/ab12/sets/00.json"
    assert there(driver) == "/node/cache/ab12/sets"
    for other in (f"{driver}2/00.json", f"{driver}.bak", f"/x{driver}", f"a{driver}"):
        assert there(other) == other  # another name that begins or ends alike
    companions = json.dumps({"fr": [f"{driver}/01.json", "sha"]})
    assert json.loads(there(companions))["fr"][0] == "/node/cache/ab12/sets/01.json"
    record = {"bucket": {"path": f"{driver}/00.json"}, "note": f"read {driver} twice: {driver}"}
    text = dumps_json(there(record))
    assert "/node/" in text and relocation.text_back(text, in_json=True) == dumps_json(record)
    plain = f"{driver}/00.json\tB-PER\n"
    assert relocation.text_back(there(plain), in_json=False) == plain


def test_a_specs_identity_travels_as_planned(tmp_path):
    run = make_run(tmp_path, 0, companion_buckets=json.dumps(
        {"fr": [str(tmp_path / "buckets/xnli/fr/k1/00.json"), "s"]}))
    relocation = Relocation({str(tmp_path / "buckets"): "/n/b", str(tmp_path / "ckpt"): "/n/c",
                             str(tmp_path / "runs"): "/n/r"})
    moved = relocation(run)
    assert moved.start == "/n/c" and moved.record_path.startswith("/n/r/xnli/de/k1/full/")
    assert json.loads(moved.companion_buckets)["fr"][0] == "/n/b/xnli/fr/k1/00.json"
    assert moved.identity_json == run.identity_json and moved.config_hash == run.config_hash
    assert moved.id == run.id and moved.arm == run.arm and moved.group_key != run.group_key
    assert relocation(("x", [run])) == ("x", [moved])
    assert _map_strings(run, lambda text: text) is run  # nothing changed: the same object

    @dataclasses.dataclass(frozen=True)
    class Derived:
        name: str
        where: str = dataclasses.field(init=False, default=str(tmp_path / "ckpt"))

    with pytest.raises(FsxltError, match="no init field"):
        relocation(Derived("a"))


# --------------------------------------------------------------------------- outputs

def test_outputs_come_back_record_last_and_stay_inside_runs(tmp_path):
    scratch = tmp_path / "scratch"
    folder = scratch / "xnli/de/k1/full"
    folder.mkdir(parents=True)
    (folder / "00.json").write_text(json.dumps({"p": f"{scratch}/x", "d": "/n/b/00.json"}))
    (folder / "00.predictions.jsonl").write_text('{"id": 1}\n')
    (folder / ".00.json.host-1.abc.tmp").write_text("half")
    relocation = Relocation({"/d/b": "/n/b", str(tmp_path / "runs"): str(scratch)})
    files = take_outputs(scratch, relocation, "xnli/de/k1/full/00.json")
    assert [rel for rel, _ in files] == ["xnli/de/k1/full/00.predictions.jsonl",
                                         "xnli/de/k1/full/00.json"]
    assert json.loads(files[1][1]) == {"p": f"{tmp_path / 'runs'}/x", "d": "/d/b/00.json"}
    assert [p.name for p in folder.iterdir()] == [".00.json.host-1.abc.tmp"]
    write_outputs(tmp_path / "runs", files)
    assert (tmp_path / "runs/xnli/de/k1/full/00.json").read_bytes() == files[1][1]
    for bad in ("../escape.json", "/etc/x.json", "a/../../b.json"):
        with pytest.raises(FsxltError, match="no path inside"):
            write_outputs(tmp_path / "runs", [(bad, b"{}")])
    assert not (tmp_path / "escape.json").exists()


# --------------------------------------------------------------------------- the driver

class FakeRay:
    """Ray's wait/get/put over scripted streams: a stream is a list of values, where an
    exception is what ``ray.get`` raises at that point."""

    def __init__(self, scripts: list[list[Any]]):
        self.scripts = scripts
        self.submitted: list[list[str]] = []

    def wait(self, refs: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return refs[:1], refs[1:]

    def get(self, value: Any) -> Any:
        if isinstance(value, BaseException):
            raise value
        return value

    def put(self, value: Any) -> Any:
        return value


def drive(tmp_path: Path, scripts: list[list[Any]], group: list[RunSpec]) -> tuple[
        FakeRay, list[Outcome], list[str]]:
    fake, outcomes, said = FakeRay(scripts), [], []
    driver = _Driver(fake, [group], outcomes.append, said.append, str(tmp_path / "runs"))

    def submit(index: int) -> Any:
        fake.submitted.append([run.id for run in driver.left[index]])
        return iter(fake.scripts[len(fake.submitted) - 1])

    driver.run(submit)
    return fake, outcomes, said


def sent(run: RunSpec, tmp_path: Path) -> tuple[Outcome, list[tuple[str, bytes]]]:
    rel = Path(run.record_path).relative_to(tmp_path / "runs").as_posix()
    return Outcome(run.id, True), [(rel, b'{"status": "ok"}\n')]


def test_a_lost_node_reruns_only_the_unfinished_runs(tmp_path):
    from ray.exceptions import NodeDiedError

    group = [make_run(tmp_path, i) for i in range(3)]
    scripts = [[sent(group[0], tmp_path), NodeDiedError("gone")],
               [sent(group[1], tmp_path), sent(group[2], tmp_path)]]
    fake, outcomes, said = drive(tmp_path, scripts, group)
    assert fake.submitted == [[r.id for r in group], [group[1].id, group[2].id]]
    assert [o.run_id for o in outcomes] == [r.id for r in group]
    assert said == ["a Ray node was lost (NodeDiedError): the 2 unfinished runs of the "
                    "group xnli/de run again elsewhere"]
    assert all(Path(run.record_path).is_file() for run in group)


def test_a_group_that_keeps_losing_its_node_is_left_not_run(tmp_path):
    from ray.exceptions import NodeDiedError

    group = [make_run(tmp_path, 0)]
    scripts = [[NodeDiedError("gone")] for _ in range(NODE_LOSS_RETRIES + 1)]
    fake, outcomes, said = drive(tmp_path, scripts, group)
    assert len(fake.submitted) == NODE_LOSS_RETRIES + 1 and outcomes == []
    assert "not run (start the sweep again)" in said[-1] and len(said) == NODE_LOSS_RETRIES + 1


def test_a_tasks_own_failure_leaves_error_records_and_a_crash_leaves_runs_not_run(tmp_path):
    from ray.exceptions import RayTaskError, WorkerCrashedError

    group = [make_run(tmp_path, i) for i in range(2)]
    failing = RayTaskError("ray_group", "trace", FsxltError("an input's bytes arrived changed"))
    _, outcomes, said = drive(tmp_path, [[sent(group[0], tmp_path), failing]], group)
    assert [o.ok for o in outcomes] == [True, False] and said == []
    error = read_record(group[1].record_path)
    assert error["status"] == "error" and error["stage"] == "ray"
    assert "arrived changed" in error["error"]
    crashed = [make_run(tmp_path / "b", i) for i in range(2)]
    _, outcomes, said = drive(tmp_path / "b", [[WorkerCrashedError()]], crashed)
    assert outcomes == [] and said == ["a Ray worker of the group xnli/de died "
                                       "(WorkerCrashedError); 2 runs not run"]


def test_the_driver_says_when_no_node_fits_a_task():
    nodes = [{"Alive": True, "Resources": {"CPU": 4.0}},
             {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 1.0}}]
    assert _waiting_note(nodes, 2, 0) is None
    note = _waiting_note(nodes, 1, 0.5)
    assert note.startswith("waiting for a Ray node with 1 CPUs and 0.5 GPUs: none of the 1 ")


# --------------------------------------------------------------------------- the address

def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed once the block ends: nothing listens there


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> dict[str, Path]:
    from tests.sweep_fixtures import build_study

    return build_study(tmp_path_factory.mktemp("address-study"))


@pytest.mark.parametrize("address, says", [
    ("127.0.0.1:{port}", "no Ray cluster answers at 127.0.0.1:{port}"),
    ("ray://127.0.0.1:{port}", "no Ray cluster answers at 127.0.0.1:{port}"),
    ("not an address", "not HOST:PORT, auto or ray://HOST:PORT"),
    ("auto", "no running Ray cluster found on this machine"),
])
def test_a_bad_ray_address_is_one_line_in_seconds_before_anything_is_written(
        small_study, tmp_path, capsys, monkeypatch, address, says):
    """Issue 61, item 7: refused by a timeout of ours before the runs marker or the K=0
    records, never a Ray traceback or a wait of minutes."""
    import time

    import ray._private.services as services

    from fsxlt.cli import run_app
    from tests.sweep_fixtures import sweep_config, write_config

    monkeypatch.setattr(services, "canonicalize_bootstrap_address", lambda addr: None)
    port = _closed_port()
    study = small_study
    out = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, out, methods=["fc"], n_buckets=2, max_epochs=1,
        tasks={"xnli": {"languages": ["de"], "k": [1]}}))
    capsys.readouterr()
    began = time.monotonic()
    code = run_app(["sweep", str(config), "--executor", "ray", "--address",
                    address.format(port=port)])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - began < 30
    assert err.count("\n") == 1 and says.format(port=port) in err, err
    assert "ray start --head" in err and not out.exists()
