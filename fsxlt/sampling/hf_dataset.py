"""Bucket sets as a Hugging Face dataset folder, and back.

:func:`export_hf` writes every set of a bucket store as one dataset *config*, named after
the set itself (:func:`config_name`: ``<task>-<lang>-k<K>``, a strategy's name in front
for a set of ``fsxlt select``), whatever folder was exported::

    OUT/README.md                              the dataset card: YAML ``configs:`` (what
                                               ``datasets.load_dataset(OUT, CONFIG)`` reads)
                                               and prose
    OUT/<config>/bucket_00-<hash>.parquet ...  one split per bucket (FewCLUE's: bucket_00 ...
                                               bucket_04, bucket_all), its examples in order
    OUT/<config>/dev_remaining-<hash>.parquet  the dev examples in no bucket, where the set
                                               has them
    OUT/<config>/test-<hash>.parquet           the set's own test set (FewCLUE, XQuAD), and
    OUT/<config>/<bucket>_dev-<hash>.parquet   each bucket's own dev set (FewCLUE), as splits
    OUT/<config>/fsxlt_manifest.json           the set's fsxlt manifest: provenance, ids and
                                               the hash of every split

``<hash>`` is the first 16 hex digits of the parquet file's sha256: ``datasets`` caches a
local folder by its name and its data files' names, so a re-export of other buckets into a
folder of the same name gets other file names, and never an earlier export's rows.

Features are typed per task kind: classification ``text_a``, ``text_b`` and ``label``
as a ``ClassLabel`` with the task's label names (CSL's keyword lists as
``text_b_items``); tagging ``tokens`` and ``tags`` (a sequence of ``ClassLabel``);
multiple choice ``text``, ``choices`` and ``label`` (the right choice's position);
extractive QA in SQuAD's layout (``answers`` = {``text``, ``answer_start``}); generation
``source`` and ``target``; ids kept. The folder is ready for ``hf upload``.

:func:`import_hf` reads such a folder (or a hub dataset id, downloaded) as input anyone
could have written: the configs are those its card lists, each split the parquet file the
card names inside the config's folder, each manifest checked at the store's manifest
boundary (:func:`fsxlt.sampling.manifest.parse_manifest`). Each config is written back as
the bucket set its manifest describes, at the place the manifest's own task, language,
K and strategy give under ``--out`` (never a path read from the dataset): the same
examples, in the same order, so every bucket has the hash it had
(:func:`fsxlt.sampling.store.bucket_hash`) and every other split (remaining dev, test,
a bucket's dev set) the hash its manifest records. A split that no longer gives its
hash, a config the card lists without a manifest or a manifest no card lists is refused
in one line, nothing written. A set of fsxlt 0.4 or earlier (identified by its files'
bytes) comes back as a set of this release, identified by its content: its runs do not
carry over.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.data import (
    ChoiceExample,
    Example,
    GenerationExample,
    QAExample,
    TaggedSentence,
    TextExample,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import dumps_json, parse_yaml, read_json, staged_dir
from fsxlt.sampling.hf_card import dataset_card, split_hashes, split_stem
from fsxlt.sampling.store import (
    LEGACY_FORMAT,
    MANIFEST,
    BucketSet,
    find_sets,
    parse_manifest,
    plain_name,
    read_examples_jsonl,
    read_set,
    render_set,
    write_sets,
)
from fsxlt.tasks import TaskSpec, get_task

FSXLT_MANIFEST = "fsxlt_manifest.json"
CARD = "README.md"


@dataclass(frozen=True)
class ExportedSet:
    """One set of an export: its config name, manifest, splits (name -> parquet file) and
    examples."""

    config: str
    directory: Path
    splits: dict[str, str]
    n_examples: int
    manifest: dict[str, Any]


def config_name(manifest: dict[str, Any]) -> str:
    """A set's config name, from its manifest: ``<task>-<lang>-k<K>`` (``xnli-de-k4``), with
    the strategy's name in front for a set of ``fsxlt select`` (``diverse-xnli-de-k4``)."""
    strategy = manifest.get("strategy")
    head = f"{strategy['name']}-" if isinstance(strategy, dict) and strategy.get("name") else ""
    return f"{head}{manifest['task']}-{manifest['language']}-k{manifest['k']}"


