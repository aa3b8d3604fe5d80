"""The one-line notes a report says beside its tables (on stderr from the CLI): cells whose
records ran under different versions, thread counts, tests, precisions, readings or
long-sentence rules, metrics a run did not compute, arms on other bucket sets, starts
that learned nothing. Each takes the loaded :class:`~fsxlt.report.records.Records`."""

from __future__ import annotations

from fsxlt.errors import FsxltError
from fsxlt.report.records import Records
from fsxlt.study.runs import STRATEGY_MARK


def _mixed_cells(records: Records, column: str) -> tuple[str, list[str]] | None:
    """The first cell whose records differ in ``column`` (named, with how many more) and
    its values, or None; records that do not say (empty or missing) are left out."""
    scores = records.scores[records.scores[column].fillna("").astype(str) != ""]
    cells = scores.groupby(["task", "language", "k", "arm"])[column].unique()
    mixed = cells[cells.map(len) > 1]
    if mixed.empty:
        return None
    (task, lang, k, arm), values = next(iter(mixed.items()))
    more = f" and {len(mixed) - 1} more" if len(mixed) > 1 else ""
    return f"{task}/{lang}/k{k}/{arm}{more}", sorted(values)


def mixed_versions(records: Records) -> str | None:
    """One line naming the cells whose records come from different fsxlt versions."""
    mixed = _mixed_cells(records, "fsxlt_version")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix records of fsxlt {', '.join(mixed[1])}; numerics may "
            "differ between versions")


def mixed_tests(records: Records) -> str | None:
    """One line naming the cells whose records were scored on different test examples or
    with different metrics (a cell's mean would mix them)."""
    for column, what in (("metric", "metrics"), ("test_sha256", "test sets")):
        mixed = _mixed_cells(records, column)
        if mixed is not None:
            shown = ", ".join(v[:15] for v in mixed[1])
            return f"note: {mixed[0]} mix records scored with different {what} ({shown})"
    return None


def foreign_metrics(records: Records) -> str | None:
    """One line naming the cells whose records were all scored with another metric than
    their task's (a hand-edited or foreign record; its mean would sit in the task's table
    under the task's metric). Tasks fsxlt does not know (a moved YAML) are left out."""
    from fsxlt.tasks import get_task

    scores = records.scores[records.scores["metric"].fillna("").astype(str) != ""]
    found = []
    for (task, lang, k, arm), metrics in scores.groupby(
            ["task", "language", "k", "arm"])["metric"].unique().items():
        try:
            own = get_task(task).metric
        except FsxltError:
            continue
        other = sorted(str(m) for m in metrics if m != own)
        if other and len(metrics) == len(other):
            found.append((f"{task}/{lang}/k{k}/{arm}", other, task, own))
    if not found:
        return None
    cell, other, task, own = found[0]
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (f"note: {cell}{more} hold records scored with {', '.join(other)}, not {task}'s "
            f"{own}; their mean is not comparable with the table's other cells")


def other_bucket_sets(records: Records) -> str | None:
    """One line naming a (task, language, K) whose arms ran on different buckets under one
    bucket index (a set sampled again between them): side by side in a table they look
    comparable, and ``report --compare`` refuses the pair. Arms of a selection strategy
    (``~diverse``) build their own buckets and are left out."""
    scores = records.scores
    scores = scores[(scores["bucket_sha256"].fillna("").astype(str) != "")
                    & ~scores["arm"].astype(str).str.contains(STRATEGY_MARK, regex=False)]
    found = []
    for (task, lang, k), cell in scores.groupby(["task", "language", "k"], sort=True):
        hashes = cell.groupby("bucket")["bucket_sha256"].nunique()
        if (hashes > 1).any():
            index = int(hashes[hashes > 1].index[0])
            arms = sorted(set(cell[cell["bucket"] == index]["arm"]))
            found.append(f"{task}/{lang}/k{k} (bucket {index:02d}: {', '.join(arms)})")
    if not found:
        return None
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (f"note: {found[0]}{more}: arms ran on different bucket sets (sampled again "
            "between them); their cells side by side are not paired by bucket")


def mixed_threads(records: Records) -> str | None:
    """One line naming the cells whose CPU runs ran with different torch thread counts
    (CPU numerics depend on the count; runs that did not record it are left out)."""
    mixed = _mixed_cells(records, "torch_threads")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix CPU runs of {', '.join(mixed[1])} torch threads; CPU "
            "numerics depend on the thread count")


def mixed_micro_batches(records: Records) -> str | None:
    """One line naming the cells whose records trained with different micro-batch sizes
    (dropout masks and padding are drawn per micro-batch: another size, another model);
    records of an fsxlt older than 0.12, which do not say, are left out."""
    mixed = _mixed_cells(records, "micro_batch")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix records trained with micro_batch "
            f"{' and '.join(mixed[1])}; see docs/sweeps.md#failures")


def learned_nothing_note(records: Records) -> str | None:
    """One line when records were adapted from (or are the K=0 score of) a start that
    learned nothing on its source dev set: its scores say nothing of the method."""
    if not records.learned_nothing:
        return None
    where, warnings = next(iter(sorted(records.learned_nothing.items())))
    more = len(records.learned_nothing) - 1
    return (f"warning: {where}{f' and {more} more' if more else ''}: their start learned "
            f"nothing ({warnings[0]}); these scores say nothing of the method")


def mixed_precisions(records: Records) -> str | None:
    """One line naming the cells whose records ran in different precisions (bf16 and
    fp32 scores differ in their last digits, and a mean over both is neither)."""
    mixed = _mixed_cells(records, "precision")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix records run in {' and '.join(mixed[1])}; see "
            "docs/training.md#precision")


def mixed_readings(records: Records) -> str | None:
    """One line naming the cells whose records read their dev and test files differently
    (docs/protocol.md#readings): a mean over them mixes two inputs."""
    mixed = _mixed_cells(records, "reading")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix records whose data files were read differently "
            f"({'; '.join(mixed[1])}); see docs/protocol.md#readings")


def mixed_long_sentences(records: Records) -> str | None:
    """One line naming the tagging cells whose records' training rows treated sentences
    longer than max_seq_length differently (truncated or in windows)."""
    mixed = _mixed_cells(records, "long_sentences")
    if mixed is None:
        return None
    return (f"note: {mixed[0]} mix records whose training rows treated long sentences "
            f"differently ({'; '.join(mixed[1])}); see docs/training.md#long-sentences")


__all__ = ["foreign_metrics", "learned_nothing_note", "mixed_long_sentences",
           "mixed_micro_batches",
           "mixed_precisions", "mixed_readings", "mixed_tests", "mixed_threads",
           "mixed_versions", "other_bucket_sets"]
