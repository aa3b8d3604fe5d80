"""The dataset card of a bucket export (:mod:`fsxlt.sampling.hf_dataset`): the YAML
``configs:`` that ``datasets`` reads, then per set what someone who has never used fsxlt
needs: what the set is, where its buckets came from, the source data and where its
license is stated, the columns and labels in words, and every split's hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.tasks import TaskSpec, get_task

CITATION = ("Zhao, Mengjie, Yi Zhu, Ehsan Shareghi, Ivan Vulić, Roi Reichart, Anna Korhonen "
            "and Hinrich Schütze. 2021. A Closer Look at Few-Shot Crosslingual Transfer: "
            "The Choice of Shots Matters. In Proceedings of ACL-IJCNLP 2021, pages "
            "5751-5767.")


def split_stem(entry: dict[str, Any]) -> str:
    """A bucket's part of its split names (``00``, ``all``): its name, else its file's stem."""
    return str(entry.get("name") or Path(entry["file"]).stem)


def split_hashes(manifest: dict[str, Any]) -> dict[str, str]:
    """Each split's hash as the manifest records it: a bucket's content hash, the sha256 of
    the JSON lines of a dev, test or remaining-dev set (:func:`examples_hash`)."""
    hashes = {}
    for entry in manifest["buckets"]:
        hashes[f"bucket_{split_stem(entry)}"] = str(entry["sha256"])
        if isinstance(entry.get("dev"), dict):
            hashes[f"bucket_{split_stem(entry)}_dev"] = str(entry["dev"].get("sha256"))
    for key, split in (("test", "test"), ("dev_remaining", "dev_remaining")):
        if isinstance(manifest.get(key), dict):
            hashes[split] = str(manifest[key].get("sha256"))
    return hashes


def dataset_card(sets: list[Any]) -> str:
    """The README.md: YAML ``configs`` for ``datasets``, then what each set is (``sets``:
    :class:`fsxlt.sampling.hf_dataset.ExportedSet`, each with ``config``, ``splits`` and
    ``manifest``)."""
    lines = ["---", "configs:"]
    for one in sets:
        lines += [f"- config_name: {one.config}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in one.splits.items()]
    lines += ["license: other  # the source data's license: fill in (fsxlt does not know it)",
              "tags:", "- few-shot", "- crosslingual-transfer", "- fsxlt", "---", "",
              "# fsxlt bucket sets", "",
              f"Few-shot buckets exported by fsxlt {__version__}: {len(sets)} sets. Each "
              "config is one (task, language, K) set of buckets; each split `bucket_NN` is "
              "one bucket, its examples in the order they are trained on. Load one with "
              "`datasets.load_dataset(PATH_OR_ID, CONFIG, split='bucket_00')`; `fsxlt "
              "buckets import-hf PATH_OR_ID --out STORE` turns the folder back into a bucket "
              "store with the same hashes, each split verified.", ""]
    for one in sets:
        lines += _set_section(one)
    lines += ["## License", "", "The buckets are samples of their source data and carry "
              "its license, which fsxlt does not record: fill it in above (`license:`).", "",
              "## Citation", "", "The sampling protocol is that of:", "", f"> {CITATION}",
              ""]
    return "\n".join(lines)


def _set_section(one: Any) -> list[str]:
    """What a stranger needs of one set: what it is, where its buckets came from, the
    source data and where its license is stated, the columns in words, every split's
    hash."""
    manifest = one.manifest
    task = get_task(manifest["task"])
    sampler = str(manifest.get("sampler"))
    n = manifest.get("n_buckets") or len(manifest["buckets"])
    lines = [f"## {one.config}", "",
             f"{task.name} in {_language(manifest['language'])}, K = {manifest['k']}: "
             f"{task.description or task.kind}. {n} buckets; "
             f"{GUARANTEES.get(sampler, 'see fsxlt docs/sampling.md')}.", "",
             f"- **Origin**: {_origin(manifest)}",
             f"- **Source data**: {_source(task, manifest)}",
             f"- **Reading**: {_reading(task, manifest)}",
             f"- **Columns**: {_columns(task, manifest)}"]
    lines += [f"- **{what}**: {line}" for what, line in _split_sources(manifest)]
    if manifest.get("missing_labels"):
        lines.append(f"- Labels that never occur in the pool the buckets were drawn from: "
                     f"{', '.join(manifest['missing_labels'])}")
    if manifest.get("missing_buckets"):
        gone = ", ".join(str(m.get("file")) for m in manifest["missing_buckets"])
        lines.append(f"- Published buckets that could not be read and are not here: {gone}")
    lines += ["", "| split | what it is | hash (sha256) |", "|---|---|---|"]
    for split, digest in split_hashes(manifest).items():
        lines.append(f"| {split} | {_split_role(split)} | `{digest}` |")
    return [*lines, ""]


def _split_sources(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """The local file each split that came from one was computed from (a published set's
    remaining dev set: the user's dev file), with its sha256 and the rule."""
    found = []
    for key, what in (("dev_remaining", "Remaining dev set"), ("test", "Test set")):
        entry = manifest.get(key)
        source = entry.get("source") if isinstance(entry, dict) else None
        if isinstance(source, dict) and source.get("file") and source.get("sha256"):
            rule = f"; {entry['rule']}" if entry.get("rule") else ""
            found.append((what, f"computed from the local file `{source['file']}` (sha256 "
                                f"`{source['sha256']}`){rule}"))
    return found


def _reading(task: TaskSpec, manifest: dict[str, Any]) -> str:
    """How the set's files became examples, every axis of the task with its choice
    (fsxlt docs/protocol.md#readings)."""
    from fsxlt.data.readings import reading_of, study_reading

    choices = reading_of(manifest).full(task)
    if not choices:
        return "the task's only one"
    named = ", ".join(f"`{axis}={choice}`" for axis, choice in choices.items())
    study = " (the study's)" if reading_of(manifest) == study_reading(task) else ""
    return f"{named}{study}; the set's runs read their dev and test files the same way"


def _language(code: str) -> str:
    from fsxlt.tasks.languages import languages

    info = languages().get(code)
    return f"{info.name} (`{code}`)" if info is not None else f"`{code}`"


def _origin(manifest: dict[str, Any]) -> str:
    """Where a set's buckets came from, in words."""
    sampler, version = manifest.get("sampler"), manifest.get("fsxlt_version")
    notes = manifest.get("notes") or {}
    if sampler == "published":
        where = notes.get("imported_from") or (manifest.get("source") or {}).get("file")
        return ("the buckets published with the original study (Zhao et al., 2021; "
                f"citation below), imported by fsxlt {version} from the release's folder "
                f"`{where}`, their numbers kept")
    if sampler == "fewclue-fixed":
        return (f"FewCLUE's own fixed few-shot splits (train_0 ... train_4 and their union, "
                f"each with its dev split), imported by fsxlt {version}")
    strategy = manifest.get("strategy")
    if isinstance(strategy, dict):
        return (f"chosen by the shot-selection strategy `{strategy.get('name')}` of fsxlt "
                f"{version} from seeded candidate pools (seed {manifest.get('seed')})")
    return (f"drawn by fsxlt {version} with the sampler `{sampler}`, seed "
            f"{manifest.get('seed')}, from the `{manifest.get('split')}` split")


def _source(task: TaskSpec, manifest: dict[str, Any]) -> str:
    """The data set the buckets are samples of, and where its license is stated."""
    source = manifest.get("source") or {}
    digest = f"; the drawn-from file's sha256 `{source['sha256']}`" \
        if source.get("sha256") and manifest.get("sampler") != "published" else ""
    hub = task.data.hf
    drawn_from = str(source.get("file") or "")
    if manifest.get("sampler") not in ("published", "fewclue-fixed") and drawn_from \
            and (hub is None or drawn_from not in hub.splits.values()):
        # a local file (a hub split is recorded by its split's name, e.g. `train`)
        bench = f"{task.benchmark} benchmark, task " if task.benchmark else ""
        return (f"a local file, `{drawn_from}` (its `{manifest.get('split')}` split"
                f"{digest}), of the {bench}{task.name} data. The buckets carry that data "
                "set's license: see where it is distributed")
    if hub is not None:
        return (f"`{hub.path}` on the Hugging Face hub, split `{manifest.get('split')}`"
                f"{digest}. The buckets carry its license: see that dataset's card")
    if task.benchmark:
        return (f"the {task.benchmark} benchmark's task {task.name}, split "
                f"`{manifest.get('split')}`{digest}. The buckets carry its license: see the "
                "benchmark's own distribution")
    return (f"the {task.name} data set, split `{manifest.get('split')}`{digest}. The "
            "buckets carry its license: see where the data set is distributed")


def _columns(task: TaskSpec, manifest: dict[str, Any]) -> str:
    """The columns of every split, in words."""
    named = task.data.hf.columns if task.data.hf is not None else {}
    labels = ", ".join(f"{i} {label}" + (f" ({task.label_names[label]})"
                                         if label in task.label_names else "")
                       for i, label in enumerate(task.labels))  # the features' names
    ident = "`id` (the example's id in the data it was drawn from)"
    if task.kind == "classification":
        first = f"the {named['text_a']}" if "text_a" in named else "the text"
        second = f"the {named['text_b']}" if "text_b" in named else (
            "the second text" if task.input == "pair" else "empty: one text per example")
        return (f"{ident}, `text_a` ({first}), `text_b` ({second}), `label` (a ClassLabel: "
                f"{labels})")
    if task.kind == "tagging":
        return (f"{ident}, `tokens` (the sentence, one token each), `tags` (one tag per "
                f"token, a ClassLabel: {labels})")
    if task.kind == "multiple_choice":
        return (f"{ident}, `text` (the passage or question), `choices` (the candidates), "
                "`label` (the right candidate's position, as text)")
    if task.kind == "extractive_qa":
        return (f"{ident}, `question_id` (the benchmark's), `title`, `context` (the "
                "paragraph), `question`, `language`, `answers` (SQuAD's layout: `text` and "
                "`answer_start`, a character offset into `context`)")
    return f"{ident}, `source` (the input), `target` (the text to generate), `language`"


def _split_role(split: str) -> str:
    """What a split is, in words, for the card's table."""
    if split == "test":
        return "the set's own test set"
    if split == "dev_remaining":
        return "dev examples in no bucket (model selection)"
    if split.endswith("_dev"):
        return "the bucket's own dev set"
    return "a bucket (content hash)"


GUARANTEES = {
    "published": "the study's own draw (N-way K-shot for classification, Minimum-Including "
                 "for tagging; fsxlt buckets check shows where a published bucket breaks it)",
    "fewclue-fixed": "the benchmark's own fixed splits, each with its own dev set",
    "strategy": "one bucket per candidate pool, chosen by the strategy",
    "nway-kshot": "exactly K examples of every label, buckets disjoint",
    "minimum-including": "every label at least K times, no sentence that could be "
                         "dropped without breaking that (Minimum-Including)",
    "k-examples": "K examples each, buckets disjoint",
    "k-queries": "K queries each with all their pages, buckets disjoint",
    "k-questions": "K questions each, on paragraphs no other bucket, dev or test set shares",
    "k-pairs": "K pairs each, on sources no other bucket shares",
}


__all__ = ["CITATION", "GUARANTEES", "dataset_card", "split_hashes", "split_stem"]
