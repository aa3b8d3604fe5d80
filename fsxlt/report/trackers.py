"""Run records sent to the trackers researchers watch: MLflow, Weights & Biases, TensorBoard.

One tracker run per record, K=0 records (``task/lang/k0/zero-shot``) included, named by
its coordinates (``task/lang/kK/arm/bucket``) and
tagged with them; the record's identity hash (``fsxlt.run_hash``) is the key and the
sha256 of its bytes (``fsxlt.record_sha256``) says which version of it was sent:

- a record already sent with the same bytes is not sent again (a second ``fsxlt runs
  log`` adds nothing);
- a record of the same identity with other bytes (a rerun after an error, a run
  replaced) replaces the tracker run it had, so each record has one.

What is sent: the parameters (the record's identity, flattened, and its arm and fsxlt
version), the dev curve of the chosen learning rate as a step metric (``dev_score`` at
each epoch), ``test_score``, ``dev_score`` and ``best_epoch``, and the record and its
predictions file as artifacts. Where each tracker keeps its runs:

- ``mlflow``: the tracking URI ``--log-uri`` (default ``MLFLOW_TRACKING_URI``; e.g.
  ``sqlite:///mlflow.db``, whose artifacts go to ``mlartifacts/`` beside it), experiment
  ``--log-project`` (default ``fsxlt``); a replaced run is deleted (MLflow keeps it in
  its trash);
- ``wandb``: project ``--log-project`` in the folder ``--log-uri`` (wandb's ``dir``; its
  mode from ``WANDB_MODE``, e.g. ``offline``), run id ``fsxlt-<identity hash>`` (a
  replaced run is resumed and updated); the folder also keeps which record bytes were
  sent (``fsxlt-wandb-sent.json``), as an offline run cannot be asked;
- ``tensorboard``: event files under ``--log-uri``, one folder per record
  (``<task>/<lang>/k<K>/<arm>/<bucket>``), with the record, its predictions and
  ``fsxlt_sent.json`` (its key and bytes' hash) beside them; a replaced run's folder is
  written anew.

Nothing is required: without a tracker's extra, ``--log-to`` is refused in one line
naming it. A tracker that fails (a server down) never fails a run or loses a record:
:class:`RecordLogger` says so once and sends nothing more in that command; ``fsxlt runs
log`` sends the records later.

A tracker behind a network address is asked first, with a timeout of ours
(:data:`CONNECT_TIMEOUT_S`), whether anything answers there: an MLflow server at an
``http(s)://`` URI, W&B's server unless ``WANDB_MODE`` is ``offline`` or ``disabled``.
One that does not is said once, as the command opens it, not after minutes of the
clients' own retries; and every MLflow request is bounded (:data:`MLFLOW_BOUNDS`: one retry
of 10 s at most, unless the user's environment sets them), W&B's start to
:data:`WANDB_INIT_TIMEOUT_S`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, loads_strict, sha256_text
from fsxlt.report.records import dev_curve
from fsxlt.study.runs import (
    ZERO_SHOT_FORMAT,
    arm_of,
    bucket_stem,
    is_complete,
    predictions_path,
)

TRACKERS = {"mlflow": "mlflow", "wandb": "wandb", "tensorboard": "tensorboard"}  # extra
CONNECT_TIMEOUT_S = 5.0
# MLflow's own defaults wait minutes on a server that is down (7 retries with backoff 2,
# 120 s each); these bound each request, where the user's environment does not say
MLFLOW_BOUNDS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
WANDB_INIT_TIMEOUT_S = 30.0
SENT_FILE = "fsxlt_sent.json"
WANDB_SENT = "fsxlt-wandb-sent.json"


@dataclass
class Entry:
    """What a tracker receives of one record."""

    key: str                      # the record's identity hash
    digest: str                   # the sha256 of its bytes
    name: str                     # task/lang/kK/arm/bucket
    tags: dict[str, str]
    params: dict[str, str]
    curve: list[tuple[int, float]]
    metrics: dict[str, float]
    files: list[Path] = field(default_factory=list)


def _readable(path: Path) -> bool:
    """Whether ``path`` holds a JSON object (a record, finished or not)."""
    try:
        return isinstance(loads_strict(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def _zero_shot_entry(path: Path, text: str, record: dict[str, Any]) -> Entry | None:
    """A K=0 record's entry (the start's zero-shot score, copied by a sweep): keyed by its
    task, language and start, named ``task/lang/k0/zero-shot``."""
    start = record.get("start") if isinstance(record.get("start"), dict) else {}
    if record.get("status") != "ok" or not isinstance(record.get("test_score"), (int, float)):
        return None
    coordinates = {"task": str(record.get("task")), "language": str(record.get("language")),
                   "k": "0", "arm": "zero-shot", "bucket": ""}
    identity = {"task": coordinates["task"], "language": coordinates["language"],
                "start": start.get("fingerprint") or start.get("id") or start.get("encoder")}
    key = "zero-shot:" + sha256_text(json.dumps(identity, sort_keys=True))
    params = {name: value if isinstance(value, str) else json.dumps(value, sort_keys=True)
              for name, value in sorted(start.items())}
    params.update(arm="zero-shot", metric=str(record.get("metric") or ""))
    name = f"{coordinates['task']}/{coordinates['language']}/k0/zero-shot"
    return Entry(key, sha256_text(text), name, {**coordinates, "fsxlt.run_hash": key},
                 params, [], {"test_score": float(record["test_score"])}, [path])


def entry_of(path: Path) -> Entry | None:
    """The entry of the record at ``path``: a finished run record's, or a K=0 record's;
    None for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
        record = loads_strict(text)
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("format") == ZERO_SHOT_FORMAT:
        return _zero_shot_entry(path, text, record)
    if not is_complete(record) or not isinstance(record.get("bucket"), dict) \
            or record.get("k") is None or not isinstance(record.get("run"), dict):
        return None
    run = record["run"]
    stem = bucket_stem(record["bucket"])
    arm = str(run.get("arm") or arm_of(record))
    coordinates = {"task": str(record["task"]), "language": str(record["language"]),
                   "k": str(record["k"]), "arm": arm, "bucket": stem}
    key = str(run.get("hash") or record.get("config_hash"))
    params = {name: value if isinstance(value, str) else json.dumps(value, sort_keys=True)
              for name, value in sorted((run.get("identity") or {}).items())}
    params.update(arm=arm, fsxlt_version=str(record.get("versions", {}).get("fsxlt", "")))
    metrics = {"test_score": float(record["test_score"])}
    for name in ("dev_score", "best_epoch"):
        if isinstance(record.get(name), (int, float)) and not isinstance(record[name], bool):
            metrics[name] = float(record[name])
    files = [path] + [p for p in [predictions_path(path)] if p.is_file()]
    name = f"{coordinates['task']}/{coordinates['language']}/k{coordinates['k']}/{arm}/{stem}"
    return Entry(key, sha256_text(text), name,
                 {**coordinates, "fsxlt.run_hash": key},
                 params, dev_curve(record), metrics, files)


