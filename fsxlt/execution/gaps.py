"""What a dry run finds missing: every input a sweep would refuse, at once.

A sweep stops at the first input it cannot use (a bucket set, a dev or test file, a
remaining dev set, a start), which is right before running anything and wrong for a
plan: a user with half a release wants the whole list. :class:`Gaps` collects, in a
dry run, the one-line refusal of each input in the order the sweep meets them (each
line once), and lets the sweep itself raise the first as before.

A start (``start:``) is local unless it names a hub model that exists: a folder that
does not exist yet is the checkpoint ``fsxlt source-train`` is to write, never a hub id
(``ckpt/xnli-mbert`` looks like one). :func:`start_command` is the command that writes
it, with the English files it reads (:func:`missing_source_files`), which are inputs too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fsxlt.errors import FsxltError, MissingInput

T = TypeVar("T")


@dataclass
class Gaps:
    """The refusals a dry run collects (``collect``) or a sweep raises (not ``collect``)."""

    collect: bool = False
    found: list[FsxltError] = field(default_factory=list)

    def attempt(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``step(*args, **kwargs)``; its one-line refusal is kept (``None`` returned) when
        collecting, raised otherwise."""
        try:
            return step(*args, **kwargs)
        except FsxltError as err:
            if not self.collect:
                raise
            self.add(err)
            return None

    def add(self, err: FsxltError) -> None:
        if all(str(err) != str(known) for known in self.found):
            self.found.append(err)

    def lines(self) -> list[str]:
        """One line per missing input, or per task and kind where many are alike: a task's
        missing bucket sets in one line (its languages and Ks), its missing test files in
        another; any other refusal as it was raised."""
        grouped: dict[tuple[str, str], list[MissingInput]] = {}
        order: list[Any] = []
        for err in self.found:
            if isinstance(err, MissingInput):
                key = (err.kind, err.task)
                if key not in grouped:
                    grouped[key] = []
                    order.append(key)
                grouped[key].append(err)
            else:
                order.append(str(err))
        return [_group_line(grouped[item]) if isinstance(item, tuple) else item
                for item in order]

    def __len__(self) -> int:
        return len(self.found)


def _group_line(errors: list[MissingInput]) -> str:
    """One task's missing inputs of one kind, in a line."""
    if len(errors) == 1:
        return str(errors[0])
    first = errors[0]
    if first.kind == "set":
        store = Path(first.path).parents[1]
        by_lang: dict[str, list[str]] = {}
        for err in errors:
            by_lang.setdefault(err.language, []).append(f"k{err.k}")
        langs = "; ".join(f"{lang} {','.join(ks)}" for lang, ks in by_lang.items())
        return (f"{store}: no bucket sets for {first.task} in {_n(len(by_lang), 'language')} "
                f"({len(errors)} sets: {langs}); import them (fsxlt buckets import-published "
                f"RELEASE --out {store.parent} --task {first.task}) or draw them (fsxlt "
                "sample)")
    names = ", ".join(Path(err.path).name for err in errors)
    where = (" (labelled ones: docs/sampling.md#what-a-study-on-the-published-buckets-needs)"
             if first.kind == "test" else "")
    return (f"{Path(first.path).parent}: no {first.kind} files for {first.task} in "
            f"{_n(len(errors), 'language')} ({names}){where}")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def start_command(plan: Any, start: str) -> str:
    """The ``fsxlt source-train`` command that writes the missing ``start`` of a task,
    scoring zero-shot on the test sets the sweep's runs score (so its K=0 records pair)."""
    parts = ["fsxlt source-train", f"--task {plan.task_ref or plan.task}"]
    if plan.data_dir is not None:
        parts.append(f"--data-dir {plan.data_dir}")
    parts += [f"--target {lang}" for lang in plan.languages]
    if plan.test_limit is not None:
        parts.append(f"--test-limit {plan.test_limit}")
    if plan.reading is not None and not plan.reading.is_default:
        parts += [f"--reading {axis}={choice}" for axis, choice in plan.reading.choices]
    parts.append(f"--out {start}")
    return " ".join(parts)


def missing_source_files(plan: Any) -> list[FsxltError]:
    """The refusal of each file the command of a missing start would read that is not
    there."""
    found: list[FsxltError] = []
    spec = plan.spec
    if plan.data_dir is None:
        return found
    for split in ("train", "dev"):
        path = spec.data.locate(plan.data_dir, split, spec.source_language)
        if not path.is_file():
            found.append(FsxltError(f"{path}: {spec.source_language} {split} file of "
                                    f"{plan.task} not found, which fsxlt source-train reads "
                                    f"to write {plan.start}"))
    return found
