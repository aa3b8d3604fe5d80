"""Aggregation over buckets and the report's tables (Markdown, LaTeX, CSV).

Conventions (docs/protocol.md#reporting):

- Cells are test scores in points (x100): ``mean ± std`` over the buckets of
  one (task, arm, language, K). The standard deviation is the **sample**
  standard deviation (``ddof=1``, pandas' default) unless ``ddof=0`` is asked
  for; the report says which. A cell over one bucket shows no std.
- A cell whose bucket count differs from its bucket set's own number (as its
  records say; else the task's, 40 for the study's tasks; ``expected`` overrides)
  shows ``(n=…)``, a planned subset too; its missing bucket indices (of the buckets
  its sweep planned) are listed under "Missing buckets".
- K=0 is the zero-shot score of the source-trained model (one number).
- ``†`` marks an in-context learning cell whose label words tokenize to
  different numbers of tokens (summed log-likelihoods favour the shorter
  word); the notes list them.
- Fixed splits (FewCLUE's 0-4, bucket sets made by the ``fewclue-fixed``
  sampler, a cell's ``fixed``) expect five buckets and get the FewCLUE
  overview; a cell of five sampled buckets is no fixed split.
- Gain over zero-shot: K-shot mean minus the zero-shot score.
- No-source-training drop: mean of the source-trained arm minus the mean of
  the same method started from the pretrained encoder (positive = omitting
  source-training costs that many points).

Everything is sorted and printed with fixed formats, so the same records
always give byte-identical output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.methods import METHODS, method_label
from fsxlt.report.records import Records
from fsxlt.study.imports import SEPARATOR as IMPORT_SEPARATOR
from fsxlt.study.runs import (
    DEFAULT_REGIME,
    NOSOURCE_SUFFIX,
    SOURCE_MARK,
    arm_regime,
    arm_source,
    arm_strategy,
)
from fsxlt.tasks import get_task

EXPECTED_BUCKETS = 40
FIXED_SPLITS = 5  # FewCLUE: splits 0-4 (its union "all" is shown beside them)
FORMATS = ("md", "latex", "csv")
IN_SOURCE_MARK = "*"  # a K=0 score on a language the start was trained on: not zero-shot
UNEQUAL_TOKENS_MARK = "†"  # ICL label words of unequal token lengths (icl.unequal_label_tokens)


def regime_title(regime: str) -> str:
    """A regime as titles name it: ``multi-ar-de-zh`` -> ``multi (ar, de, zh)``."""
    name, _, languages = regime.partition("-")
    if name.startswith("multi") and languages:
        trained = f"multi ({', '.join(languages.split('-'))})"
        stage = name[len("multi"):]
        return f"{trained} for {stage} epochs, then joint-macro" if stage else trained
    return regime


def arm_label(arm: str, *, name_source: bool = False) -> str:
    """``Full FT``, ``Full FT, source de``, ``Full FT, no source-training``, and
    ``, diverse buckets`` for runs on a selection strategy's buckets, ``, joint training``
    for runs of another training regime; ``name_source`` names English too
    (``Full FT, source en``)."""
    source = arm_source(arm)
    arm, regime = arm_regime(arm)
    arm, strategy = arm_strategy(arm)
    suffix = f", {strategy} buckets" if strategy else ""
    trained = "" if regime == DEFAULT_REGIME else f", {regime_title(regime)} training"
    if source is None:
        base = arm[: -len(NOSOURCE_SUFFIX)]
        return f"{method_label(base)}{trained}, no source-training{suffix}"
    base = arm.partition(SOURCE_MARK)[0]
    label = method_label(base) + trained
    named = name_source or SOURCE_MARK in arm
    return (f"{label}, source {source}" if named else label) + suffix


def arm_title(arm: str) -> str:
    """An arm's label that always names its source (``Full FT, source en``)."""
    return arm_label(arm, name_source=True)


def arm_order(arm: str) -> tuple:
    arm, regime = arm_regime(arm)
    arm, strategy = arm_strategy(arm)
    nosource = arm.endswith(NOSOURCE_SUFFIX)
    base = arm[: -len(NOSOURCE_SUFFIX)] if nosource else arm
    base, _, source = base.partition(SOURCE_MARK)
    rank = METHODS.index(base) if base in METHODS else len(METHODS)
    return (nosource, rank, base, regime != DEFAULT_REGIME, regime, source, strategy)