# --------------------------------------------------------------------------- the trackers

@contextlib.contextmanager
def quiet_store_setup() -> Iterator[None]:
    """MLflow's SQL store setting itself up without SQLAlchemy's deprecation warning about
    MLflow's own mappings (``noload``): nothing a user of fsxlt can act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"The ``noload`` loader strategy is deprecated")
        yield


def check_reachable(uri: str, what: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`ConnectionError` (one line) unless something answers at the host and
    port of the ``http(s)://`` ``uri`` within ``timeout`` seconds; other URIs (a file, an
    SQLite store) have nothing to reach."""
    from fsxlt.identity import connection_problem, url_host_port

    target = url_host_port(uri)
    why = connection_problem(*target, timeout) if target is not None else None
    if why is not None:
        raise ConnectionError(f"{what} {uri}: nothing answers at {target[0]}:{target[1]} "
                              f"({why}, within {timeout:g} s)")


@contextlib.contextmanager
def bounded_mlflow() -> Iterator[None]:
    """MLflow's HTTP requests bounded by :data:`MLFLOW_BOUNDS` where the environment sets
    no bound of its own (restored afterwards)."""
    added = [name for name in MLFLOW_BOUNDS if name not in os.environ]
    os.environ.update({name: MLFLOW_BOUNDS[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


class _Mlflow:
    def __init__(self, where: str | None, project: str | None):
        from mlflow.tracking import MlflowClient

        uri = where or os.environ.get("MLFLOW_TRACKING_URI") or None
        name = project or "fsxlt"
        if uri:
            check_reachable(uri, "MLflow tracking server")
        with quiet_store_setup(), bounded_mlflow():  # the client's store is opened here
            self.client = MlflowClient(tracking_uri=uri)
            found = self.client.get_experiment_by_name(name)
            self.experiment = found.experiment_id if found else \
                self.client.create_experiment(name, artifact_location=_beside_sqlite(uri))

    def _find(self, key: str) -> Any:
        found = self.client.search_runs([self.experiment],
                                        filter_string=f"tags.`fsxlt.run_hash` = '{key}'")
        return found[0] if found else None

    def sent(self, entry: Entry) -> bool:
        with bounded_mlflow():
            run = self._find(entry.key)
        return run is not None and run.data.tags.get("fsxlt.record_sha256") == entry.digest

    def send(self, entry: Entry) -> None:
        with bounded_mlflow():
            self._send(entry)

    def _send(self, entry: Entry) -> None:
        from mlflow.entities import Metric, Param, RunTag

        old = self._find(entry.key)
        if old is not None:
            self.client.delete_run(old.info.run_id)
        tags = {**entry.tags, "fsxlt.record_sha256": entry.digest}
        run_id = self.client.create_run(self.experiment, run_name=entry.name,
                                        tags=tags).info.run_id
        now = int(time.time() * 1000)
        metrics = [Metric("dev_score", score, now, epoch) for epoch, score in entry.curve]
        metrics += [Metric(name, value, now, 0) for name, value in entry.metrics.items()
                    if name != "dev_score" or not entry.curve]
        params = [Param(k, v[:6000]) for k, v in entry.params.items()]  # MLflow's cap
        self.client.log_batch(run_id, metrics=metrics, params=params,
                              tags=[RunTag("mlflow.runName", entry.name)])
        for file in entry.files:
            self.client.log_artifact(run_id, str(file))
        self.client.set_terminated(run_id)


def _beside_sqlite(uri: str | None) -> str | None:
    """An SQLite store's artifacts in ``mlartifacts/`` beside its file (MLflow's default
    is the working directory's); other stores keep their own default."""
    if uri and uri.startswith("sqlite:///"):
        return (Path(uri[len("sqlite:///"):]).resolve().parent / "mlartifacts").as_uri()
    return None


class _Wandb:
    def __init__(self, where: str | None, project: str | None):
        import wandb

        if not where:
            raise FsxltError("--log-to wandb needs --log-uri DIR: the folder wandb writes to")
        self.wandb, self.dir, self.project = wandb, Path(where), project or "fsxlt"
        if os.environ.get("WANDB_MODE", "online") not in ("offline", "disabled", "dryrun"):
            check_reachable(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai",
                            "W&B server")
        self.dir.mkdir(parents=True, exist_ok=True)
        ledger = self.dir / WANDB_SENT
        self.ledger = json.loads(ledger.read_text(encoding="utf-8")) if ledger.is_file() else {}

    @staticmethod
    def run_id(entry: Entry) -> str:
        return "fsxlt-" + "".join(c for c in entry.key.split(":")[-1] if c.isalnum())[:48]

    def sent(self, entry: Entry) -> bool:
        return self.ledger.get(self.run_id(entry)) == entry.digest

    def send(self, entry: Entry) -> None:
        run = self.wandb.init(project=self.project, dir=str(self.dir), id=self.run_id(entry),
                              name=entry.name, resume="allow", reinit="create_new",
                              config={**entry.params,
                                      **{f"tag.{k}": v for k, v in entry.tags.items()},
                                      "fsxlt.record_sha256": entry.digest},
                              tags=[entry.tags[k] for k in ("task", "language", "arm")],
                              settings=self.wandb.Settings(
                                  silent=True, init_timeout=WANDB_INIT_TIMEOUT_S))
        try:
            for epoch, score in entry.curve:
                run.log({"dev_score": score}, step=epoch)
            run.summary.update(entry.metrics)
            artifact = self.wandb.Artifact(f"record-{self.run_id(entry)}", type="fsxlt-record")
            for file in entry.files:
                artifact.add_file(str(file))
            run.log_artifact(artifact)
        finally:
            run.finish()
        self.ledger[self.run_id(entry)] = entry.digest
        atomic_write_json(self.dir / WANDB_SENT, self.ledger)


class _TensorBoard:
    def __init__(self, where: str | None, project: str | None):
        from torch.utils.tensorboard import SummaryWriter

        if not where:
            raise FsxltError("--log-to tensorboard needs --log-uri DIR: the log folder")
        self.writer_class, self.root = SummaryWriter, Path(where)

    def _folder(self, entry: Entry) -> Path:
        return self.root / entry.name

    def sent(self, entry: Entry) -> bool:
        marker = self._folder(entry) / SENT_FILE
        try:
            return json.loads(marker.read_text(encoding="utf-8")) == {
                "key": entry.key, "record_sha256": entry.digest}
        except (OSError, ValueError):
            return False

    def send(self, entry: Entry) -> None:
        folder = self._folder(entry)
        if folder.exists():
            shutil.rmtree(folder)
        writer = self.writer_class(log_dir=str(folder))
        try:
            for epoch, score in entry.curve:
                writer.add_scalar("dev_score", score, epoch)
            for name, value in entry.metrics.items():
                if name != "dev_score" or not entry.curve:
                    writer.add_scalar(name, value, 0)
            writer.add_text("params", json.dumps(entry.params, sort_keys=True), 0)
        finally:
            writer.close()
        for file in entry.files:
            shutil.copyfile(file, folder / file.name)
        atomic_write_json(folder / SENT_FILE, {"key": entry.key, "record_sha256": entry.digest})


_BACKENDS = {"mlflow": _Mlflow, "wandb": _Wandb, "tensorboard": _TensorBoard}


def open_tracker(kind: str, where: str | None = None, project: str | None = None) -> Any:
    """The tracker ``kind``; one line when it is unknown or its extra is not installed."""
    if kind not in TRACKERS:
        raise FsxltError(f"--log-to {kind!r}: one of {', '.join(TRACKERS)}")
    module = "torch.utils.tensorboard" if kind == "tensorboard" else kind
    try:
        __import__(module)
        if kind == "tensorboard":
            __import__("tensorboard")
    except ImportError:
        raise FsxltError(f"--log-to {kind} needs {TRACKERS[kind]}: pip install "
                         f"'fsxlt[{TRACKERS[kind]}]'") from None
    return _BACKENDS[kind](where, project)


class RecordLogger:
    """Sends records to one tracker for one command, and never raises: the first failure
    is said once (``say``) and the tracker is left alone for the rest of the command."""

    def __init__(self, tracker: Any, kind: str, say: Callable[[str], None]):
        self.tracker, self.kind, self.say = tracker, kind, say
        self.failed = False
        self.counts = {"sent": 0, "unchanged": 0}
        self.unreadable: list[str] = []  # record files that are not JSON records at all

    def log(self, path: str | Path) -> str:
        """Send the record at ``path``: ``sent``, ``unchanged``, ``skipped`` (no finished
        run record) or ``off`` (the tracker failed earlier)."""
        if self.failed:
            return "off"
        entry = entry_of(Path(path))
        if entry is None:
            if not _readable(Path(path)):
                self.unreadable.append(str(path))
            return "skipped"
        try:
            state = "unchanged" if self.tracker.sent(entry) else "sent"
            if state == "sent":
                self.tracker.send(entry)
        except Exception as err:  # a tracker must never fail a run or lose a record
            self.fail(err)
            return "off"
        self.counts[state] += 1
        return state

    def fail(self, err: Exception) -> None:
        """Say once that the tracker failed; send nothing more."""
        self.failed = True
        first = (str(err).strip().splitlines() or [""])[0][:200]
        self.say(f"{self.kind}: logging failed ({type(err).__name__}: {first}); the records "
                 "are written, send them later with fsxlt runs log")

    def log_all(self, paths: Iterable[str | Path]) -> None:
        for path in paths:
            self.log(path)


def tracker_logger(kind: str | None, where: str | None, project: str | None,
                   say: Callable[[str], None]) -> RecordLogger | None:
    """A :class:`RecordLogger` for ``--log-to kind`` (None: no tracker)."""
    if kind is None:
        return None
    try:
        tracker = open_tracker(kind, where, project)
    except FsxltError:  # an unknown tracker, a missing extra, a missing --log-uri
        raise
    except Exception as err:  # a store that cannot be reached: the runs still run
        logger = RecordLogger(None, kind, say)
        logger.fail(err)
        return logger
    return RecordLogger(tracker, kind, say)
