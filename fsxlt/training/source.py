"""Source-training: fine-tune on English, pick a checkpoint, score K=0.

The protocol: docs/protocol.md#source-training.

The source need not be English: a pivot language, or several languages at
once (their training sets joined), selected on the source dev sets or on
every language's dev set (XGLUE's protocol); the record says which
(``source_languages``, ``selection``), and zero-shot scores of a target that
was itself a source are marked ``in_source`` (they are not zero-shot).

For every learning rate of the grid (each a separate run from the same
pretrained weights and the same seed): ``epochs`` epochs over the English
training data in shuffled batches of ``batch_size`` (Adam, default betas, no weight
decay, constant lr; or ``optimizer``, :mod:`fsxlt.training.optim`). A training
sentence longer than ``max_seq_length`` wordpieces is truncated (the study's) or,
with ``long_sentences="windows"`` (tagging), cut into windows that are each a
training row; dev and test sets are always scored in windows, every word of them.
After every epoch the checkpoint is scored on the
English dev set and on every configured target dev set (and, optionally, the
target test sets); all these scores are recorded, so that the oracle
protocol (select by target dev) can be reported later next to the standard
one (select by English dev). The checkpoint with the best English dev score
over all runs and epochs is kept (in memory) and its zero-shot (K=0) test
scores are computed for every target language that has a test set.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from fsxlt.data import Example
from fsxlt.data.examples import example_texts
from fsxlt.errors import FsxltError
from fsxlt.identity import pinned
from fsxlt.methods import DEFAULT_MODEL, check_source_training, get_method
from fsxlt.models.encoding import (
    DEFAULT_LONG_SENTENCES,
    Featurizer,
    check_label_all_tokens,
    check_long_sentences,
    collate,
)
from fsxlt.models.model import DEFAULT_HEAD, FsxltModel, check_head
from fsxlt.models.precision import resolve_precision
from fsxlt.models.prediction import (
    describe_examples,
    make_eval_set,
    require_scorable,
    score,
    score_and_predict,
)
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.terminal import bar_options
from fsxlt.training.candidates import CandidateCollector, check_averaging
from fsxlt.training.checkpoint import (
    check_tokenizer,
    load_start,
    resolve_device,
    save_checkpoint,
)
from fsxlt.training.loop import (
    average_states,
    config_hash,
    make_optimizer,
    restore,
    seed_all,
    snapshot,
    train_step,
    versions,
)
from fsxlt.training.optim import OptimizerSettings
from fsxlt.training.oracle import (
    OracleKeeper,
    OracleStart,
    as_oracle_record,
    check_oracle,
    link_to_selected,
    oracle_config,
)
from fsxlt.training.seed_average import SeedMember, SeedPlan, check_seeds, seed_average_record
from fsxlt.training.source_record import (  # learned_nothing: re-exported
    config,
    data_record,
    learned_nothing,
    oracle,
    protocol,
)
from fsxlt.training.starts import bind_to_start

SOURCE_FORMAT = "fsxlt-source-run/1"


@dataclass
class SourceResult:
    """The selected model (weights loaded), its tokenizer and the source-run record.

    The wall time is kept beside the record, not in it: the record becomes
    the checkpoint's metadata, whose bytes identify the checkpoint to the
    sweep, so the same training on the same machine must give the same bytes.
    """

    model: FsxltModel
    tokenizer: Any
    record: dict[str, Any]
    wall_time_s: float = 0.0
    oracles: list[OracleStart] = field(default_factory=list)  # keep oracle: one per target

    def save(self, out_dir: str | Path, *, overwrite: bool = False) -> Path:
        """Write the checkpoint (atomically) with its oracle starts in ``oracle-<lang>/``."""
        return save_checkpoint(out_dir, self.model, self.tokenizer, self.record,
                               overwrite=overwrite,
                               inside={o.name: (o.state, o.record) for o in self.oracles})


SELECTIONS = ("source-dev", "all-dev")


@dataclass(frozen=True)
class _Schedule:
    """The learning-rate grid and the loop of every run of it."""

    lrs: list[float]
    epochs: int
    batch_size: int
    seed: int
    long_sentences: str = DEFAULT_LONG_SENTENCES  # training rows of a long sentence
    optimizer: OptimizerSettings = OptimizerSettings()  # the study's Adam, constant lr
    label_all_tokens: bool = False  # tagging: every wordpiece of a word scored in training
    head: str = DEFAULT_HEAD  # classification: BERT's pooler head, or cls (the peer's)
    eval_long: str = "whole"  # tagging: a long dev/test sentence scored whole or truncated


@dataclass
class _EvalSets:
    """The dev sets (source and target) and test sets, and which dev sets select."""

    dev: dict[str, Any]
    test: dict[str, Any]
    selecting: list[str]

    def selection_score(self, scores: dict[str, float]) -> float:
        return sum(scores[lang] for lang in self.selecting) / len(self.selecting)


@dataclass(frozen=True)
class _Data:
    """The examples a source-training reads, where they came from, and how it selects."""

    train: Sequence[Example]
    source_dev: dict[str, Sequence[Example]]
    target_dev: dict[str, Sequence[Example]]
    target_test: dict[str, Sequence[Example]]
    sources: dict[str, str]  # "train", "dev", "dev-<lang>", "test-<lang>" -> where from
    languages: list[str]  # the source languages, the first the pivot
    select: str


@dataclass
class _Training:
    """What every epoch of one source-training uses."""

    task: TaskSpec
    model: FsxltModel
    trainer: Any
    featurizer: Featurizer
    device: torch.device
    precision: str
    schedule: _Schedule
    sets: _EvalSets
    test_every_checkpoint: bool
    bar: Any
    progress: bool = False  # bars on stderr (the training's, then the zero-shot test's)
    collector: CandidateCollector | None = None  # the candidates beside the selected one
    oracles: OracleKeeper | None = None  # keep oracle: the best epoch per target language


@dataclass
class _Search:
    """The grid's checkpoints (scores per lr and epoch) and the best one so far."""

    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    lr_results: list[dict[str, Any]] = field(default_factory=list)
    best: tuple[float, float, int] | None = None  # (score, lr, epoch)
    best_state: dict[str, torch.Tensor] | None = None