# --------------------------------------------------------------------------- rows

def features_of(task: TaskSpec, examples: Iterable[Example]) -> Any:
    """The ``datasets.Features`` of a task kind's examples (module docstring)."""
    from datasets import ClassLabel, Features, Sequence, Value

    string = Value("string")
    if task.kind == "classification":
        feats = {"id": string, "text_a": string, "text_b": string,
                 "label": ClassLabel(names=list(task.labels))}
        if any(isinstance(ex, TextExample) and ex.text_b_items for ex in examples):
            feats["text_b_items"] = Sequence(string)
        return Features(feats)
    if task.kind == "tagging":
        return Features({"id": string, "tokens": Sequence(string),
                         "tags": Sequence(ClassLabel(names=list(task.labels)))})
    if task.kind == "multiple_choice":
        return Features({"id": string, "text": string, "choices": Sequence(string),
                         "label": string})
    if task.kind == "extractive_qa":
        return Features({"id": string, "question_id": string, "title": string,
                         "context": string, "question": string, "language": string,
                         "answers": {"text": Sequence(string),
                                     "answer_start": Sequence(Value("int32"))}})
    return Features({"id": string, "source": string, "target": string, "language": string})


def to_row(example: Example, features: Any) -> dict[str, Any]:
    """An example as a row of ``features`` (labels as class ids, answers as SQuAD's)."""
    row = example.to_dict()
    if isinstance(example, TextExample):
        row.setdefault("text_b", None)
        if "text_b_items" in features:
            row.setdefault("text_b_items", None)
        row["label"] = features["label"].str2int(example.label)
    elif isinstance(example, TaggedSentence):
        row["tags"] = [features["tags"].feature.str2int(tag) for tag in example.tags]
    elif isinstance(example, QAExample):
        row["answers"] = {"text": list(example.answers),
                          "answer_start": list(example.starts)}
    return row


def from_row(row: dict[str, Any], kind: str, features: Any) -> Example:
    """The example a row holds (the inverse of :func:`to_row`)."""
    if kind == "classification":
        items = row.get("text_b_items")
        return TextExample(str(row["id"]), str(row["text_a"]), row.get("text_b"),
                           features["label"].int2str(int(row["label"])),
                           None if items is None else tuple(map(str, items)))
    if kind == "tagging":
        names = features["tags"].feature
        return TaggedSentence(str(row["id"]), tuple(map(str, row["tokens"])),
                              tuple(names.int2str(int(t)) for t in row["tags"]))
    if kind == "multiple_choice":
        return ChoiceExample(str(row["id"]), str(row["text"]), tuple(map(str, row["choices"])),
                             str(row["label"]))
    if kind == "extractive_qa":
        answers = row["answers"]
        return QAExample(str(row["id"]), str(row["question_id"]), str(row["context"]),
                         str(row["question"]), tuple(map(str, answers["text"])),
                         tuple(int(s) for s in answers["answer_start"]),
                         str(row.get("title") or ""), str(row.get("language") or ""))
    return GenerationExample(str(row["id"]), str(row["source"]), str(row["target"]),
                             str(row.get("language") or ""))


# --------------------------------------------------------------------------- export

def set_splits(directory: Path) -> tuple[dict[str, Any], dict[str, list[Example]]]:
    """A set's manifest and its splits in order: each bucket, then its own dev set
    (``<bucket>_dev``), the set's test set and its remaining dev examples."""
    manifest, buckets, remaining = read_set(directory, verify=True)
    splits: dict[str, list[Example]] = {}
    for entry, bucket in zip(manifest["buckets"], buckets, strict=True):
        name = split_stem(entry)
        splits[f"bucket_{name}"] = list(bucket.examples)
        if isinstance(entry.get("dev"), dict):
            splits[f"bucket_{name}_dev"] = read_examples_jsonl(directory / entry["dev"]["file"])
    if isinstance(manifest.get("test"), dict):
        splits["test"] = read_examples_jsonl(directory / manifest["test"]["file"])
    if remaining is not None:
        splits["dev_remaining"] = remaining
    return manifest, splits


