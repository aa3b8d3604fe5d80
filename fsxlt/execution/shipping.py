"""What travels between a sweep's driver and its Ray workers: a cluster with no shared disk.

Inputs go out through Ray's object store. The driver names the files and folders a
group of runs reads (:func:`group_inputs`): an adapting run's bucket set folder (the
bucket, its manifest and remaining dev set), its dev, test, predict and source files,
its task YAML and its start when the start is a local checkpoint; a causal-LM run's
bucket set, test (and dev) files, task YAML, model folder and sentence encoder. A name
that is no path on the driver (a hub model id, resolved to its commit while planning)
is not shipped: each node downloads it from the hub into its own cache, so a model's
gigabytes reach the nodes from the hub's servers in parallel rather than one by one
through the driver's network, and a node that has it skips the download.

:class:`Shipper` (the driver) reads each file once and puts its bytes in the object
store once per content (sha256), however many groups and paths read it; a
:class:`Parcel` lists one file or folder as blobs (relative path, sha256, object ref).
:func:`unpack` (a worker) writes each blob once into its node's content-addressed
cache (:func:`cache_dir`), checks it against its sha256, and lays each parcel out
under ``inputs/<parcel digest>/<name>``.

Records come back through Ray. :class:`Relocation` maps each input path, as the runs
name it, to its copy on the node, and the runs directory to a scratch folder; the
worker runs a copy of the group's specs with every string mapped (JSON inside strings
too), and :func:`take_outputs` takes back what a run wrote in the scratch folder, its
text with the node's paths written back as the driver's, so a record reads as a local
sweep's. The driver writes them into RUNS_DIR (:func:`write_outputs`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text
from fsxlt.identity import model_files

CACHE_ENV = "FSXLT_RAY_CACHE"
# what a run is (hashed into its record's identity) travels as the driver planned it:
# facts about the run, not paths a worker opens
IDENTITY_FIELDS = frozenset({"identity", "identity_json", "config_hash"})
JSON_SUFFIXES = (".json", ".jsonl")


@dataclass(frozen=True)
class Blob:
    """One file of a parcel: where it lies in the parcel, its content hash, its bytes."""

    rel: str        # "" for a parcel that is one file
    sha256: str
    size: int
    ref: Any        # the object ref of its bytes (a uint8 array)


@dataclass(frozen=True)
class Parcel:
    """One input of a group, as the runs name it on the driver, and its files' blobs."""

    path: str
    is_dir: bool
    blobs: tuple[Blob, ...]

    @property
    def name(self) -> str:
        return Path(self.path).name or "input"

    @property
    def digest(self) -> str:
        """What the parcel holds (its name, kind and every file's path and hash)."""
        listing = [self.name, "dir" if self.is_dir else "file"]
        listing += [f"{blob.rel}\0{blob.sha256}" for blob in self.blobs]
        return hashlib.sha256("\n".join(listing).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- the driver

def run_inputs(run: Any) -> list[str]:
    """The paths one run reads, as it names them: a bucket's whole set folder (the bucket
    file reads its manifest), every data file, the task YAML, a local start or model."""
    from fsxlt.execution.icl_runs import CausalLmSweepRun

    if isinstance(run, CausalLmSweepRun):
        inner, settings = run.run, run.settings
        spec = getattr(inner, "spec", None)
        named = [inner.test_path, getattr(inner, "dev_path", ""), inner.predict_path,
                 getattr(spec, "config_path", ""), settings.model, settings.gguf_file,
                 getattr(settings, "encoder", None)]
        buckets = [inner.bucket_path]
    else:
        companions = [path for path, _sha in json.loads(run.companion_buckets).values()]
        named = [run.dev_path, run.test_path, run.predict_path, run.source_train_path,
                 run.source_dev_path, run.task_ref, run.start]
        buckets = [run.bucket_path, *companions]
    sets = [str(Path(path).parent) for path in buckets if path]
    return [path for path in [*sets, *named] if path and os.path.exists(path)]


def group_inputs(runs: Iterable[Any]) -> list[str]:
    """Every path a group reads, once, less those named inside another input's folder
    (``<folder>/<rest>`` as written: the folder's copy maps them; a path that reaches the
    same file by another spelling travels on its own)."""
    found = sorted({path for run in runs for path in run_inputs(run)})
    folders = [path.rstrip("/") + "/" for path in found if os.path.isdir(path)]
    return [path for path in found
            if not any(path.startswith(folder) for folder in folders)]


class Shipper:
    """The driver's side: each file's content put in the object store once.

    ``put`` is ``ray.put``; a file is read once per (path, size, mtime) and its content
    put once per sha256, so a start shared by many groups (or named by two paths) costs
    one put."""

    def __init__(self, put: Callable[[Any], Any]):
        self.put = put
        self.by_content: dict[str, Any] = {}
        self.by_file: dict[tuple[str, int, int], tuple[str, int]] = {}
        self.parcels: dict[str, Parcel] = {}
        self.bytes_put = 0

    def parcel(self, path: str) -> Parcel:
        if path not in self.parcels:
            root = Path(path)
            if root.is_dir():  # the files fingerprints are made of (no hidden caches)
                files = [(file.relative_to(root).as_posix(), file)
                         for file in model_files(root)]
            else:
                files = [("", root)]
            blobs = tuple(self._blob(rel, file) for rel, file in files)
            self.parcels[path] = Parcel(path, root.is_dir(), blobs)
        return self.parcels[path]

    def parcels_for(self, runs: Sequence[Any]) -> list[Parcel]:
        return [self.parcel(path) for path in group_inputs(runs)]

    def _blob(self, rel: str, file: Path) -> Blob:
        import numpy as np

        stat = file.stat()
        key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self.by_file:
            data = (np.asarray(np.memmap(file, dtype=np.uint8, mode="r")) if stat.st_size
                    else np.zeros(0, dtype=np.uint8))
            sha = hashlib.sha256(memoryview(data)).hexdigest()
            if sha not in self.by_content:
                self.by_content[sha] = self.put(data)
                self.bytes_put += int(data.size)
            self.by_file[key] = (sha, int(data.size))
        sha, size = self.by_file[key]
        return Blob(rel, sha, size, self.by_content[sha])


def write_outputs(out: str | Path, files: Sequence[tuple[str, bytes]]) -> None:
    """Write what a worker sent back into RUNS_DIR ``out``, each file atomically, in the
    order sent (the record last); a path that would leave ``out`` is refused."""
    root = Path(out).resolve()
    for rel, data in files:
        target = (root / rel).resolve()
        if root not in target.parents or PurePath(rel).is_absolute():
            raise FsxltError(f"a worker sent {rel!r}, which is no path inside {out}")
        atomic_write_text(target, data.decode("utf-8"))


# --------------------------------------------------------------------------- the worker

def cache_dir() -> Path:
    """The node's cache of inputs: ``$FSXLT_RAY_CACHE``, else ``<tmp>/fsxlt-ray-<uid>``."""
    found = os.environ.get(CACHE_ENV)
    return Path(found) if found else Path(tempfile.gettempdir()) / f"fsxlt-ray-{os.getuid()}"


def unpack(parcels: Sequence[Parcel], get: Callable[[Any], Any],
           root: Path | None = None) -> dict[str, str]:
    """Lay each parcel out on this node (blobs fetched with ``get`` only when the node's
    cache lacks them); return {the driver's path: its copy here}."""
    root = root or cache_dir()
    blobs, inputs = root / "blobs", root / "inputs"
    blobs.mkdir(parents=True, exist_ok=True)
    inputs.mkdir(parents=True, exist_ok=True)
    local = {}
    for parcel in parcels:
        for blob in parcel.blobs:
            _fetch(blob, blobs, get)
        target = inputs / parcel.digest
        if not target.exists():
            staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=inputs))
            for blob in parcel.blobs:
                place = staging / parcel.name / blob.rel if blob.rel else staging / parcel.name
                place.parent.mkdir(parents=True, exist_ok=True)
                _link(blobs / blob.sha256, place)
            try:
                staging.rename(target)
            except OSError:  # another worker of this node laid it out first
                shutil.rmtree(staging, ignore_errors=True)
        local[parcel.path] = str(target / parcel.name)
    return local