def source_train(task: str | TaskSpec, train: Sequence[Example],
                 dev: Sequence[Example] | dict[str, Sequence[Example]], *,
                 model_name: str = DEFAULT_MODEL,
                 source_languages: Sequence[str] | None = None, select: str = "source-dev",
                 target_dev: dict[str, Sequence[Example]] | None = None,
                 target_test: dict[str, Sequence[Example]] | None = None,
                 sources: dict[str, str] | None = None,
                 lrs: Sequence[float] | None = None, epochs: int | None = None,
                 batch_size: int | None = None, seed: int | None = None,
                 max_seq_length: int | None = None, device: str | torch.device | None = None,
                 precision: str = "auto", checkpoint_test_scores: bool = False,
                 progress: bool = False, method: str = "full",
                 average_last: int | None = None, keep: str = "selected",
                 long_sentences: str = DEFAULT_LONG_SENTENCES,
                 seeds: Sequence[int] | None = None,
                 seed_weights: str | None = None, optimizer: OptimizerSettings | None = None,
                 label_all_tokens: bool = False, head: str = DEFAULT_HEAD,
                 eval_long: str = "whole") -> SourceResult:
    """Source-train ``model_name`` on ``train``; select by the source ``dev`` score.

    ``source_languages`` (default: the task's, English) are the languages of ``train`` (a
    pivot language, or the union of several); ``dev`` is one dev set, or one per source
    language. ``select``: ``source-dev`` (the mean dev score over the source languages; the
    study's English dev) or ``all-dev`` (XGLUE's choice: the mean over every language with a
    dev set, targets included).

    ``target_dev``/``target_test`` map target languages to their examples; ``sources`` maps
    ``"train"``, ``"dev"``, ``"dev-<lang>"``, ``"test-<lang>"`` to where the data came from
    (recorded only). With ``checkpoint_test_scores`` every checkpoint is also scored on the
    target test sets (what oracle zero-shot numbers and directional-agreement analyses
    need). ``method`` is ``full`` (the study's source-training) or ``pet`` (the task's
    pattern and English verbalizer, for every language; the trained masked-LM head is saved
    with the checkpoint, so adapting with ``pet`` continues from it).

    ``average_last`` N (checkpoint averaging): every lr run keeps its last N epochs'
    weights, and the record's ``candidates`` holds the dev and test scores of the selected
    checkpoint, each run's last epoch (``last@<lr>``), the mean of each run's last N epochs
    (``average-last-<N>@<lr>``) and the mean of the runs' last epochs (``average-lrs``).
    ``keep`` picks the returned model: ``selected`` (the default), ``last`` (one lr),
    ``average-last`` (one lr) or ``average-lrs`` (the averages need ``average_last``); its
    scores become the record's ``zero_shot``. See :mod:`fsxlt.training.candidates`.
    ``keep="oracle"``: also ``oracles``, per target language its dev set's best epoch
    (:mod:`fsxlt.training.oracle`; :meth:`SourceResult.save` writes them). ``keep=
    "average-seeds"``: one training per ``seeds``, the model the mean of their
    ``seed_weights`` (``selected`` or ``last``; :mod:`fsxlt.training.seed_average`).

    ``long_sentences``: a training sentence longer than ``max_seq_length``, ``truncate``d
    (the study's) or cut into ``windows`` (tagging); ``label_all_tokens``: tagging, every
    wordpiece of a word scored in training; ``head``: ``pooler`` (the study's) or ``cls`` (the
    peer's: no pooler; :mod:`fsxlt.models.model`); ``eval_long``: a long tagging dev or
    test sentence scored ``whole`` or ``truncate``d (:class:`~fsxlt.models.encoding.
    Featurizer`). The record (the checkpoint) says each.
    """
    task, model_name = get_task(task), pinned(str(model_name))  # hub: NAME@COMMIT it loads
    schedule = replace(_schedule(task, lrs, epochs, batch_size, seed, long_sentences),
                       optimizer=optimizer or OptimizerSettings(),
                       label_all_tokens=check_label_all_tokens(label_all_tokens, task),
                       head=check_head(head, task.kind, "--head"), eval_long=eval_long)
    check_averaging(average_last, keep, schedule.lrs)
    plan = check_seeds(seeds, seed, keep, seed_weights, schedule.lrs)
    sources_langs = list(source_languages or [task.source_language])
    data = _Data(train, _source_dev(train, dev, sources_langs, select), dict(target_dev or {}),
                 dict(target_test or {}), dict(sources or {}), sources_langs, select)
    check_oracle(keep, data.target_dev)
    request = _Request(task, data, model_name, schedule, max_seq_length, device, precision,
                       checkpoint_test_scores, progress, method, average_last, keep)
    if plan is None:
        return _run(request).result
    return _average_seeds(request, plan)