def export_hf(store: str | Path, out: str | Path,
              progress: Callable[[Iterable[Path]], Iterable[Path]] | None = None,
              ) -> list[ExportedSet]:
    """Write every bucket set below ``store`` as a dataset folder ``out`` (module
    docstring), atomically: nothing is left half-written, and an ``out`` that already
    holds files is refused (export elsewhere, or remove it)."""
    store, out = Path(store), Path(out)
    directories = find_sets(store)
    if not directories:
        raise FsxltError(f"{store}: no bucket sets below it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FsxltError(f"{out}: exists and is not empty; export into a new folder")
    files: dict[str, bytes] = {}
    exported: dict[str, ExportedSet] = {}
    for directory in (progress or iter)(directories):
        manifest, splits = set_splits(directory)
        config = config_name(manifest)
        if config in exported:
            raise FsxltError(f"{directory} and {exported[config].directory}: two sets of one "
                             f"task, language and K ({config}); export them apart")
        task = get_task(manifest["task"])
        features = features_of(task, [ex for examples in splits.values() for ex in examples])
        names, schema = {}, features.arrow_schema
        for split, examples in splits.items():  # one schema for every split of a config
            data = parquet_bytes([to_row(ex, features) for ex in examples], schema)
            names[split] = f"{config}/{split}-{hashlib.sha256(data).hexdigest()[:16]}.parquet"
            files[names[split]] = data
        files[f"{config}/{FSXLT_MANIFEST}"] = dumps_json(manifest).encode("utf-8")
        exported[config] = ExportedSet(config, directory, names,
                                       sum(len(x) for x in splits.values()), manifest)
    sets = list(exported.values())
    files[CARD] = dataset_card(sets).encode("utf-8")
    with staged_dir(out) as staging:  # the folder appears whole, or not at all
        for name, data in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
    return sets


def parquet_bytes(rows: list[dict[str, Any]], schema: Any) -> bytes:
    """Rows as the bytes of a parquet file, written straight with pyarrow under the
    features' arrow ``schema`` (which carries ``datasets``' feature metadata, so
    ``load_dataset`` gets the typed features back): ``Dataset.from_list`` would hash every
    table with dill first, four fifths of an export's time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema)
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    return buffer.getvalue().to_pybytes()


# --------------------------------------------------------------------------- import

def import_hf(source: str | Path, out: str | Path, *, replace: bool = False,
              progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
              ) -> list[BucketSet]:
    """Write every config of the dataset folder (or hub dataset id) ``source`` as a bucket
    set under ``out`` (module docstring); returns the sets, each with ``written``. Every
    config is read and verified before anything is written."""
    folder = dataset_folder(source)
    configs = card_configs(folder)
    sets = [_read_config(folder, config, configs[config])
            for config in (progress or iter)(list(configs))]
    folders = [bucket_set.strategy["name"] if bucket_set.strategy else "."
               for bucket_set in sets]  # a strategy's folder (fsxlt select), else the root
    write_sets(out, sets, replace=replace, folders=folders, whole=True)  # all or nothing
    return sets


def card_configs(folder: Path) -> dict[str, dict[str, Path]]:
    """The configs the dataset card lists, each with its splits' parquet files; one line
    for a card that is not an fsxlt export's, a data file outside its config's folder, a
    listed config without a manifest or a manifest in no listed config."""
    card = folder / CARD
    if not card.is_file():
        raise FsxltError(f"{folder}: no dataset card ({CARD}); not a folder fsxlt buckets "
                         "export --format hf wrote")
    meta = front_matter(card)
    listed = meta.get("configs") if isinstance(meta, dict) else None
    if not isinstance(listed, list) or not listed:
        raise FsxltError(f"{card}: no configs in its YAML front matter; not a folder fsxlt "
                         "buckets export --format hf wrote")
    configs: dict[str, dict[str, Path]] = {}
    for position, entry in enumerate(listed):
        name = entry.get("config_name") if isinstance(entry, dict) else None
        if not plain_name(name) or name in configs:
            raise FsxltError(f"{card}: configs[{position}] has config_name {name!r}, not a "
                             "plain name of its own")
        configs[name] = _config_files(card, name, entry.get("data_files"))
        if not (folder / name / FSXLT_MANIFEST).is_file():
            raise FsxltError(f"{folder}: config {name}, which the card lists, has no "
                             f"{name}/{FSXLT_MANIFEST}; nothing was written")
    unlisted = sorted(p.parent.name for p in folder.glob(f"*/{FSXLT_MANIFEST}")
                      if p.parent.name not in configs)
    if unlisted:
        raise FsxltError(f"{folder}: {unlisted[0]}/{FSXLT_MANIFEST} belongs to no config the "
                         "card lists; nothing was written")
    return configs


def front_matter(card: Path) -> Any:
    """A dataset card's YAML front matter (between its first two ``---``), or None."""
    text = card.read_text(encoding="utf-8", errors="replace") if card.is_file() else ""
    parts = text.split("---", 2) if text.startswith("---") else []
    return parse_yaml(parts[1], str(card)) if len(parts) == 3 else None


def _config_files(card: Path, config: str, data_files: Any) -> dict[str, Path]:
    """A config's splits and their parquet files, each a plain file in the config's folder."""
    if not isinstance(data_files, list):
        raise FsxltError(f"{card}: config {config} lists no data_files")
    files = {}
    for entry in data_files:
        split = entry.get("split") if isinstance(entry, dict) else None
        path = entry.get("path") if isinstance(entry, dict) else None
        parts = path.split("/") if isinstance(path, str) else []
        if not plain_name(split) or len(parts) != 2 or parts[0] != config \
                or not plain_name(parts[1]) or not parts[1].endswith(".parquet"):
            raise FsxltError(f"{card}: config {config} has data file {path!r} for split "
                             f"{split!r}; a split must be one parquet file in {config}/")
        files[split] = card.parent / config / parts[1]
    return files


def dataset_folder(source: str | Path) -> Path:
    """A local folder as it is; a hub dataset id downloaded (or found in the cache)."""
    path = Path(source)
    if path.is_dir():
        return path
    if path.exists():
        raise FsxltError(f"{source}: a file, not a dataset folder or hub dataset id")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(str(source), repo_type="dataset"))
    except Exception as err:  # offline and not cached, no such dataset
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
        raise FsxltError(f"{source}: no such folder, and not a hub dataset fsxlt can "
                         f"download ({type(err).__name__}: {first})") from None


