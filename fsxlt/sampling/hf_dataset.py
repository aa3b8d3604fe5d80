"""Bucket sets as a Hugging Face dataset folder, and back.

:func:`export_hf` writes every set of a bucket store as one dataset *config*
``<task>-<lang>-k<K>`` (a ``/`` in a strategy folder becomes ``-``)::

    OUT/README.md                       the dataset card: YAML ``configs:`` (what
                                        ``datasets.load_dataset(OUT, CONFIG)`` reads) and prose
    OUT/<config>/bucket_00.parquet ...  one split per bucket (FewCLUE's: bucket_00 ...
                                        bucket_04, bucket_all), its examples in order
    OUT/<config>/dev_remaining.parquet  the dev examples in no bucket, where the set has them
    OUT/<config>/test.parquet           the set's own test set (FewCLUE), and each
    OUT/<config>/<bucket>_dev.parquet   bucket's own dev set (FewCLUE), as splits too
    OUT/<config>/fsxlt_manifest.json    the set's fsxlt manifest: provenance, ids, hashes
    OUT/fsxlt_sets.json                 each config's place in the store it came from

Features are typed per task kind: classification ``text_a``, ``text_b`` and ``label``
as a ``ClassLabel`` with the task's label names (CSL's keyword lists as
``text_b_items``); tagging ``tokens`` and ``tags`` (a sequence of ``ClassLabel``);
multiple choice ``text``, ``choices`` and ``label`` (the right choice's position);
extractive QA in SQuAD's layout (``answers`` = {``text``, ``answer_start``}); generation
``source`` and ``target``; ids kept. The folder is ready for ``huggingface-cli upload``.

:func:`import_hf` reads such a folder (or a hub dataset id, downloaded) with
``datasets`` and writes each config back as a bucket set: the same examples, in the same
order, with the provenance of its manifest, so every bucket has the hash it had
(:func:`fsxlt.sampling.store.bucket_hash`), and a bucket whose examples no longer give
that hash (the dataset was edited) is refused in one line, nothing written. A set of
fsxlt 0.4 or earlier (identified by its files' bytes) comes back as a set of this
release, identified by its content: its runs do not carry over.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.data import (
    ChoiceExample,
    Example,
    GenerationExample,
    QAExample,
    TaggedSentence,
    TextExample,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import dumps_json, staged_dir
from fsxlt.sampling.store import (
    LEGACY_FORMAT,
    BucketSet,
    bucket_hash,
    find_sets,
    read_examples_jsonl,
    read_set,
    render_bucket,
    write_sets,
)
from fsxlt.tasks import TaskSpec, get_task

FSXLT_MANIFEST = "fsxlt_manifest.json"
FSXLT_SETS = "fsxlt_sets.json"
CITATION = ("Zhao, Mengjie, Yi Zhu, Ehsan Shareghi, Ivan Vulić, Roi Reichart, Anna Korhonen "
            "and Hinrich Schütze. 2021. A Closer Look at Few-Shot Crosslingual Transfer: "
            "The Choice of Shots Matters. In Proceedings of ACL-IJCNLP 2021, pages "
            "5751-5767.")


@dataclass(frozen=True)
class ExportedSet:
    """One set of an export: its config name, manifest, splits and examples."""

    config: str
    directory: Path
    splits: list[str]
    n_examples: int
    manifest: dict[str, Any]


def config_name(root: Path, directory: Path) -> str:
    """A set's config name: its path below the store, ``k`` kept (``xnli-de-k4``)."""
    parts = directory.relative_to(root).parts if directory != root else directory.parts[-3:]
    return re.sub(r"[^\w.-]+", "-", "-".join(parts)).strip("-")


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
        name = str(entry.get("name") or Path(entry["file"]).stem)
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
    from datasets import Dataset, disable_progress_bars

    disable_progress_bars()  # the command line shows its own
    store, out = Path(store), Path(out)
    directories = find_sets(store)
    if not directories:
        raise FsxltError(f"{store}: no bucket sets below it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FsxltError(f"{out}: exists and is not empty; export into a new folder")
    files: dict[str, bytes] = {}
    exported = []
    for directory in (progress or iter)(directories):
        manifest, splits = set_splits(directory)
        config = config_name(store, directory)
        task = get_task(manifest["task"])
        features = features_of(task, [ex for examples in splits.values() for ex in examples])
        for split, examples in splits.items():  # one schema for every split of a config
            data = Dataset.from_list([to_row(ex, features) for ex in examples],
                                     features=features)
            files[f"{config}/{split}.parquet"] = _parquet_bytes(data)
        files[f"{config}/{FSXLT_MANIFEST}"] = dumps_json(manifest).encode("utf-8")
        exported.append(ExportedSet(config, directory, list(splits),
                                    sum(len(x) for x in splits.values()), manifest))
    places = {one.config: one.directory.relative_to(store).as_posix() if one.directory != store
              else "/".join(one.directory.parts[-3:]) for one in exported}
    if len(places) != len(exported):
        raise FsxltError(f"{store}: two sets would share a config name; export them apart")
    files[FSXLT_SETS] = dumps_json(places).encode("utf-8")
    files["README.md"] = dataset_card(exported, store).encode("utf-8")
    with staged_dir(out) as staging:  # the folder appears whole, or not at all
        for name, data in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
    return exported


def _parquet_bytes(data: Any) -> bytes:
    """A dataset as parquet bytes (written through a buffer: the folder is written whole)."""
    import io

    buffer = io.BytesIO()
    data.to_parquet(buffer)
    return buffer.getvalue()


def dataset_card(sets: list[ExportedSet], store: Path) -> str:
    """The README.md: YAML ``configs`` for ``datasets``, then what each set is."""
    lines = ["---", "configs:"]
    for one in sets:
        lines += [f"- config_name: {one.config}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {one.config}/{split}.parquet"
                  for split in one.splits]
    lines += ["license: other  # the source data's license: fill in (fsxlt does not know it)",
              "tags:", "- few-shot", "- crosslingual-transfer", "- fsxlt", "---", "",
              "# fsxlt bucket sets", "",
              f"Few-shot buckets exported by fsxlt {__version__} from `{store.name}`. Each "
              "config is one (task, language, K) set; each split `bucket_NN` is one "
              "bucket, its examples in order; `dev_remaining` holds the dev examples in "
              "no bucket (model selection), `test` and `bucket_NN_dev` a set's own test and "
              "dev sets. Load one with `datasets.load_dataset(PATH_OR_ID, CONFIG)`; "
              "`fsxlt buckets import-hf PATH_OR_ID --out STORE` turns the folder back into "
              "a bucket store with the same bucket hashes.", ""]
    for one in sets:
        lines += _set_section(one)
    lines += ["## License", "", "The buckets are samples of their source data and carry "
              "its license, which fsxlt does not record: fill it in above (`license:`).", "",
              "## Citation", "", "The sampling protocol is that of:", "", f"> {CITATION}",
              ""]
    return "\n".join(lines)


def _set_section(one: ExportedSet) -> list[str]:
    manifest = one.manifest
    source = manifest.get("source") or {}
    sampler = manifest.get("sampler")
    lines = [f"## {one.config}", "",
             f"- task `{manifest['task']}`, language `{manifest['language']}`, K = "
             f"{manifest['k']}, {manifest.get('n_buckets')} buckets, sampler `{sampler}` "
             f"({GUARANTEES.get(str(sampler), 'see fsxlt docs/sampling.md')}), seed "
             f"{manifest.get('seed')}, split `{manifest.get('split')}`",
             f"- source file `{source.get('file')}`, sha256 `{source.get('sha256')}`",
             f"- sampled by fsxlt {manifest.get('fsxlt_version')}"
             + (" (bucket hashes are file hashes: fsxlt 0.4 or earlier)"
                if manifest.get("format") == LEGACY_FORMAT else ""),
             f"- labels: {', '.join(manifest.get('labels') or [])}"
             + (f"; missing from the pool: {', '.join(manifest['missing_labels'])}"
                if manifest.get("missing_labels") else ""), "",
             "| split | bucket hash (sha256) |", "|---|---|"]
    for entry in manifest["buckets"]:
        name = str(entry.get("name") or Path(entry["file"]).stem)
        lines.append(f"| bucket_{name} | `{entry['sha256']}` |")
    return [*lines, ""]


GUARANTEES = {
    "nway-kshot": "exactly K examples of every label, buckets disjoint",
    "minimum-including": "every label at least K times, no sentence that could be "
                         "dropped without breaking that (Minimum-Including)",
    "k-examples": "K examples each, buckets disjoint",
    "k-queries": "K queries each with all their pages, buckets disjoint",
    "k-questions": "K questions each, on paragraphs no other bucket, dev or test set shares",
    "k-pairs": "K pairs each, on sources no other bucket shares",
}


# --------------------------------------------------------------------------- import

def import_hf(source: str | Path, out: str | Path, *, replace: bool = False,
              progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
              ) -> list[BucketSet]:
    """Write every config of the dataset folder (or hub dataset id) ``source`` as a bucket
    set under ``out`` (module docstring); returns the sets, each with ``written``."""
    folder = _dataset_folder(source)
    configs = sorted(p.parent.name for p in folder.glob(f"*/{FSXLT_MANIFEST}"))
    if not configs:
        raise FsxltError(f"{source}: no fsxlt bucket sets in it (no <config>/{FSXLT_MANIFEST}; "
                         "export one with fsxlt buckets export --format hf)")
    sets = [_read_config(folder, config) for config in (progress or iter)(configs)]
    places = _places(folder)
    folders = [str(Path(places.get(config, "a/b/c")).parent.parent.parent)
               for config in configs]  # a strategy's folder (fsxlt select), else "."
    write_sets(out, sets, replace=replace, folders=folders)
    return sets


def _places(folder: Path) -> dict[str, str]:
    """Each config's place in the store it was exported from ({} when not recorded)."""
    try:
        places = json.loads((folder / FSXLT_SETS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in places.items()} if isinstance(places, dict) else {}


def _dataset_folder(source: str | Path) -> Path:
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


def _read_config(folder: Path, config: str) -> BucketSet:
    """One config back as the bucket set its manifest describes, every bucket's hash
    checked against the manifest."""
    manifest_path = folder / config / FSXLT_MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    task = get_task(manifest["task"])
    with tempfile.TemporaryDirectory(prefix="fsxlt-import-") as cache:
        return _config_set(folder, config, manifest, task, cache)


def _config_set(folder: Path, config: str, manifest: dict[str, Any], task: TaskSpec,
                cache: str) -> BucketSet:
    """:func:`_read_config` with ``datasets``' cache in ``cache``, a folder of its own: its
    shared cache keys a local folder by its name, not its content, and would give an
    earlier export's rows."""
    from datasets import disable_progress_bars, load_dataset

    disable_progress_bars()
    try:
        data = load_dataset(str(folder), config, cache_dir=cache)
    except Exception as err:  # a parquet file edited to another schema, cut, missing
        cause = err.__cause__ or err
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:200]
        raise FsxltError(f"{folder}: config {config} does not load as a dataset "
                         f"({type(cause).__name__}: {first}); nothing was written") from None

    def split(name: str) -> list[Example]:
        if name not in data:
            raise FsxltError(f"{folder}: config {config} has no split {name} (its manifest "
                             "lists it)")
        rows = data[name]
        return [from_row(row, task.kind, rows.features) for row in rows]

    names = [str(e.get("name") or Path(e["file"]).stem) for e in manifest["buckets"]]
    buckets = [split(f"bucket_{name}") for name in names]
    devs = [split(f"bucket_{name}_dev") for name in names] \
        if any(isinstance(e.get("dev"), dict) for e in manifest["buckets"]) else None
    return _bucket_set(manifest, buckets, devs,
                       split("test") if manifest.get("test") else None,
                       split("dev_remaining") if manifest.get("dev_remaining") else None,
                       f"{folder}/{config}")


def _bucket_set(manifest: dict[str, Any], buckets: list[list[Example]],
                devs: list[list[Example]] | None, test: list[Example] | None,
                remaining: list[Example] | None, where: str) -> BucketSet:
    """The set a manifest describes, over these examples; a bucket whose examples do not
    give the hash the manifest records is a one-line error."""
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
        dev_remaining=remaining, notes=dict(manifest.get("notes") or {}),
        indices=[int(e["index"]) for e in entries],
        missing_buckets=list(manifest.get("missing_buckets") or []),
        names=[str(e["name"]) for e in entries] if named else None, devs=devs,
        union=union, test=test,
        test_source=(manifest.get("test") or {}).get("source"),
        strategy=manifest.get("strategy"))
    if manifest.get("format") != LEGACY_FORMAT:
        for position, entry in enumerate(entries):
            if bucket_hash(render_bucket(bucket_set, position)) != entry["sha256"]:
                raise FsxltError(f"{where}: bucket {entry['file']} does not hold the examples "
                                 "its manifest's hash records (the dataset was changed); "
                                 "nothing was written")
    return bucket_set


__all__ = ["FSXLT_MANIFEST", "FSXLT_SETS", "ExportedSet", "config_name", "export_hf",
           "features_of", "from_row", "import_hf", "to_row"]