@dataclass(frozen=True)
class _Request:
    """One source-training's choices, checked (one per seed when averaging seeds)."""

    task: TaskSpec
    data: _Data
    model_name: str
    schedule: _Schedule
    max_seq_length: int | None
    device: str | torch.device | None
    precision: str
    checkpoint_test_scores: bool
    progress: bool
    method: str
    average_last: int | None
    keep: str


@dataclass
class _Run:
    """A finished source-training: its result and what scored it (to score more)."""

    result: SourceResult
    training: _Training
    search: _Search


def _run(request: _Request) -> _Run:
    """One source-training over the lr grid (one seed)."""
    task, schedule, data = request.task, request.schedule, request.data
    averaging = check_averaging(request.average_last, request.keep, schedule.lrs)
    began = time.perf_counter()
    device = resolve_device(request.device)
    start = load_start(request.model_name, task, seed=schedule.seed, head=schedule.head)
    check_tokenizer(start.tokenizer, request.model_name,
                    [text for ex in data.train[:200] for text in example_texts(ex)])
    model = start.model.to(device)
    featurizer = Featurizer(start.tokenizer, task, request.max_seq_length,
                            eval_long=schedule.eval_long)
    trainer = get_method(request.method, task.kind)
    check_source_training(type(trainer))
    bind_to_start(trainer, task, data.languages[0], start)
    rows, sets = _inputs(task, trainer, featurizer, device, data, schedule.long_sentences,
                         schedule.label_all_tokens)
    steps_per_epoch = (len(rows) + schedule.batch_size - 1) // schedule.batch_size
    bar = tqdm(total=len(schedule.lrs) * schedule.epochs * steps_per_epoch,
               disable=not request.progress, desc=f"source-train {task.name}", unit="step",
               **bar_options())  # off a terminal: a plain line every 30 s
    precision = resolve_precision(request.precision, device)
    training = _Training(task, model, trainer, featurizer, device, precision, schedule, sets,
                         request.checkpoint_test_scores, bar, request.progress)
    training.collector = CandidateCollector(averaging, lambda: _scores(training))
    if request.keep == "oracle":
        training.oracles = OracleKeeper([lang for lang, ex in data.target_dev.items() if ex])
    try:  # closed before an interrupt reaches the command line, which then says so
        search = _search(training, rows)
    finally:
        bar.close()
    assert search.best is not None and search.best_state is not None
    oracles = _oracle_starts(training, search, data, request.model_name)
    restore(model, search.best_state)  # the masked-LM head too: best_state holds every weight
    if averaging.active:
        _keep_candidate(training, search, data)
    record = _record(training, search, data, request.model_name)
    if averaging.active:
        _add_candidates(record, training.collector)
    if oracles:
        link_to_selected(oracles, record)
    result = SourceResult(model, start.tokenizer, record,
                          wall_time_s=round(time.perf_counter() - began, 3), oracles=oracles)
    return _Run(result, training, search)