def _read_config(folder: Path, config: str, files: dict[str, Path]) -> BucketSet:
    """One config back as the bucket set its manifest describes, every split verified."""
    path = folder / config / FSXLT_MANIFEST
    manifest = parse_manifest(read_json(path), path)
    try:
        task = get_task(manifest["task"])
    except FsxltError as err:
        raise FsxltError(f"{path}: {err}") from None
    where = f"{folder}: config {config}"
    wanted = split_hashes(manifest)
    extra = sorted(set(files) - set(wanted))
    if extra:
        raise FsxltError(f"{where} has split {extra[0]}, which its manifest does not list; "
                         "nothing was written")

    def split(name: str) -> list[Example]:
        if name not in files:
            raise FsxltError(f"{where} has no split {name} (its manifest lists it); nothing "
                             "was written")
        return _read_split(files[name], task.kind, where, name)

    names = [split_stem(e) for e in manifest["buckets"]]
    buckets = [split(f"bucket_{name}") for name in names]
    devs = [split(f"bucket_{name}_dev") for name in names] \
        if any(isinstance(e.get("dev"), dict) for e in manifest["buckets"]) else None
    bucket_set = _bucket_set(manifest, buckets, devs,
                             split("test") if manifest.get("test") else None,
                             split("dev_remaining") if manifest.get("dev_remaining") else None)
    _verify_splits(manifest, bucket_set, where)
    return bucket_set


