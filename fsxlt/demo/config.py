"""The demo config: its YAML keys, their checks and the shipped configs (``demo``, ``quick``).

See :func:`parse_demo_config` for the keys; why the defaults are what they are is written
in the YAML files themselves (``configs/demo/``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from fsxlt.config_checks import check_keys, document, mapping, number, numbers, numeric
from fsxlt.errors import FsxltError
from fsxlt.fileio import parse_yaml
from fsxlt.synthetic.benchmark import DEFAULT_CORPUS_SENTENCES, SPLITS, TASKS
from fsxlt.synthetic.encoder import EncoderSettings
from fsxlt.synthetic.grammar import DEFAULT_LANGUAGES

BUILTIN_CONFIGS = ("demo", "quick")
TOP_KEYS = {"name", "description", "seed", "languages", "tasks", "n_buckets", "data", "encoder",
            "source", "adapt", "workers", "threads", "strategies"}
STRATEGY_KEYS = {"task", "language", "k", "n_pools", "pool_size", "names"}
TARGET_CODES = tuple(lang.code for lang in DEFAULT_LANGUAGES[1:])


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


def _positive(value: Any, where: str, key: str, kind: type) -> tuple:
    """One or more numbers, each > 0 (a list of at least one)."""
    values = tuple(numbers(value, where, key, kind, 0, exclusive=True))
    if not values:
        raise FsxltError(f"{where}: {key} must hold at least one positive value")
    return values


def _settings(cls: type, raw: Any, where: str, section: str, lists: Sequence[str] = ()) -> Any:
    """A settings dataclass from a mapping: unknown keys and bad values are one-line errors."""
    raw = mapping(raw, where, section)
    check_keys(raw, {f.name for f in fields(cls)}, where, f" in {section}")
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in raw or raw[f.name] is None:
            continue
        key = f"{section}.{f.name}"
        values[f.name] = (_positive(raw[f.name], where, key, float) if f.name in lists
                          else numeric(raw[f.name], where, key))
    try:
        return cls(**values)
    except TypeError as err:
        raise FsxltError(f"{where}: {section}: {err}") from None


def _tasks(raw: Any, where: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    raw = mapping(raw, where, "tasks")
    if not raw:
        raise FsxltError(f"{where}: tasks must name at least one synthetic task")
    out = []
    for task, settings in raw.items():
        if task not in TASKS:
            raise FsxltError(f"{where}: unknown synthetic task {task!r}; valid: {', '.join(TASKS)}")
        settings = mapping(settings, where, f"tasks.{task}")
        check_keys(settings, {"k"}, where, f" in tasks.{task}")
        ks = _positive(settings.get("k", [1, 2, 4]), where, f"tasks.{task}.k", int)
        out.append((str(task), tuple(sorted(set(ks)))))
    return tuple(out)


def _strategies(raw: Any, tasks: Sequence[tuple[str, Sequence[int]]],
                languages: Sequence[str], where: str) -> StrategySettings | None:
    """The ``strategies`` section: a task and target of the run, one K, the pools and the
    strategy names (each checked against the task)."""
    if raw is None:
        return None
    from fsxlt.sampling.strategies import get_strategy
    from fsxlt.tasks import get_task

    raw = mapping(raw, where, "strategies")
    check_keys(raw, STRATEGY_KEYS, where, " in strategies")
    task = str(raw.get("task", ""))
    if task not in dict(tasks):
        raise FsxltError(f"{where}: strategies.task must be one of the demo's tasks, got {task!r}")
    language = str(raw.get("language", ""))
    if language not in languages:
        raise FsxltError(f"{where}: strategies.language must be one of the demo's targets, got "
                         f"{language!r}")
    spec = get_task(task)
    names = tuple(str(n) for n in raw.get("names") or ())
    if "random" not in names or len(names) < 2:
        raise FsxltError(f"{where}: strategies.names must hold random and at least one other "
                         "strategy")
    for name in names:
        get_strategy(name, spec)
    n_pools = number(raw.get("n_pools", 10), where, "strategies.n_pools", int, 1)
    if n_pools < 2:
        raise FsxltError(f"{where}: strategies.n_pools must be at least 2 (random buckets to "
                         "compare with)")
    return StrategySettings(
        task=task, language=language, k=number(raw.get("k", 1), where, "strategies.k", int, 1),
        n_pools=n_pools,
        pool_size=number(raw.get("pool_size", 100), where, "strategies.pool_size", int, 1),
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
    raw = document(raw, where, "a demo config")
    check_keys(raw, TOP_KEYS, where)
    languages = tuple(str(x) for x in (raw.get("languages") or TARGET_CODES))
    for lang in languages:
        if lang not in TARGET_CODES:
            raise FsxltError(f"{where}: unknown target language {lang!r}; "
                             f"valid: {', '.join(TARGET_CODES)}")
    data = mapping(raw.get("data"), where, "data")
    check_keys(data, {"sizes", "corpus_sentences"}, where, " in data")
    sizes = mapping(data.get("sizes"), where, "data.sizes")
    check_keys(sizes, SPLITS, where, " in data.sizes")
    sizes = {split: number(n, where, f"data.sizes.{split}", int, 1) for split, n in sizes.items()}
    n_buckets = number(raw.get("n_buckets", 10), where, "n_buckets", int, 1)
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
        encoder=_settings(EncoderSettings, raw.get("encoder"), where, "encoder"),
        source=_settings(SourceSettings, raw.get("source"), where, "source", ["lrs"]),
        adapt=_settings(AdaptSettings, raw.get("adapt"), where, "adapt", ["lrs"]),
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