def _oracle_starts(training: _Training, search: _Search, data: _Data,
                   model_name: str) -> list[OracleStart]:
    """Each target's oracle start (keep oracle), its record scored with the model holding
    its weights (the model holds the last of them afterwards)."""
    if training.oracles is None:
        return []
    grid = oracle(search.checkpoints, data.target_dev)
    starts = []
    for lang, best in training.oracles.best.items():
        assert (best.lr, best.epoch) == (grid[lang]["lr"], grid[lang]["epoch"])
        restore(training.model, best.state)
        record = _record(training, search, data, model_name, oracle_config(lang))
        starts.append(OracleStart(lang, best.state, as_oracle_record(record, lang, grid[lang])))
    return starts


def _average_seeds(request: _Request, plan: SeedPlan) -> SourceResult:
    """One training per seed, then the mean of their kept weights, scored and recorded."""
    members: list[SeedMember] = []
    run: _Run | None = None
    for seed in plan.seeds:
        run = None  # the previous seed's model goes before the next one loads
        run = _run(replace(request, schedule=replace(request.schedule, seed=seed),
                           keep=plan.member_keep))
        members.append(SeedMember(seed, snapshot(run.training.model, device="cpu"),
                                  run.result.record, run.result.wall_time_s))
    assert run is not None
    training, model = run.training, run.training.model
    for member in members:
        restore(model, member.state)
        member.dev, member.test = _scores(training)
    restore(model, average_states([member.state for member in members]))
    scores = _scores(training)
    record = _record(training, run.search, request.data, request.model_name, plan.config())
    record = seed_average_record(record, members, plan, scores,
                                 lambda checkpoints: oracle(checkpoints,
                                                             request.data.target_dev))
    return SourceResult(model, run.result.tokenizer, record,
                        wall_time_s=round(sum(m.wall_time_s for m in members), 3))


def _schedule(task: TaskSpec, lrs: Sequence[float] | None, epochs: int | None,
              batch_size: int | None, seed: int | None,
              long_sentences: str = DEFAULT_LONG_SENTENCES) -> _Schedule:
    """The task's defaults, overridden by what is given, checked."""
    cfg = task.training
    schedule = _Schedule(lrs=[float(x) for x in (lrs or cfg.source_lrs)],
                         epochs=cfg.source_epochs if epochs is None else int(epochs),
                         batch_size=cfg.source_batch_size if batch_size is None
                         else int(batch_size),
                         seed=cfg.seed if seed is None else int(seed),
                         long_sentences=check_long_sentences(long_sentences, task))
    if any(not lr > 0 for lr in schedule.lrs) or schedule.epochs < 1 \
            or schedule.batch_size < 1:
        raise FsxltError(f"learning rates must be > 0 (got {schedule.lrs}), epochs and batch "
                         "size >= 1")
    return schedule


def _source_dev(train: Sequence[Example], dev: Sequence[Example] | dict[str, Sequence[Example]],
                sources_langs: list[str], select: str) -> dict[str, Sequence[Example]]:
    """The source dev sets by language, checked against the source languages."""
    if select not in SELECTIONS:
        raise FsxltError(f"unknown selection {select!r}; valid: {', '.join(SELECTIONS)}")
    source_dev = dict(dev) if isinstance(dev, dict) else {sources_langs[0]: dev}
    if not train or not source_dev or not all(source_dev.values()):
        raise FsxltError("source-training needs non-empty source train and dev sets")
    if set(source_dev) - set(sources_langs):
        raise FsxltError(f"dev sets for {', '.join(sorted(set(source_dev) - set(sources_langs)))}"
                         ", which are not source languages")
    return source_dev


