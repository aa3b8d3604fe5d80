"""The Ray executor on a real multi-node cluster (issue 52): ``ray.cluster_utils.Cluster``
with a head that runs nothing and worker nodes of one CPU each.

The worker nodes cannot open any file of the driver's folder (as on a cluster without a
shared disk): their raylets start with a ``sitecustomize`` on ``PYTHONPATH`` that installs
an audit hook refusing every ``open`` there. Sweeps must still finish with every record,
each the record a local sweep writes (timings aside); a node removed mid-sweep costs a
rerun of its group's unfinished runs, and no record is lost or written twice.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fsxlt.cli import run_app
from fsxlt.execution import parse_config, run_sweep
from fsxlt.training import strip_timings
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, ray_or_fail, sweep_config, write_config

NO_SHARED_DISK = """\
import os
import sys

_ROOT = os.environ.get("FSXLT_TEST_DRIVER_DISK")
if _ROOT:
    def _refuse(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(args[0]))
            if path == _ROOT or path.startswith(_ROOT + os.sep):
                raise PermissionError(f"no shared disk: {path} is on the driver's disk")
    sys.addaudithook(_refuse)

# a node-loss point the test controls: while FSXLT_TEST_GATE does not exist, a worker
# places one record, says so when it is about to place the next, and waits
_GATE = os.environ.get("FSXLT_TEST_GATE")
if _GATE:
    import time

    _placed = []

    def _hold(event, args):
        if event != "os.rename" or len(args) < 2 or os.path.exists(_GATE):
            return
        target = os.fsdecode(args[1]).replace(os.sep, "/")
        if not (target.endswith(".json") and "/full/" in target):
            return
        _placed.append(target)
        if len(_placed) > 1:
            with open(_GATE + ".held", "w") as held:
                held.write(str(os.getpid()))
            while not os.path.exists(_GATE):
                time.sleep(0.05)
    sys.addaudithook(_hold)
"""
ADAPT = {"n_buckets": 5, "max_epochs": 2}
ADAPT_RUNS = 2 * 2 * 5  # de and fr, K 1 and 2, five buckets: two groups of ten runs


@pytest.fixture(scope="module")
def driver_disk(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """The driver's folder (no worker node may open a file in it) and the study in it."""
    root = tmp_path_factory.mktemp("driver-disk")
    study = build_study(root / "study")
    study["lm"] = make_causal_lm_dir(root / "study" / "lm", "llama")
    return root, study


@pytest.fixture(scope="module")
def cluster(driver_disk, tmp_path_factory) -> Any:
    """A head with no CPUs and two worker nodes that cannot read the driver's disk."""
    ray_or_fail()
    from ray.cluster_utils import Cluster

    site = tmp_path_factory.mktemp("node-site")
    (site / "sitecustomize.py").write_text(NO_SHARED_DISK, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    gate = tmp_path_factory.mktemp("node-gate") / "open"
    gate.write_text("")  # open: no worker waits (the node-loss test closes it)
    env = {"PYTHONPATH": path, "FSXLT_TEST_DRIVER_DISK": str(driver_disk[0]),
           "FSXLT_RAY_CACHE": str(tmp_path_factory.mktemp("node-cache")),
           "FSXLT_TEST_GATE": str(gate)}
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": {
        "health_check_period_ms": 500, "health_check_failure_threshold": 2}})
    made.env = env
    made.workers = [made.add_node(num_cpus=1, env_vars=env) for _ in range(2)]
    made.wait_for_nodes()
    yield made
    made.shutdown()


def files_of(runs: Path) -> dict[str, Any]:
    """Every file below ``runs`` but the lock: records without timings, other files' text."""
    found = {}
    for path in sorted(p for p in runs.rglob("*") if p.is_file() and not p.name.startswith(".")):
        text = path.read_text(encoding="utf-8")
        found[path.relative_to(runs).as_posix()] = (
            strip_timings(json.loads(text)) if path.suffix == ".json" else text)
    return found


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two records (or files) differ, leaf by leaf."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(key), b.get(key), f"{where}/{key}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {str(a)[:80]} != {str(b)[:80]}"]


def assert_same(written: dict[str, Any], reference: dict[str, Any]) -> None:
    assert sorted(written) == sorted(reference)
    found = differences(written, reference)
    assert not found, found[:8]


def local_sweep(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """The records a local sweep of ``config`` writes (one thread, as a one-CPU task)."""
    assert run_app(["sweep", str(write_config(path, config)), "--workers", "0",
                    "--threads", "1", "--save-predictions"]) == 0
    return files_of(Path(config["out"]))


@pytest.fixture(scope="module")
def adapt_reference(driver_disk) -> dict[str, Any]:
    root, study = driver_disk
    return local_sweep(sweep_config(study, root / "runs-local", **ADAPT), root / "local.yaml")


def test_worker_nodes_cannot_read_the_drivers_disk(cluster, driver_disk):
    """The simulation holds: a task on a worker node is refused the driver's files."""
    import ray

    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=1)
        def read(path: str) -> str:
            try:
                return Path(path).read_text(encoding="utf-8")[:10]
            except PermissionError as err:
                return f"refused: {err}"

        assert ray.get(read.remote(str(driver_disk[1]["checkpoint"] / "config.json"))
                       ).startswith("refused: no shared disk")
    finally:
        ray.shutdown()


