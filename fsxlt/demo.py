"""``fsxlt demo``: the whole FS-XLT pipeline on the synthetic benchmark, on a CPU, in minutes.

What it runs, every stage writing under ``OUT`` and reusing what a previous
run left there:

====== ====================================== =============================================
stage  writes                                 reused when
====== ====================================== =============================================
data   ``OUT/data/<task>/{split}-<lang>.tsv`` ``OUT/data/benchmark.json`` has the same seed,
       (:func:`fsxlt.synthetic.generate_      tasks, sizes and corpus, and every file still
       benchmark`)                            has its recorded sha256
encoder ``<cache>/tiny-bert-<key>``           always (content-hashed cache of
       (:func:`fsxlt.synthetic.build_tiny_    :func:`~fsxlt.synthetic.build_tiny_encoder`;
       encoder`)                              ``<cache>`` defaults to ``OUT/encoders``)
buckets ``OUT/buckets/<task>/<lang>/k<K>/``   a set's manifest names the same data sha256,
       (:func:`fsxlt.sampling.api.sample`)    seed and number of buckets (else it is
                                              replaced, and the log says so)
source ``OUT/ckpt/<task>/`` (source-training, the checkpoint's record carries the same demo
       :func:`fsxlt.training.source_train`)   key (encoder, data hashes, settings, targets)
sweep  ``OUT/runs/`` (:func:`fsxlt.execution. always: finished runs with a matching config
       run_sweep`, also the K=0 records)      hash are skipped, so a killed demo resumes
                                              (records of an earlier config are replaced)
report ``OUT/report/{report.md,cells.csv,     never (cheap; rebuilt from the records)
       plots/}`` (:func:`fsxlt.report.
       write_report`)
strate- ``OUT/strategies/{buckets,runs}``,    the selection is redone (seconds; the same
gies   ``OUT/report/strategies.md`` (:func:`  buckets come out unchanged), finished runs
       fsxlt.sampling.select.select`, a sweep are skipped
       per strategy, ``report --strategies``)
====== ====================================== =============================================

and finally ``OUT/summary.json`` and a short printed summary: zero-shot and
few-shot scores per task and language, and whether three expected behaviours
hold on this run (:func:`findings`).

The settings come from a demo config (``configs/demo/demo.yaml`` is the
default, ``configs/demo/quick.yaml`` the reduced one the end-to-end test
uses); see :func:`parse_demo_config` for its keys. Why the defaults are what
they are is written in the YAML files themselves: the full demo has to fit
ten minutes on two CPU cores, so it uses 10 buckets instead of the study's
40, one learning rate per stage instead of a grid, a shortened source-
training, and K in {1, 2, 4, 8} for the classification task but {1, 2, 4}
for the two tagging tasks (METHOD.md §3.2 excludes K=8 for tagging: a
Minimum-Including bucket of K=8 is too many labelled tokens to be few-shot).

Every random choice is seeded by the config's ``seed`` (data, encoder,
buckets) or by the tasks' training seeds (source-training, adapting), and
every stage runs with a fixed number of torch threads, so two fresh runs on
the same machine print the same numbers; a run that reuses ``OUT`` reuses
what is already there.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, parse_yaml, sha256_file, sha256_text
from fsxlt.synthetic.benchmark import DEFAULT_CORPUS_SENTENCES, DEFAULT_SIZES, SPLITS, TASKS
from fsxlt.synthetic.encoder import EncoderSettings
from fsxlt.synthetic.grammar import DEFAULT_LANGUAGES

DEMO_FORMAT = "fsxlt-demo/1"
SUMMARY_FILE = "summary.json"
BUILTIN_CONFIGS = ("demo", "quick")
STAGES = ("data", "encoder", "buckets", "source", "sweep", "report", "strategies")
TOP_KEYS = {"name", "description", "seed", "languages", "tasks", "n_buckets", "data", "encoder",
            "source", "adapt", "workers", "threads", "strategies"}
STRATEGY_KEYS = {"task", "language", "k", "n_pools", "pool_size", "names"}
TARGET_CODES = tuple(lang.code for lang in DEFAULT_LANGUAGES[1:])
Log = Callable[[str], None]


# --------------------------------------------------------------------------- the config

@dataclass(frozen=True)
class SourceSettings:
    """Source-training: one lr (or a small grid), epochs, batch size, English train cap."""

    lrs: tuple[float, ...] = (1e-3,)
    epochs: int = 3
    batch_size: int = 32
    train_limit: int | None = None


@dataclass(frozen=True)
class AdaptSettings:
    """Target-adapting: lr grid, epoch cap and early-stopping patience (full fine-tuning)."""

    lrs: tuple[float, ...] = (3e-4,)
    max_epochs: int = 50
    patience: int = 10


@dataclass(frozen=True)
class StrategySettings:
    """The strategy stage: shot-selection strategies on one (task, target, K)."""

    task: str
    language: str
    k: int
    n_pools: int
    pool_size: int
    names: tuple[str, ...]


@dataclass(frozen=True)
class DemoConfig:
    """Everything one demo run depends on (see ``configs/demo/demo.yaml``)."""

    name: str
    seed: int
    languages: tuple[str, ...]
    tasks: tuple[tuple[str, tuple[int, ...]], ...]  # (task, K values), in order
    n_buckets: int
    sizes: Mapping[str, int]
    corpus_sentences: int
    encoder: EncoderSettings
    source: SourceSettings
    adapt: AdaptSettings
    workers: int = 2
    threads: int | None = None
    strategies: StrategySettings | None = None
    source_file: str = field(default="", compare=False)

    @property
    def task_names(self) -> list[str]:
        return [task for task, _ in self.tasks]


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FsxltError(f"{where} must be a mapping")
    return dict(value)


def _known(raw: Mapping[str, Any], allowed: set[str] | Sequence[str], where: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise FsxltError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                         f"valid: {', '.join(sorted(allowed))}")


def _numbers(value: Any, where: str, kind: type) -> tuple:
    items = value if isinstance(value, list) else [value]
    try:
        out = tuple(kind(x) for x in items)
    except (TypeError, ValueError):
        raise FsxltError(f"{where}: expected {kind.__name__} values, got {value!r}") from None
    if not out or any(x <= 0 for x in out):
        raise FsxltError(f"{where}: expected positive values, got {value!r}")
    return out


def _settings(cls: type, raw: Any, where: str, lists: Sequence[str] = ()) -> Any:
    """A settings dataclass from a mapping: unknown keys and bad values are one-line errors."""
    raw = _mapping(raw, where)
    _known(raw, {f.name for f in fields(cls)}, where)
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in raw or raw[f.name] is None:
            continue
        value = raw[f.name]
        if f.name in lists:
            values[f.name] = _numbers(value, f"{where}.{f.name}", float)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FsxltError(f"{where}.{f.name}: expected a number, got {value!r}")
        else:
            values[f.name] = value
    try:
        return cls(**values)
    except TypeError as err:
        raise FsxltError(f"{where}: {err}") from None


def _tasks(raw: Any, where: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    raw = _mapping(raw, f"{where}: tasks")
    if not raw:
        raise FsxltError(f"{where}: tasks must name at least one synthetic task")
    out = []
    for task, settings in raw.items():
        if task not in TASKS:
            raise FsxltError(f"{where}: unknown synthetic task {task!r}; valid: {', '.join(TASKS)}")
        settings = _mapping(settings, f"{where}: tasks.{task}")
        _known(settings, {"k"}, f"{where}: tasks.{task}")
        ks = _numbers(settings.get("k", [1, 2, 4]), f"{where}: tasks.{task}.k", int)
        out.append((str(task), tuple(sorted(set(ks)))))
    return tuple(out)


def _strategies(raw: Any, tasks: Sequence[tuple[str, Sequence[int]]],
                languages: Sequence[str], where: str) -> StrategySettings | None:
    """The ``strategies`` section: a task and target of the run, one K, the pools and the
    strategy names (each checked against the task)."""
    if raw is None:
        return None
    from fsxlt.sampling.strategies import check_strategy
    from fsxlt.tasks import get_task

    where = f"{where}: strategies"
    raw = _mapping(raw, where)
    _known(raw, STRATEGY_KEYS, where)
    task = str(raw.get("task", ""))
    if task not in dict(tasks):
        raise FsxltError(f"{where}.task must be one of the demo's tasks, got {task!r}")
    language = str(raw.get("language", ""))
    if language not in languages:
        raise FsxltError(f"{where}.language must be one of the demo's targets, got "
                         f"{language!r}")
    spec = get_task(task)
    names = tuple(str(n) for n in raw.get("names") or ())
    if "random" not in names or len(names) < 2:
        raise FsxltError(f"{where}.names must hold random and at least one other strategy")
    for name in names:
        check_strategy(name, spec.is_tagging, spec.label_unit == "entity")
    n_pools = _numbers(raw.get("n_pools", 10), f"{where}.n_pools", int)[0]
    if n_pools < 2:
        raise FsxltError(f"{where}.n_pools must be at least 2 (random buckets to compare with)")
    return StrategySettings(
        task=task, language=language, k=_numbers(raw.get("k", 1), f"{where}.k", int)[0],
        n_pools=n_pools,
        pool_size=_numbers(raw.get("pool_size", 100), f"{where}.pool_size", int)[0],
        names=names)


def parse_demo_config(raw: Any, where: str = "<demo config>") -> DemoConfig:
    """Build a :class:`DemoConfig` from a mapping (the YAML file's content).

    Keys: ``seed``; ``languages`` (targets, from the default family);
    ``tasks`` ({task: {k: [...]}}); ``n_buckets`` (per task, language and
    K); ``data`` ({sizes: {train, dev, test}, corpus_sentences});
    ``encoder`` (:class:`~fsxlt.synthetic.EncoderSettings` fields);
    ``source`` and ``adapt`` (:class:`SourceSettings`, :class:`AdaptSettings`);
    ``workers`` (sweep processes; 0 runs in this process) and ``threads``
    (torch threads per process; null: the cores divided among the workers);
    ``strategies`` (optional: ``task``, ``language``, ``k``, ``n_pools``,
    ``pool_size``, ``names``: shot-selection strategies judged against random
    buckets from the same pools).
    """
    raw = _mapping(raw, where)
    _known(raw, TOP_KEYS, where)
    languages = tuple(str(x) for x in (raw.get("languages") or TARGET_CODES))
    for lang in languages:
        if lang not in TARGET_CODES:
            raise FsxltError(f"{where}: unknown target language {lang!r}; "
                             f"valid: {', '.join(TARGET_CODES)}")
    data = _mapping(raw.get("data"), f"{where}: data")
    _known(data, {"sizes", "corpus_sentences"}, f"{where}: data")
    sizes = _mapping(data.get("sizes"), f"{where}: data.sizes")
    _known(sizes, SPLITS, f"{where}: data.sizes")
    sizes = {split: _numbers(n, f"{where}: data.sizes.{split}", int)[0]
             for split, n in sizes.items()}
    n_buckets = _numbers(raw.get("n_buckets", 10), f"{where}: n_buckets", int)[0]
    if n_buckets < 2:
        raise FsxltError(f"{where}: n_buckets must be at least 2 (a std over buckets needs two)")
    workers = raw.get("workers", 2)
    threads = raw.get("threads")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise FsxltError(f"{where}: workers must be a number >= 0, got {workers!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise FsxltError(f"{where}: threads must be a positive number or null, got {threads!r}")
    tasks = _tasks(raw.get("tasks"), where)
    return DemoConfig(
        name=str(raw.get("name") or "demo"), seed=int(raw.get("seed", 0)),
        languages=tuple(dict.fromkeys(languages)), tasks=tasks,
        n_buckets=n_buckets, sizes=sizes,
        corpus_sentences=int(data.get("corpus_sentences", DEFAULT_CORPUS_SENTENCES)),
        encoder=_settings(EncoderSettings, raw.get("encoder"), f"{where}: encoder"),
        source=_settings(SourceSettings, raw.get("source"), f"{where}: source", ["lrs"]),
        adapt=_settings(AdaptSettings, raw.get("adapt"), f"{where}: adapt", ["lrs"]),
        workers=workers, threads=threads,
        strategies=_strategies(raw.get("strategies"), tasks, languages, where),
        source_file=where)


def load_demo_config(name_or_path: str | Path = "demo") -> DemoConfig:
    """A shipped demo config by name (``demo``, ``quick``) or a YAML file by path."""
    text_name = str(name_or_path)
    if text_name in BUILTIN_CONFIGS:
        entry = resources.files("fsxlt").joinpath("configs", "demo", f"{text_name}.yaml")
        text, where = entry.read_text(encoding="utf-8"), f"configs/demo/{text_name}.yaml"
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise FsxltError(f"{path}: demo config not found (or use one of: "
                             f"{', '.join(BUILTIN_CONFIGS)})")
        text, where = path.read_text(encoding="utf-8"), str(path)
    return parse_demo_config(parse_yaml(text, where), where)


# --------------------------------------------------------------------------- stages

@dataclass(frozen=True)
class Layout:
    """Where each stage writes under the demo's output directory."""

    out: Path
    encoder_cache: Path

    @property
    def data(self) -> Path:
        return self.out / "data"

    @property
    def buckets(self) -> Path:
        return self.out / "buckets"

    @property
    def ckpt(self) -> Path:
        return self.out / "ckpt"

    @property
    def runs(self) -> Path:
        return self.out / "runs"

    @property
    def report(self) -> Path:
        return self.out / "report"


def _data_is_current(layout: Layout, config: DemoConfig) -> bool:
    """True if ``OUT/data`` holds exactly what :func:`stage_data` would write."""
    path = layout.data / "benchmark.json"
    if not path.is_file():
        return False
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    wanted_sizes = {task: {**DEFAULT_SIZES, **config.sizes} for task in config.task_names}
    if (description.get("seed") != config.seed
            or description.get("tasks") != config.task_names
            or description.get("sizes") != wanted_sizes
            or description.get("corpus_sentences") != config.corpus_sentences):
        return False
    files = description.get("files") or {}
    for rel, digest in files.items():
        file = layout.data / rel
        if not file.is_file() or sha256_file(file) != digest:
            return False
    return bool(files)


def stage_data(layout: Layout, config: DemoConfig, log: Log) -> dict[str, Any]:
    """Generate the synthetic benchmark (all languages of the family, the config's tasks)."""
    from fsxlt.synthetic import generate_benchmark, read_description

    if _data_is_current(layout, config):
        log(f"data: reusing {layout.data}")
    else:
        generate_benchmark(layout.data, config.seed, sizes=dict(config.sizes),
                           tasks=config.task_names, corpus_sentences=config.corpus_sentences)
        log(f"data: wrote {layout.data}")
    return read_description(layout.data)


def stage_encoder(layout: Layout, config: DemoConfig, threads: int, log: Log) -> Path:
    """Build the tiny encoder, or find it in the cache."""
    from fsxlt.synthetic import build_tiny_encoder

    return build_tiny_encoder(layout.data, layout.encoder_cache, config.seed,
                              settings=config.encoder, threads=threads, log=log)


def _set_is_current(directory: Path, source_sha: str, config: DemoConfig) -> bool:
    from fsxlt.sampling.store import MANIFEST, read_manifest

    if not (directory / MANIFEST).is_file():
        return False
    try:
        manifest = read_manifest(directory)
    except FsxltError:
        return False
    return ((manifest.get("source") or {}).get("sha256") == source_sha
            and manifest.get("seed") == config.seed
            and len(manifest.get("buckets") or []) == config.n_buckets)


def stage_buckets(layout: Layout, config: DemoConfig, log: Log) -> None:
    """Sample ``n_buckets`` buckets per (task, language, K) from the targets' train splits.

    The demo owns ``OUT``: a set drawn by an earlier run with other settings
    (another seed, number of buckets or data) is replaced, and the log says
    how many were.
    """
    from fsxlt.sampling.api import sample
    from fsxlt.sampling.store import REPLACED, bucket_dir

    for task, ks in config.tasks:
        data_dir = layout.data / task
        todo = []
        for lang in config.languages:
            source_sha = sha256_file(data_dir / f"train-{lang}.tsv")
            if not all(_set_is_current(bucket_dir(layout.buckets, task, lang, k), source_sha,
                                       config) for k in ks):
                todo.append(lang)
        sets = []
        if todo:
            sets = sample(task, todo, list(ks), layout.buckets, data_dir=data_dir,
                          n_buckets=config.n_buckets, seed=config.seed, replace=True)
        reused = len(config.languages) - len(todo)
        replaced = sum(s.written is not None and s.written.status == REPLACED for s in sets)
        log(f"buckets: {task}: {len(config.languages)} languages x K {list(ks)} x "
            f"{config.n_buckets} buckets (sampled {len(todo)}, reusing {reused}"
            + (f"; replaced {replaced} sets of an earlier config)" if replaced else ")"))


def _source_key(task: str, encoder: Path, config: DemoConfig, data_dir: Path) -> str:
    """Everything a source-trained checkpoint depends on, hashed."""
    files = ["train-en.tsv", "dev-en.tsv"] + [f"{split}-{lang}.tsv" for lang in config.languages
                                               for split in ("dev", "test")]
    identity = {"task": task, "encoder": encoder.name, "settings": asdict(config.source),
                "targets": list(config.languages),
                "data": {name: sha256_file(data_dir / name) for name in files}}
    return sha256_text(json.dumps(identity, sort_keys=True))[:16]


def _checkpoint_key(directory: Path) -> str | None:
    from fsxlt.training.checkpoint import CHECKPOINT_FILE

    try:
        meta = json.loads((directory / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return (meta.get("demo") or {}).get("key") if isinstance(meta, dict) else None


def source_train_task(task: str, encoder: Path, layout: Layout, config: DemoConfig,
                      progress: bool, log: Log) -> Path:
    """Source-train one task on English (zero-shot scores for every target); reuse if current."""
    from fsxlt.data import load_split
    from fsxlt.training import save_checkpoint, source_train

    data_dir = layout.data / task
    target = layout.ckpt / task
    key = _source_key(task, encoder, config, data_dir)
    if _checkpoint_key(target) == key:
        log(f"source-train: {task}: reusing {target}")
        return target

    def split(lang: str, name: str) -> list:
        return load_split(task, lang, name, data_dir=data_dir).examples

    train = split("en", "train")[:config.source.train_limit]
    result = source_train(
        task, train, split("en", "dev"), model_name=str(encoder),
        target_dev={lang: split(lang, "dev") for lang in config.languages},
        target_test={lang: split(lang, "test") for lang in config.languages},
        sources={"train": str(data_dir / "train-en.tsv"), "dev": str(data_dir / "dev-en.tsv")},
        lrs=list(config.source.lrs), epochs=config.source.epochs,
        batch_size=config.source.batch_size, device="cpu", progress=progress)
    record = dict(result.record, demo={"key": key, "config": config.name})
    save_checkpoint(target, result.model, result.tokenizer, record, overwrite=True)
    sel = record["selection"]
    log(f"source-train: {task}: English dev {100 * sel['dev_score']:.1f} "
        f"(lr {sel['lr']:g}, epoch {sel['epoch']}) in {result.wall_time_s:.0f}s")
    return target


def stage_source(encoder: Path, layout: Layout, config: DemoConfig, threads: int,
                 progress: bool, log: Log) -> None:
    """Source-train every task with ``threads`` torch threads (restored afterwards)."""
    import torch

    from fsxlt.training.checkpoint import quiet_transformers

    quiet_transformers()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for task in config.task_names:
            source_train_task(task, encoder, layout, config, progress, log)
    finally:
        torch.set_num_threads(previous)


def sweep_config(layout: Layout, config: DemoConfig) -> dict[str, Any]:
    """The sweep config (as :func:`fsxlt.execution.parse_config` reads it) of the demo."""
    return {
        "name": f"fsxlt-{config.name}", "out": str(layout.runs), "buckets": str(layout.buckets),
        "data_dir": str(layout.data / "{task}"), "start": str(layout.ckpt / "{task}"),
        "methods": ["full"], "n_buckets": config.n_buckets, "lrs": list(config.adapt.lrs),
        "max_epochs": config.adapt.max_epochs, "patience": config.adapt.patience,
        "tasks": {task: {"languages": list(config.languages), "k": list(ks)}
                  for task, ks in config.tasks},
    }


def stage_sweep(layout: Layout, config: DemoConfig, threads: int, progress: bool,
                log: Log) -> int:
    """Adapt on every bucket (resuming); return the number of failed runs."""
    from fsxlt.execution import parse_config, run_sweep

    sweep = parse_config(sweep_config(layout, config), f"{config.source_file} (sweep)")
    result = run_sweep(sweep, workers=config.workers, threads=threads, device="cpu",
                       progress=progress, replace=True, note=_sweep_note(log))
    status = result.status
    replaced = f", {len(status.replaced)} of them replacing records of an earlier config" \
        if status.replaced else ""
    log(f"sweep: {len(status.plan.runs)} runs ({len(status.plan.runs) - len(status.pending)} "
        f"reused, {len(result.completed)} run now{replaced}, {len(result.failed)} failed)")
    return len(result.failed)


def _sweep_note(log: Log) -> Callable[[str], None]:
    """A sweep's notes for the demo's log, less one line per replaced record (the demo
    owns ``OUT``: its sweeps replace records of an earlier config and count them)."""
    return lambda line: None if line.startswith("replacing ") else log(line)


def stage_report(layout: Layout, config: DemoConfig) -> list[Path]:
    """Tables and plots from the run records."""
    from fsxlt.report import write_report

    return write_report(layout.runs, layout.report, "md", expected=config.n_buckets)


def stage_strategies(layout: Layout, config: DemoConfig, threads: int, progress: bool,
                     log: Log) -> list[dict[str, Any]]:
    """Select buckets by every strategy, adapt on them (resuming), judge them against
    random; return the judgement rows (also ``OUT/report/strategies.md``)."""
    settings = config.strategies
    if settings is None:
        log("strategies: none configured")
        return []
    import torch

    from fsxlt.execution import parse_config, run_sweep
    from fsxlt.report import strategies_report
    from fsxlt.sampling.select import select

    root = layout.out / "strategies"
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:  # the demo owns OUT: sets of an earlier config are replaced (and counted)
        selected = select(settings.task, settings.language, [settings.k], settings.names,
                          root / "buckets", data_dir=layout.data / settings.task,
                          start=layout.ckpt / settings.task, n_pools=settings.n_pools,
                          pool_size=settings.pool_size, seed=config.seed, device="cpu",
                          replace=True)
    finally:
        torch.set_num_threads(previous)
    replaced = sum(s.written is not None and s.written.status == "replaced"
                   for sets in selected.values() for s in sets)
    failed = 0
    for name in settings.names:
        sweep = parse_config({
            "name": f"fsxlt-{config.name}-strategy-{name}", "out": str(root / "runs"),
            "buckets": str(root / "buckets" / name),
            "data_dir": str(layout.data / settings.task),
            "start": str(layout.ckpt / settings.task), "methods": ["full"],
            "n_buckets": settings.n_pools, "lrs": list(config.adapt.lrs),
            "max_epochs": config.adapt.max_epochs, "patience": config.adapt.patience,
            "tasks": {settings.task: {"languages": [settings.language], "k": [settings.k]}},
        }, f"{config.source_file} (strategy {name})")
        failed += len(run_sweep(sweep, workers=config.workers, threads=threads, device="cpu",
                                progress=progress, replace=True, note=_sweep_note(log)).failed)
    rows, _text = strategies_report(root / "runs", "md", layout.report, n_boot=2000)
    log(f"strategies: {len(settings.names)} strategies x {settings.n_pools} pools "
        f"({failed} failed runs" + (f"; replaced {replaced} bucket sets of an earlier config)"
                                    if replaced else ")"))
    return [{"strategy": r.strategy, "mean": round(r.mean, 2),
             "random_mean": round(r.random_mean, 2), "diff": round(r.diff, 2),
             "ci": [round(r.ci_low, 2), round(r.ci_high, 2)], "p_beat": round(r.p_beat, 2),
             "p_value": round(r.p_value, 4)} for r in rows.itertuples(index=False)]


# --------------------------------------------------------------------------- the summary

def summary_cells(layout: Layout) -> list[dict[str, Any]]:
    """Per (task, language, K) of the full fine-tuning arm: n, mean and std in points."""
    from fsxlt.report import aggregate, load_records

    cells = aggregate(load_records(layout.runs))
    cells = cells[cells["arm"] == "full"]
    rows = []
    for row in cells.itertuples(index=False):
        std = None if row.std != row.std else round(float(row.std), 2)  # NaN: one value
        rows.append({"task": row.task, "language": row.language, "k": int(row.k),
                     "n": int(row.n), "mean": round(float(row.mean), 2), "std": std})
    return rows


def _by_cell(cells: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], Mapping[str, Any]]:
    return {(c["task"], c["language"], c["k"]): c for c in cells}


def _few_beats_zero(task: str, ks: Sequence[int], langs: list[str], by: dict,
                    overlap: dict[str, float]) -> dict[str, Any]:
    low = min(langs, key=lambda code: overlap[code])
    few = [by[(task, low, k)]["mean"] for k in ks if (task, low, k) in by]
    zero = by.get((task, low, 0), {}).get("mean")
    gain = None if zero is None or not few else sum(few) / len(few) - zero
    return {"task": task, "behaviour": "few-shot beats zero-shot",
            "holds": gain is not None and gain > 0,
            "detail": f"{low}: no scores" if gain is None else
            f"{low}: mean over K {gain:+.1f} points"}


def _less_spread(task: str, ks: Sequence[int], langs: list[str], by: dict) -> dict[str, Any]:
    first, top = min(ks), max(ks)
    stds = [(by[(task, lang, first)]["std"], by[(task, lang, top)]["std"]) for lang in langs
            if (task, lang, first) in by and (task, lang, top) in by]
    stds = [(a, b) for a, b in stds if a is not None and b is not None]
    smaller = sum(1 for a, b in stds if b < a)
    return {"task": task, "behaviour": "more shots, less spread",
            "holds": bool(stds) and smaller > len(stds) / 2,
            "detail": f"std at K={top} below K={first} for {smaller}/{len(stds)} languages"}


def _overlap_orders(task: str, langs: list[str], by: dict, info: dict) -> dict[str, Any]:
    groups: dict[str, list[tuple[float, str, float]]] = {}
    for lang in langs:
        if (task, lang, 0) in by:
            groups.setdefault(info[lang]["order"], []).append(
                (info[lang]["overlap"], lang, by[(task, lang, 0)]["mean"]))
    chains = [sorted(g, reverse=True) for g in groups.values() if len(g) > 1]
    holds = bool(chains) and all(a[2] >= b[2] for chain in chains
                                 for a, b in zip(chain, chain[1:], strict=False))
    detail = "; ".join(", ".join(f"{lang} {zero:.1f}" for _, lang, zero in chain)
                       for chain in chains) or "no two targets share a word order"
    return {"task": task, "behaviour": "lower overlap, lower zero-shot", "holds": holds,
            "detail": f"zero-shot by falling overlap: {detail}"}


def findings(cells: Sequence[Mapping[str, Any]], languages: Sequence[Mapping[str, Any]],
             tasks: Sequence[tuple[str, Sequence[int]]]) -> list[dict[str, Any]]:
    """Three behaviours FS-XLT should show, checked on this run's numbers, per task.

    - ``few-shot beats zero-shot``: on the lowest-overlap target, the mean
      over K of the K-shot means is above the zero-shot score;
    - ``more shots, less spread``: for most targets, the std over buckets at
      the largest K is below the std at K=1;
    - ``lower overlap, lower zero-shot``: among targets with the same word
      order, a lower overlap never gives a higher zero-shot score.

    What: a list of ``{task, behaviour, holds, detail}``. Why: the demo says
    in its summary whether the run shows what FS-XLT studies report, rather
    than leaving the reader to compare numbers.
    """
    by = _by_cell(cells)
    info = {lang["code"]: lang for lang in languages}
    overlap = {code: float(lang["overlap"]) for code, lang in info.items()}
    out = []
    for task, ks in tasks:
        langs = sorted({c["language"] for c in cells if c["task"] == task})
        if langs:
            out += [_few_beats_zero(task, ks, langs, by, overlap),
                    _less_spread(task, ks, langs, by),
                    _overlap_orders(task, langs, by, info)]
    return out


def summary_text(summary: Mapping[str, Any]) -> str:
    """The short summary the command prints: where things are, a mini-table, the findings."""
    by = _by_cell(summary["cells"])
    info = {lang["code"]: lang for lang in summary["languages"]}
    seconds = summary["stage_seconds"]
    lines = [f"fsxlt demo: done in {summary['wall_time_s']:.0f}s "
             f"({', '.join(f'{k} {seconds[k]:.0f}s' for k in STAGES)})",
             f"report: {summary['report']}  (tables, cells.csv, plots/)",
             f"runs:   {summary['runs']}  ({summary['n_runs']} adapt runs, "
             f"{summary['n_failed']} failed)", ""]
    for task, ks in summary["tasks"]:
        lines.append(f"{task}: test score, zero-shot (K=0) and mean ± std over "
                     f"{summary['n_buckets']} buckets")
        header = f"  {'language':9} {'overlap':>7} {'order':5} {'K=0':>6}" + "".join(
            f" {'K=' + str(k):>12}" for k in ks)
        lines.append(header)
        for lang in summary["target_languages"]:
            zero = by.get((task, lang, 0))
            row = f"  {lang:9} {info[lang]['overlap']:>7.2f} {info[lang]['order']:5} " + \
                (f"{zero['mean']:>6.1f}" if zero else f"{'-':>6}")
            for k in ks:
                cell = by.get((task, lang, k))
                text = "-" if cell is None else f"{cell['mean']:.1f}" + (
                    "" if cell["std"] is None else f" ± {cell['std']:.1f}")
                row += f" {text:>12}"
            lines.append(row)
        lines.append("")
    lines.append("what the numbers show:")
    for item in summary["findings"]:
        mark = "yes" if item["holds"] else "NO "
        lines.append(f"  [{mark}] {item['task']}: {item['behaviour']} ({item['detail']})")
    strategies = summary.get("strategies")
    if strategies and strategies["judged"]:
        lines += ["", f"which shots to label: {strategies['task']} {strategies['language']} "
                  f"K={strategies['k']}, {strategies['n_pools']} pools of "
                  f"{strategies['pool_size']}, against random buckets from the same pools"]
        for row in strategies["judged"]:
            lines.append(f"  {row['strategy']:15} {row['mean']:6.1f} vs {row['random_mean']:.1f}"
                         f"  diff {row['diff']:+.1f} [{row['ci'][0]:+.1f}, {row['ci'][1]:+.1f}]"
                         f"  P(beats random) {row['p_beat']:.2f}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the API

def _default_threads(workers: int) -> int:
    import os

    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_demo(out: str | Path, config: DemoConfig | str | Path = "demo", *,
             encoder_cache: str | Path | None = None, workers: int | None = None,
             progress: bool = True, log: Log | None = None) -> dict[str, Any]:
    """Run the whole demo under ``out``; return the summary (also in ``OUT/summary.json``).

    ``config``: a :class:`DemoConfig`, a shipped config name or a YAML path.
    ``encoder_cache``: where the tiny encoder is cached (default ``OUT/encoders``).
    ``workers`` overrides the config's sweep processes. ``log`` receives one
    line per stage (default: stderr); ``progress`` shows progress bars.
    """
    began = time.perf_counter()
    config = config if isinstance(config, DemoConfig) else load_demo_config(config)
    workers = config.workers if workers is None else workers
    if workers < 0:
        raise FsxltError("workers must be >= 0")
    config = DemoConfig(**{**{f.name: getattr(config, f.name) for f in fields(config)},
                           "workers": workers})
    log = log or _stderr
    out = Path(out)
    layout = Layout(out, Path(encoder_cache) if encoder_cache else out / "encoders")
    threads_all = config.threads or _default_threads(1)
    stages: dict[str, float] = {}

    def stage(name: str, fn: Callable[[], Any]) -> Any:
        log(f"[{STAGES.index(name) + 1}/{len(STAGES)}] {name} ...")
        started = time.perf_counter()
        value = fn()
        stages[name] = round(time.perf_counter() - started, 1)
        return value

    description = stage("data", lambda: stage_data(layout, config, log))
    encoder = stage("encoder", lambda: stage_encoder(layout, config, threads_all, log))
    stage("buckets", lambda: stage_buckets(layout, config, log))
    stage("source", lambda: stage_source(encoder, layout, config, threads_all, progress, log))
    failed = stage("sweep", lambda: stage_sweep(
        layout, config, config.threads or _default_threads(workers), progress, log))
    stage("report", lambda: stage_report(layout, config))
    strategies = stage("strategies", lambda: stage_strategies(
        layout, config, config.threads or _default_threads(workers), progress, log))
    cells = summary_cells(layout)
    languages = [lang for lang in description["languages"]]
    summary = {
        "format": DEMO_FORMAT, "config": config.source_file, "name": config.name,
        "out": str(out), "report": str(layout.report / "report.md"), "runs": str(layout.runs),
        "encoder": str(encoder), "tasks": [[task, list(ks)] for task, ks in config.tasks],
        "target_languages": list(config.languages), "n_buckets": config.n_buckets,
        "languages": languages, "cells": cells,
        "n_runs": sum(1 for c in cells if c["k"] > 0 for _ in range(c["n"])),
        "n_failed": failed, "stage_seconds": stages,
        "strategies": ({**asdict(config.strategies), "names": list(config.strategies.names),
                        "judged": strategies} if config.strategies else None),
        "wall_time_s": round(time.perf_counter() - began, 1),
    }
    summary["findings"] = findings(cells, languages, config.tasks)
    atomic_write_json(out / SUMMARY_FILE, summary)
    return summary