def _inputs(task: TaskSpec, trainer: Any, featurizer: Featurizer, device: torch.device,
            data: _Data, long_sentences: str, label_all_tokens: bool = False,
            ) -> tuple[list, _EvalSets]:
    """The training rows (long sentences as ``long_sentences`` says) and the evaluation
    sets (long sentences in windows), each made once."""

    def eval_set(examples: Sequence[Example]) -> Any:  # one nDCG cannot score: refused now
        encoded = trainer.encode(featurizer, examples) or featurizer.encode(examples,
                                                                             windows=True)
        made = make_eval_set(encoded, featurizer.pad_id, device,
                             name=describe_examples(examples))
        require_scorable(task, made)
        return made

    rows = (trainer.encode(featurizer, data.train)
            or featurizer.training_rows(data.train, long_sentences, label_all_tokens)).rows
    dev_sets = {lang: eval_set(examples) for lang, examples in data.source_dev.items()}
    for lang, examples in data.target_dev.items():
        if lang not in dev_sets:
            dev_sets[lang] = eval_set(examples)
    selecting = list(data.source_dev) if data.select == "source-dev" else list(dev_sets)
    test_sets = {lang: eval_set(ex) for lang, ex in data.target_test.items()}
    return rows, _EvalSets(dev_sets, test_sets, selecting)


def _search(training: _Training, rows: list) -> _Search:
    """Train once per learning rate, each run from the same weights and seed."""
    model, schedule = training.model, training.schedule
    initial = snapshot(model, device="cpu")
    search = _Search()
    for lr in schedule.lrs:
        restore(model, initial)
        training.trainer.prepare(model, schedule.seed)
        model.to(training.device)
        seed_all(schedule.seed)
        run_best = _train_lr(training, rows, lr, search)
        search.lr_results.append({"lr": lr, "best_epoch": run_best[1], "best_dev": run_best[0]})
        if training.collector is not None:
            training.collector.run_done(model, lr, schedule.epochs)
    if training.collector is not None:
        training.collector.grid_done(model, schedule.epochs)
    return search