def test_a_sweep_without_a_shared_disk_writes_every_record(cluster, driver_disk,
                                                           adapt_reference, capsys):
    root, study = driver_disk
    runs = root / "runs-ray"
    config = write_config(root / "ray.yaml", sweep_config(study, runs, **ADAPT))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--executor", "ray", "--address", cluster.address,
                    "--save-predictions"]) == 0
    assert f"{ADAPT_RUNS} runs completed, 0 failed" in capsys.readouterr().out
    written = files_of(runs)
    assert sum(name.endswith(".predictions.jsonl") for name in written) == ADAPT_RUNS
    assert_same(written, adapt_reference)


def test_icl_and_lora_arms_without_a_shared_disk(cluster, driver_disk):
    """One ICL group (two arms, one with the similarity order's sentence encoder, and
    the zero-shot runs) and one LoRA group, each the local sweep's record for record."""
    root, study = driver_disk

    def config(out: Path) -> dict[str, Any]:
        icl = {"model": str(study["lm"]), "test_limit": 6,
               "arms": [{}, {"order": "similarity", "encoder": str(study["encoder"])}]}
        lora = {"model": str(study["lm"]), "lrs": [1e-3], "max_epochs": 2, "patience": 1,
                "test_limit": 6, "dev_limit": 4}
        return sweep_config(study, out, methods=[], n_buckets=2, icl=icl, lm_lora=lora,
                            tasks={"xnli": {"languages": ["de"], "k": [1]}})

    reference = local_sweep(config(root / "lm-local"), root / "lm-local.yaml")
    result = run_sweep(parse_config(config(root / "lm-ray")), executor="ray",
                       address=cluster.address, save_predictions=True)
    assert not result.failed and not result.not_run and len(result.completed) == 8
    assert_same(files_of(root / "lm-ray"), reference)
    arms = {path.split("/")[3] for path in reference if path.count("/") == 4}
    assert arms == {"icl", "icl-similarity", "lm-lora"}


def _kill(pid: int, limit: float = 30) -> None:
    """SIGKILL a process and wait until it is gone (a raylet killed leaves its workers
    running a moment: one let go on would finish its group on a node already lost)."""
    import signal

    def alive() -> bool:  # a zombie (killed, not yet reaped) runs nothing
        try:
            os.kill(pid, 0)
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (ProcessLookupError, FileNotFoundError):
            return False
        except OSError:
            return True
        return stat.rpartition(")")[2].split()[0] != "Z"

    deadline = time.monotonic() + limit
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while alive():
        assert time.monotonic() < deadline, f"worker {pid} alive {limit} s after SIGKILL"
        time.sleep(0.02)


def test_a_node_lost_mid_sweep_reruns_its_group(cluster, driver_disk, adapt_reference,
                                                monkeypatch):
    """One worker node runs a group; once a record of it is written, and while the node
    waits to place the next (a point the test controls), the node is lost and a new one
    joins: the group's unfinished runs run on the new node, every record
    is the local sweep's, and no record is written twice. (Last in this file: it changes
    the cluster.)"""
    import ray

    from fsxlt.execution import ray_executor

    root, study = driver_disk
    runs = root / "runs-lost"
    writes: Counter[str] = Counter()
    write_outputs = ray_executor.write_outputs

    def counted(out: Any, files: Any) -> None:
        writes.update(rel for rel, _ in files)
        write_outputs(out, files)

    monkeypatch.setattr(ray_executor, "write_outputs", counted)
    cluster.remove_node(cluster.workers.pop())  # one node of one CPU: one group at a time
    gate = Path(cluster.env["FSXLT_TEST_GATE"])
    held = Path(f"{gate}.held")
    notes: list[str] = []
    done: dict[str, Any] = {}
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    gate.unlink()  # the worker places a record of its group, then waits at the next
    try:
        sweep = threading.Thread(target=lambda: done.update(result=run_sweep(
            parse_config(sweep_config(study, runs, **ADAPT)), executor="ray",
            save_predictions=True, note=notes.append)), daemon=True)
        sweep.start()
        deadline = time.monotonic() + 240
        while not (held.exists() and any(runs.glob("xnli/*/k*/full/*.json"))):
            assert time.monotonic() < deadline and sweep.is_alive(), notes
            time.sleep(0.02)
        cluster.remove_node(cluster.workers.pop(0), allow_graceful=False)  # preempted:
        _kill(int(held.read_text()))  # every process of the node goes, its held worker too
        gate.write_text("")  # the new node's worker does not wait
        cluster.workers.append(cluster.add_node(num_cpus=1, env_vars=cluster.env))
        sweep.join(timeout=300)
    finally:
        gate.write_text("")
        ray.shutdown()
    result = done["result"]
    assert not result.failed and not result.not_run and len(result.completed) == ADAPT_RUNS
    lost = [line for line in notes if "a Ray node was lost" in line]
    assert len(lost) == 1 and "run again elsewhere" in lost[0], notes
    assert_same(files_of(runs), adapt_reference)
    assert writes and max(writes.values()) == 1
    assert len([rel for rel in writes if rel.endswith(".json")]) == ADAPT_RUNS