def _fetch(blob: Blob, blobs: Path, get: Callable[[Any], Any]) -> None:
    """Write ``blob`` into the cache unless it is there; its bytes checked first."""
    path = blobs / blob.sha256
    if path.exists() and path.stat().st_size == blob.size:
        return
    data = memoryview(get(blob.ref)).cast("B")
    if hashlib.sha256(data).hexdigest() != blob.sha256:
        raise FsxltError(f"an input's bytes arrived changed (sha256 {blob.sha256[:12]})")
    handle, temp = tempfile.mkstemp(prefix=".blob-", dir=blobs)
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.replace(temp, path)


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # a cache on a file system without hard links
        shutil.copyfile(source, target)


class Relocation:
    """The paths a worker's runs use instead of the driver's, both ways.

    ``pairs``: (the driver's path as the runs name it, its copy on this node). A path
    is replaced where it stands whole in a string (not as part of a longer name), and
    a path under it keeps its tail: ``/data/sets`` maps ``/data/sets/00.json`` too."""

    def __init__(self, pairs: dict[str, str]):
        self.there = dict(pairs)
        for driver, local in pairs.items():  # as JSON inside a string writes it, too
            for escaped in {json.dumps(driver)[1:-1], json.dumps(driver, ensure_ascii=False)[1:-1]}:
                self.there.setdefault(escaped, json.dumps(local)[1:-1])
        self.back = {local: driver for driver, local in pairs.items()}
        self._out = _pattern(self.there)
        self._in = _pattern(self.back)

    def __call__(self, obj: Any) -> Any:
        """``obj`` (a run spec, a tuple of them) with every driver path made local."""
        return _map_strings(obj, lambda text: _replace(self._out, self.there, text))

    def text_back(self, text: str, in_json: bool) -> str:
        """Local paths in a file's text written back as the driver's (JSON-escaped in a
        JSON file, as fsxlt writes them: ``ensure_ascii=False``)."""
        mapping = ({local: json.dumps(driver, ensure_ascii=False)[1:-1]
                    for local, driver in self.back.items()} if in_json else self.back)
        return _replace(self._in, mapping, text)