def _read_split(path: Path, kind: str, where: str, name: str) -> list[Example]:
    """A split's examples from its parquet file (features as ``datasets`` wrote them in the
    schema's metadata, parsed once per schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(pa.BufferReader(path.read_bytes())).read(use_threads=False)
        features = _features(table.schema)
        return [from_row(row, kind, features) for row in table.to_pylist()]
    except Exception as err:  # a cut or edited file, another schema, rows of another kind
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
        raise FsxltError(f"{where}: split {name} ({path.name}) does not read as its "
                         f"examples ({type(err).__name__}: {first}); nothing was "
                         "written") from None


_FEATURES: dict[Any, Any] = {}


def _features(schema: Any) -> Any:
    """``datasets.Features`` of an arrow schema, cached by the schema (every split of a
    config, and every config of a task kind, shares one)."""
    from datasets import Features

    key = schema.to_string(show_schema_metadata=True)
    if key not in _FEATURES:
        _FEATURES[key] = Features.from_arrow_schema(schema)
    return _FEATURES[key]


def _bucket_set(manifest: dict[str, Any], buckets: list[list[Example]],
                devs: list[list[Example]] | None, test: list[Example] | None,
                remaining: list[Example] | None) -> BucketSet:
    """The set a manifest describes, over these examples (:func:`_verify_splits` checks
    them against its hashes)."""
    entries = manifest["buckets"]
    source = manifest.get("source") or {}
    named = any("name" in e for e in entries)
    union = next((i for i, e in enumerate(entries) if e.get("union")), None)
    bucket_set = BucketSet(
        task=manifest["task"], language=manifest["language"], k=int(manifest["k"]),
        sampler=manifest.get("sampler"), seed=manifest.get("seed"),
        split=manifest.get("split"), source_file=source.get("file"),
        source_sha256=source.get("sha256"), labels=list(manifest.get("labels") or []),
        buckets=buckets, missing_labels=list(manifest.get("missing_labels") or []),
        dev_remaining=remaining, dev_provenance=_dev_provenance(manifest),
        notes=dict(manifest.get("notes") or {}),
        indices=[int(e["index"]) for e in entries],
        missing_buckets=list(manifest.get("missing_buckets") or []),
        names=[str(e["name"]) for e in entries] if named else None, devs=devs,
        union=union, test=test,
        test_source=(manifest.get("test") or {}).get("source"),
        strategy=manifest.get("strategy"), reading=dict(manifest.get("reading") or {}))
    return bucket_set


def _dev_provenance(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """What the manifest's remaining dev set entry records beside its file (a published
    set's dev file and what of its buckets was located there), or None."""
    entry = manifest.get("dev_remaining")
    if not isinstance(entry, dict):
        return None
    kept = {key: value for key, value in entry.items() if key not in ("file", "n", "sha256")}
    return kept or None


def _verify_splits(manifest: dict[str, Any], bucket_set: BucketSet, where: str) -> None:
    """Every split gives the hash its manifest records (a bucket its content hash; a dev,
    test or remaining-dev set the sha256 of its JSON lines), and the set renders to the
    manifest it came with (less the writer's version): the manifest is never rewritten to
    fit what the dataset holds. A 0.4 set's bucket hashes are its files' bytes: not
    compared."""
    rendered = parse_manifest(json.loads(render_set(bucket_set)[MANIFEST]), where)
    legacy = manifest.get("format") == LEGACY_FORMAT
    bucket_splits = {f"bucket_{split_stem(entry)}" for entry in manifest["buckets"]}
    made = split_hashes(rendered)
    for split, digest in split_hashes(manifest).items():
        if made.get(split) != digest and not (legacy and split in bucket_splits):
            raise FsxltError(f"{where}: split {split} does not hold the examples its "
                             "manifest's hash records (the dataset was changed); nothing "
                             "was written")
    ignored = ("fsxlt_version", "format") + (("buckets",) if legacy else ())
    for key in sorted(set(manifest) | set(rendered)):
        if key not in ignored and manifest.get(key) != rendered.get(key):
            raise FsxltError(f"{where}: its manifest's {key} is not what its splits give "
                             "(the dataset was changed); nothing was written")


__all__ = ["CARD", "FSXLT_MANIFEST", "ExportedSet", "card_configs", "config_name",
           "export_hf", "features_of", "from_row", "import_hf", "split_hashes", "to_row"]