def task_buckets(task: str, expected: int | None) -> int:
    """The buckets a cell of ``task`` should have: ``expected`` when given, else the
    task's ``sampling.n_buckets`` (40 for the study's tasks, 10 for extractive QA)."""
    if expected is not None:
        return expected
    try:
        return get_task(task).sampling.n_buckets
    except FsxltError:  # a task YAML that moved: the study's count
        return EXPECTED_BUCKETS


def _planned(values: pd.Series) -> set[int]:
    """The bucket indexes the records of a cell say their sweep planned (their union)."""
    return {int(i) for text in values.fillna("") for i in str(text).split()}


def _expected_buckets(task: str, k: int, fixed: bool, set_size: float,
                      expected: int | None) -> int:
    """The buckets a cell should have: FewCLUE's five fixed splits, one K=0 run, else
    ``expected`` when given, its set's own number where its records say it (``set_size``,
    NaN when they do not), else the task's."""
    if fixed:
        return FIXED_SPLITS
    if k == 0:
        return 1
    if expected is None and not np.isnan(set_size):
        return int(set_size)
    return task_buckets(task, expected)


def aggregate(records: Records, *, ddof: int = 1,
              expected: int | None = None) -> pd.DataFrame:
    """One row per (task, arm, language, k): n, mean, std, min and max over its buckets
    (points; cells.csv keeps them all), missing buckets, gain,
    whether its buckets are fixed splits (``fixed``), its records' ``metric`` and whether
    one says its label words differ in token length (``unequal_label_tokens``).

    Rows with k == 0 carry the zero-shot score (source-trained arms only), so
    the frame has the columns ``task, language, k, mean`` that
    ``fsxlt analyze correlate`` reads.
    """
    scores = records.scores
    columns = ["task", "arm", "language", "k", "n", "mean", "std", "ci_low", "ci_high",
               "ci_problem", "min", "max", "zero_shot", "gain", "missing", "expected", "union",
               "in_source", "fixed", "metric", "unequal_label_tokens", "set_buckets"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    grouped = scores.groupby(["task", "arm", "language", "k"], sort=True)
    cells = grouped["test_score"].agg(n="count", mean="mean", std=lambda s: s.std(ddof=ddof),
                                      min="min", max="max").reset_index()
    for column in ("mean", "std", "min", "max"):  # points
        cells[column] *= 100.0
    intervals = grouped["test_score"].apply(lambda s: mean_interval(
        100.0 * s.to_numpy(), interval_key(s.name, records.imported))).reset_index(drop=True)
    cells["ci_low"] = [low for low, _high, _problem in intervals]
    cells["ci_high"] = [high for _low, high, _problem in intervals]
    cells["ci_problem"] = [problem for _low, _high, problem in intervals]
    present = grouped["bucket"].apply(lambda s: set(int(x) for x in s)).reset_index(drop=True)
    fixed = grouped["fixed"].apply(lambda s: bool(s.astype(bool).any())).reset_index(drop=True)
    cells["fixed"] = fixed.astype(bool)
    cells["unequal_label_tokens"] = _any_flag(grouped, scores, "unequal_label_tokens")
    cells["metric"] = grouped["metric"].apply(_metric_name).reset_index(drop=True)
    sizes = (grouped["set_size"].max().reset_index(drop=True) if "set_size" in scores
             else [np.nan] * len(cells))  # the set's own count, where its records say it
    cells["expected"] = [_expected_buckets(t, k, f, size, expected) for f, k, t, size in zip(
        fixed, cells["k"], cells["task"], sizes, strict=True)]
    cells["set_buckets"] = list(cells["expected"])  # the set's own count: what (n=…) is of
    planned = (grouped["planned"].apply(_planned).reset_index(drop=True) if "planned" in scores
               else [set()] * len(cells))  # what the records' sweep planned, where they say
    planned = [plan if expected is None and not is_fixed else set()  # fixed: its 5 splits
               for plan, is_fixed in zip(planned, fixed, strict=True)]
    wanted = [plan or set(range(n)) for plan, n in zip(planned, cells["expected"], strict=True)]
    for at, key in enumerate(zip(cells["task"], cells["language"], cells["k"], cells["arm"],
                                 strict=True)):
        stop = records.stopped.get((key[0], key[1], int(key[2]), key[3]))
        if stop is not None:  # stopped early: the prefix up to its last bucket is the cell
            wanted[at] = {i for i in wanted[at] if i <= stop["last_bucket"]}
    cells["expected"] = [len(want) for want in wanted]
    cells["missing"] = [" ".join(f"{i:02d}" for i in sorted(want - have))
                        for have, want in zip(present, wanted, strict=True)]
    union = {(r.task, r.language, int(r.k), r.arm): 100.0 * r.test_score
             for r in records.unions.itertuples(index=False)}
    cells["union"] = [union.get((t, lang, int(k), arm), np.nan) for t, lang, k, arm in zip(
        cells["task"], cells["language"], cells["k"], cells["arm"], strict=True)]
    zero, in_source = {}, set()
    for r in records.zero_shot.itertuples(index=False):  # the first start of each source
        zero.setdefault((r.task, r.language, r.source), 100.0 * r.test_score)
        if r.in_source:
            in_source.add((r.task, r.language, r.source))
    source_arms = set(scores.loc[scores["source_training"], "arm"])
    cells["zero_shot"] = [zero.get((t, lang, zero_shot_source(arm, records.imported)))
                          if arm in source_arms else None
                          for t, arm, lang in zip(cells["task"], cells["arm"],
                                                  cells["language"], strict=True)]
    cells["in_source"] = False
    cells["zero_shot"] = _own_zero_shot(cells, source_arms).astype(float)
    cells["gain"] = cells["mean"] - cells["zero_shot"]
    zero_rows = []
    metrics = {(t, arm): m for t, arm, m in zip(cells["task"], cells["arm"], cells["metric"],
                                                strict=True)}
    for (task, arm), _ in cells.groupby(["task", "arm"], sort=True):
        if arm not in source_arms:
            continue
        langs = sorted(set(cells.loc[(cells["task"] == task) & (cells["arm"] == arm),
                                     "language"]))
        for lang in langs:
            key = (task, lang, zero_shot_source(arm, records.imported))
            if key in zero:
                zero_rows.append({"task": task, "arm": arm, "language": lang, "k": 0, "n": 1,
                                  "mean": zero[key], "std": np.nan, "ci_low": np.nan,
                                  "ci_high": np.nan, "ci_problem": "",
                                  "zero_shot": zero[key], "gain": 0.0,
                                  "missing": "", "expected": 1, "union": np.nan,
                                  "in_source": key in in_source, "fixed": False,
                                  "metric": metrics.get((task, arm), ""),
                                  "unequal_label_tokens": False, "set_buckets": 1})
    if zero_rows:
        cells = pd.concat([pd.DataFrame(zero_rows, columns=columns), cells[columns]],
                          ignore_index=True)
    cells["k"] = cells["k"].astype(int)
    cells["n"] = cells["n"].astype(int)
    cells["expected"] = cells["expected"].astype(int)
    cells["set_buckets"] = cells["set_buckets"].astype(int)
    cells["fixed"] = cells["fixed"].astype(bool)
    cells["unequal_label_tokens"] = cells["unequal_label_tokens"].astype(bool)
    cells["order"] = cells["arm"].map(arm_order)
    cells = cells.sort_values(["task", "order", "language", "k"], ignore_index=True)
    return cells[columns]


BOOTSTRAP = 2000  # resamples of a cell's buckets for its mean's interval


def interval_key(cell: tuple, imported: dict[str, str]) -> str:
    """The seed key of a cell's (task, arm, language, k) interval: an imported arm's by the
    arm its own study named (``<prefix>.<arm>`` without the prefix), so the same buckets'
    scores get the same interval in their study's report and in any that imports them."""
    from fsxlt.study.imports import SEPARATOR

    task, arm, language, k = cell
    own = arm.partition(SEPARATOR)[2] if arm in imported else arm
    return f"{task}/{own}/{language}/{k}"


def mean_interval(scores: np.ndarray, key: str) -> tuple[float, float, str]:
    """The 95% percentile-bootstrap interval of the mean of a cell's bucket scores
    (:data:`BOOTSTRAP` resamples, seeded by the cell's ``key``: the same records give the
    same interval) and ``""``; NaN for fewer than two buckets, NaN and the reason where the
    resampled means make no interval (:func:`fsxlt.report.bootstrap.checked_interval`)."""
    from fsxlt.report.bootstrap import checked_bootstrap_ci

    if len(scores) < 2:
        return float("nan"), float("nan"), ""
    return checked_bootstrap_ci(scores, seed=0, key=key, n_boot=BOOTSTRAP)


def zero_shot_source(arm: str, imported: dict[str, str]) -> str | None:
    """The source under which an arm's start's K=0 score is read: :func:`arm_source`; for an
    arm imported from another study (``<prefix>.<arm>``), its own source behind the prefix,
    as the imported K=0 record's (never a local start's)."""
    if arm in imported:
        prefix, own = arm.split(IMPORT_SEPARATOR, 1)
        source = arm_source(own)
        return None if source is None else f"{prefix}{IMPORT_SEPARATOR}{source}"
    return arm_source(arm)


def _own_zero_shot(cells: pd.DataFrame, source_arms: set[str]) -> pd.Series:
    """Each cell's zero-shot score: its start's (source-trained arms, set already), else the
    arm's own K=0 run where it has one (in-context learning without demonstrations, PET's
    untrained masked LM), so its gain is over that."""
    own = {(t, arm, lang): mean for t, arm, lang, k, mean in zip(
        cells["task"], cells["arm"], cells["language"], cells["k"], cells["mean"], strict=True)
        if k == 0 and arm not in source_arms}
    return pd.Series([z if arm in source_arms else own.get((t, arm, lang))
                      for t, arm, lang, z in zip(cells["task"], cells["arm"], cells["language"],
                                                 cells["zero_shot"], strict=True)],
                     index=cells.index, dtype=float)


def _any_flag(grouped: Any, scores: pd.DataFrame, column: str) -> pd.Series:
    """Per cell, whether any of its records sets ``column`` (False where no record says)."""
    if column not in scores.columns:
        return pd.Series(False, index=range(grouped.ngroups))
    return grouped[column].apply(
        lambda s: bool(s.fillna(False).astype(bool).any())).reset_index(drop=True)


def _metric_name(metrics: pd.Series) -> str:
    """The metric of a cell's records (``a/b`` should they differ; "" when none says)."""
    return "/".join(sorted({str(m) for m in metrics if isinstance(m, str) and m}))


# --------------------------------------------------------------------------- formatting

def fmt(value: float | None, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def cell_text(row: pd.Series, expected: int | None) -> str:
    """``mean ± std``, ``(n=…)`` when buckets are missing, ``; all x`` for a union split,
    ``†`` when the cell's label words differ in token length."""
    mark = UNEQUAL_TOKENS_MARK if row.get("unequal_label_tokens") else ""
    if row["k"] == 0:
        return fmt(row["mean"]) + (IN_SOURCE_MARK if row.get("in_source") else "") + mark
    text = fmt(row["mean"])
    if row["n"] > 1 and not np.isnan(row["std"]):
        text += f" ± {fmt(row['std'])}"
    own = row.get("set_buckets", row.get("expected", expected))
    if own is None or (isinstance(own, float) and np.isnan(own)):
        own = row.get("expected", expected)
    if row["n"] != own:  # fewer buckets than the set holds, planned or not
        text += f" (n={row['n']})"
    if not np.isnan(row.get("union", np.nan)):
        text += f"; all {fmt(row['union'])}"
    return text + mark


class Table:
    """A titled table of strings, rendered as Markdown or LaTeX."""

    def __init__(self, title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                 key: tuple[str, str] | None = None):
        self.title, self.header, self.rows = title, list(header), [list(r) for r in rows]
        self.key = key              # (task, arm) of an arm's main table: its plots' place
        self.images: list[str] = []  # plots shown under it (paths relative to the page)

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.header) + " |",
                 "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        for image in self.images:
            stem = image.rsplit("/", 1)[-1].removesuffix(".png")
            lines += ["", f"![{stem}]({image})"]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        spec = "l" + "r" * (len(self.header) - 1)
        lines = [f"% {latex_escape(self.title)}", "\\begin{table}[ht]", "\\centering",
                 f"\\caption{{{latex_escape(self.title)}}}", f"\\begin{{tabular}}{{{spec}}}",
                 "\\toprule", " & ".join(latex_escape(h) for h in self.header) + " \\\\",
                 "\\midrule"]
        lines += [" & ".join(latex_escape(c) for c in row) + " \\\\" for row in self.rows]
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    out = str(text)
    for char, repl in (("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("_", "\\_"),
                       ("#", "\\#"), ("$", "\\$")):
        out = out.replace(char, repl)
    return out.replace("±", "$\\pm$").replace("–", "--").replace("−", "$-$").replace(
        UNEQUAL_TOKENS_MARK, "$^\\dagger$")


def fixed_split_table(cells: pd.DataFrame, expected: int | None = None) -> Table | None:
    """FewCLUE's view: one row per arm, one column per task, and the average over tasks.

    Only cells on fixed splits (``fixed``: bucket sets of the ``fewclue-fixed``
    sampler) are shown, never cells that merely have five buckets. A column
    is a task (``task lang`` when the task ran on several languages); a cell
    is the mean ± std over the fixed splits 0-4, with the ``all`` split's
    score beside it; the average is the mean of the columns' means over the
    columns the arm ran (named in the header when an arm lacks some). The
    title names the metric the tasks share; where they differ, each column
    names its own.
    """
    fixed = cells[cells["fixed"].astype(bool) & (cells["k"] > 0)]
    if fixed.empty:
        return None
    keys = sorted(set(zip(fixed["task"], fixed["language"], strict=True)))
    several = {task for task, _ in keys if sum(t == task for t, _ in keys) > 1}
    metric = {key: m for key, m in zip(zip(fixed["task"], fixed["language"], strict=True),
                                       fixed["metric"], strict=True)}
    shared = len(set(metric.values())) == 1
    header = []
    for task, lang in keys:
        name = f"{task} {lang}" if task in several else task
        header.append(name if shared else f"{name} ({metric[(task, lang)] or '?'})")
    rows = []
    for arm in sorted(set(fixed["arm"]), key=arm_order):
        row, means = [arm_label(arm)], []
        for task, lang in keys:
            hit = fixed[(fixed["arm"] == arm) & (fixed["task"] == task)
                        & (fixed["language"] == lang)]
            row.append(cell_text(hit.iloc[0], expected) if len(hit) else "–")
            if len(hit):
                means.append(float(hit.iloc[0]["mean"]))
        average = fmt(float(np.mean(means)))
        row.append(average if len(means) == len(keys) else f"{average} ({len(means)} tasks)")
        rows.append(row)
    what = f"test {next(iter(metric.values())) or 'score'}" if shared else \
        "test score (each column's metric in its header)"
    return Table(f"FewCLUE: {what}, mean ± std over splits 0-4 (all: the union split)",
                 ["arm"] + header + ["average"], rows)


def source_tables(zero_shot: pd.DataFrame) -> list[Table]:
    """Per task, the zero-shot score of every start (row: its source) on every target.

    A start's row is its source languages (``en``, ``de``, ``en+de+es``),
    followed by where it was read when two starts share a source. A score on
    a language the start was trained on is marked ``*``: it is not
    zero-shot, and the last row ("best zero-shot source") never picks it.
    """
    tables = []
    for task, part in zero_shot.groupby("task", sort=True):
        langs = sorted(set(part["language"]))
        starts = part.drop_duplicates(["source", "start"])[["source", "start", "where"]]
        shared = starts["source"].duplicated(keep=False)
        rows, best = [], {}
        for (source, start, where), twin in zip(starts.itertuples(index=False, name=None),
                                                shared, strict=True):
            label = f"{source} ({where})" if twin else source
            row = [label]
            for lang in langs:
                hit = part[(part["source"] == source) & (part["start"] == start)
                           & (part["language"] == lang)]
                if not len(hit):
                    row.append("–")
                    continue
                score, marked = 100.0 * float(hit.iloc[0]["test_score"]), bool(
                    hit.iloc[0]["in_source"])
                row.append(fmt(score) + (IN_SOURCE_MARK if marked else ""))
                if not marked and score > best.get(lang, (-np.inf, ""))[0]:
                    best[lang] = (score, label)
            rows.append(row)
        rows.append(["best zero-shot source"] + [best[lang][1] if lang in best else "–"
                                                 for lang in langs])
        tables.append(Table(f"{task}: zero-shot test score by source (rows) and target "
                            f"(columns); {IN_SOURCE_MARK} trained on that language, "
                            "not zero-shot", ["source"] + langs, rows))
    return tables


def build_tables(cells: pd.DataFrame, expected: int | None = None,
                 unsourced: frozenset[str] = frozenset()) -> list[Table]:
    """Main, gain, variants-side-by-side and no-source-drop tables, task by task, and the
    FewCLUE overview when runs on fixed splits are there. Titles name each arm's source,
    except for the ``unsourced`` arms (:func:`unsourced_arms`)."""
    tables: list[Table] = []
    overview = fixed_split_table(cells, expected)
    if overview is not None:
        tables.append(overview)
    for task in sorted(set(cells["task"])):
        part = cells[cells["task"] == task]
        arms = sorted(set(part["arm"]), key=arm_order)
        for arm in arms:
            sub = part[part["arm"] == arm]
            ks = sorted(set(sub["k"]))
            langs = sorted(set(sub["language"]))
            header = ["language"] + [f"K={k}" for k in ks]
            rows = []
            for lang in langs:
                row = [lang]
                for k in ks:
                    hit = sub[(sub["language"] == lang) & (sub["k"] == k)]
                    row.append(cell_text(hit.iloc[0], expected) if len(hit) else "–")
                rows.append(row)
            label = "K=0: zero-shot; " if 0 in ks else ""
            title = arm_label(arm) if arm in unsourced else arm_title(arm)
            tables.append(Table(f"{task}: {title} ({label}test, mean ± std over "
                                "buckets)", header, rows, key=(task, arm)))
            shot_ks = [k for k in ks if k > 0]
            if 0 in ks and shot_ks:
                rows = []
                for lang in langs:
                    row = [lang]
                    for k in shot_ks:
                        hit = sub[(sub["language"] == lang) & (sub["k"] == k)]
                        row.append(fmt(hit.iloc[0]["gain"], signed=True) if len(hit) else "–")
                    rows.append(row)
                tables.append(Table(f"{task}: {title}, gain over zero-shot",
                                    ["language"] + [f"K={k}" for k in shot_ks], rows))
        source_arms = [a for a in arms if not a.endswith(NOSOURCE_SUFFIX)]
        if len(source_arms) > 1:
            shot = part[(part["k"] > 0) & part["arm"].isin(source_arms)]
            for k in sorted(set(shot["k"])):
                sub = shot[shot["k"] == k]
                rows = []
                for lang in sorted(set(sub["language"])):
                    row = [lang]
                    for arm in source_arms:
                        hit = sub[(sub["language"] == lang) & (sub["arm"] == arm)]
                        row.append(cell_text(hit.iloc[0], expected) if len(hit) else "–")
                    rows.append(row)
                tables.append(Table(f"{task}: adapting variants side by side, K={k} (source "
                                    "en unless a column names another)",
                                    ["language"] + [arm_label(a) for a in source_arms], rows))
        for arm in arms:
            if not arm.endswith(NOSOURCE_SUFFIX) or arm[: -len(NOSOURCE_SUFFIX)] not in arms:
                continue
            base = arm[: -len(NOSOURCE_SUFFIX)]
            with_src = part[(part["arm"] == base) & (part["k"] > 0)]
            without = part[(part["arm"] == arm) & (part["k"] > 0)]
            ks = sorted(set(with_src["k"]) & set(without["k"]))
            rows = []
            for lang in sorted(set(with_src["language"]) & set(without["language"])):
                row = [lang]
                for k in ks:
                    a = with_src[(with_src["language"] == lang) & (with_src["k"] == k)]
                    b = without[(without["language"] == lang) & (without["k"] == k)]
                    row.append(fmt(a.iloc[0]["mean"] - b.iloc[0]["mean"], signed=True)
                               if len(a) and len(b) else "–")
                rows.append(row)
            tables.append(Table(f"{task}: drop without source-training, {arm_title(base)} "
                                "(source-trained minus pretrained start)",
                                ["language"] + [f"K={k}" for k in ks], rows))
    return tables