def _pattern(mapping: dict[str, str]) -> re.Pattern[str] | None:
    if not mapping:
        return None
    keys = sorted(mapping, key=len, reverse=True)
    return re.compile(r"(?<![\w.~/-])(?:" + "|".join(map(re.escape, keys)) + r")(?![\w.-])")


def _replace(pattern: re.Pattern[str] | None, mapping: dict[str, str], text: str) -> str:
    if pattern is None:
        return text
    return pattern.sub(lambda match: mapping[match.group(0)], text)


def _map_strings(obj: Any, change: Callable[[str], str]) -> Any:
    """``obj`` with ``change`` applied to every string in it (dataclasses, paths, lists,
    tuples and dicts walked; an object left as it is where nothing in it changed), but
    a dataclass's identity fields (:data:`IDENTITY_FIELDS`)."""
    if isinstance(obj, str):
        new = change(obj)
        return obj if new == obj else new
    if isinstance(obj, PurePath):
        new = change(str(obj))
        return obj if new == str(obj) else type(obj)(new)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        items = [_map_strings(item, change) for item in obj]
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else type(obj)(items)
    if isinstance(obj, dict):
        pairs = [(_map_strings(k, change), _map_strings(v, change)) for k, v in obj.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(pairs, obj.items(), strict=True))
        return obj if same else type(obj)(pairs)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for item in dataclasses.fields(obj):
            if item.name in IDENTITY_FIELDS:
                continue
            value = getattr(obj, item.name)
            new = _map_strings(value, change)
            if new is not value:
                if not item.init:
                    raise FsxltError(f"{type(obj).__name__}.{item.name} names a path but is "
                                     "no init field: it cannot travel to a Ray worker")
                changes[item.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def take_outputs(scratch: Path, relocation: Relocation, last: str | None) -> list[
        tuple[str, bytes]]:
    """Every file a run wrote under ``scratch`` as (path under it, bytes), text written
    back with the driver's paths, the record ``last`` at the end; the files are removed."""
    files = []
    for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
        if path.name.startswith("."):
            continue  # a temporary (an atomic write's): no output
        rel = path.relative_to(scratch).as_posix()
        text = path.read_text(encoding="utf-8")
        text = relocation.text_back(text, in_json=path.suffix in JSON_SUFFIXES)
        files.append((rel, text.encode("utf-8")))
        path.unlink()
    files.sort(key=lambda item: item[0] == last)
    return files