def _train_lr(training: _Training, rows: list, lr: float, search: _Search) -> tuple[float, int]:
    """One run of the grid: every epoch trained, scored and compared with the best so far;
    returns this run's best (selection score, epoch)."""
    model, schedule = training.model, training.schedule
    order_gen = torch.Generator().manual_seed(schedule.seed)
    optimizer = make_optimizer(model, lr, schedule.optimizer,
                               schedule.epochs * -(-len(rows) // schedule.batch_size))
    run_best = (float("-inf"), 0)
    for epoch in range(1, schedule.epochs + 1):
        order = torch.randperm(len(rows), generator=order_gen).tolist()
        losses = []
        for i in range(0, len(order), schedule.batch_size):
            batch = collate([rows[j] for j in order[i:i + schedule.batch_size]],
                            training.featurizer.pad_id, training.device)
            losses.append(train_step(model, [batch], optimizer, precision=training.precision,
                                     loss_fn=training.trainer.loss))
            training.bar.update(1)
        entry = _checkpoint_entry(training, lr, epoch, losses)
        search.checkpoints.append(entry)
        if training.collector is not None:
            training.collector.epoch_done(model)
        if training.oracles is not None:
            training.oracles.epoch_done(model, entry)
        en = entry["selection_score"]
        training.bar.set_postfix(lr=lr, epoch=epoch, dev=f"{100 * en:.2f}",  # as printed
                                 refresh=False)  # redrawn with the bar: a log line per 30 s
        if en > run_best[0]:
            run_best = (en, epoch)
        if search.best is None or en > search.best[0]:
            search.best = (en, lr, epoch)
            search.best_state = snapshot(model, device="cpu")
    return run_best


def _checkpoint_entry(training: _Training, lr: float, epoch: int,
                      losses: list[float]) -> dict[str, Any]:
    """An epoch's checkpoint: its loss, dev scores (test scores if asked), selection score."""
    task, model, sets = training.task, training.model, training.sets
    precision = training.precision
    dev_scores = {lang: score(model, es, task, precision=precision)["score"]
                  for lang, es in sets.dev.items()}
    entry: dict[str, Any] = {"lr": lr, "epoch": epoch,
                             "train_loss": sum(losses) / len(losses), "dev": dev_scores}
    if training.test_every_checkpoint and sets.test:
        entry["test"] = {lang: score(model, es, task, precision=precision)["score"]
                         for lang, es in sets.test.items()}
    entry["selection_score"] = sets.selection_score(dev_scores)
    return entry


def _scores(training: _Training) -> tuple[dict[str, float], dict[str, float]]:
    """The model's score (0-1) on every dev set and every test set, as it is now."""
    task, model, sets = training.task, training.model, training.sets
    precision = training.precision

    def scores(sets_of: dict[str, Any]) -> dict[str, float]:
        return {lang: score(model, es, task, precision=precision)["score"]
                for lang, es in sets_of.items()}

    return scores(sets.dev), scores(sets.test)


def _keep_candidate(training: _Training, search: _Search, data: _Data) -> None:
    """Score the selected checkpoint (the model holds it) as the first candidate, then load
    the candidate ``keep`` names into the model."""
    collector, best = training.collector, search.best
    assert collector is not None and best is not None
    collector.add_selected(protocol(data), best[1], best[2])
    if collector.kept_state is not None:
        restore(training.model, collector.kept_state)


def _add_candidates(record: dict[str, Any], collector: CandidateCollector) -> None:
    """The candidates' scores, and which one the checkpoint holds when not the selected."""
    record["candidates"] = collector.record()
    if collector.averaging.keep != "selected":
        record["selection"].update(keep=collector.averaging.keep,
                                   kept=collector.kept_name())


def _record(training: _Training, search: _Search, data: _Data, model_name: str,
            config_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The source-run record of the weights the model holds (its metadata; the selected
    checkpoint's unless ``config_extra`` says what else they are)."""
    task, model, sets = training.task, training.model, training.sets
    precision = training.precision
    schedule, best, languages = training.schedule, search.best, data.languages
    assert best is not None
    source_scores, source_predicted = {}, {}
    for lang in data.source_dev:
        source_scores[lang], source_predicted[lang] = score_and_predict(
            model, sets.dev[lang], task, precision=precision)
    zero_shot = {lang: score(model, es, task, precision=precision) for lang, es in tqdm(
        sets.test.items(), disable=not training.progress or not sets.test, unit="language",
        **bar_options(),
        desc=f"source-train {task.name}: zero-shot test")}  # minutes for QA: a bar says so
    for lang in set(zero_shot) & set(languages):
        zero_shot[lang]["in_source"] = True  # trained on it: not a zero-shot score
    read = data_record(data, task)
    return {
        "format": SOURCE_FORMAT, "task": task.name, "kind": task.kind,
        "labels": list(task.labels), "metric": task.metric, "encoder": model_name,
        "method": training.trainer.describe(), "source_language": "+".join(languages),
        "source_languages": languages, "lrs": schedule.lrs, "epochs": schedule.epochs,
        "batch_size": schedule.batch_size, "seed": schedule.seed,
        "max_seq_length": training.featurizer.max_len, "optimizer": schedule.optimizer.describe(),
        **({"qa_decoding": training.featurizer.qa_decoding} if task.is_qa else {}),
        "long_sentences": schedule.long_sentences, "label_all_tokens": schedule.label_all_tokens,
        **({"eval_long": schedule.eval_long} if schedule.eval_long != "whole" else {}),
        **({"head": schedule.head} if task.kind in ("classification", "multiple_choice")
           else {}),
        "data": read, "checkpoints": search.checkpoints, "lr_results": search.lr_results,
        "selection": {"protocol": protocol(data),
                      "languages": sets.selecting,
                      "lr": best[1], "epoch": best[2], "dev_score": best[0]},
        "english_dev": source_scores[languages[0]], "source_dev": source_scores,
        "zero_shot": zero_shot, "oracle": oracle(search.checkpoints, data.target_dev),
        "warnings": learned_nothing(task, source_scores, source_predicted),
        "device": training.device.type, "precision": training.precision,
        "torch_threads": torch.get_num_threads(), "versions": versions(),
        "config_hash": config_hash(config(training, model_name, data, read, config_extra)),
    }
