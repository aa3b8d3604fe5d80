"""Target-adapting (docs/protocol.md#adapting): one bucket at a time, many buckets per engine.

:class:`AdaptEngine` is built once per (task, target language, starting
model, dev/test data) and then called for any number of buckets, methods,
learning-rate grids and seeds::

    engine = AdaptEngine.from_start("panx", "zh", "ckpt/panx-en", dev=dev, test=test)
    record = engine.adapt(bucket, method="full", lrs=[1e-5, 3e-5], seed=42)

It tokenizes the dev and test sets once (length-sorted, padded per batch and
moved to the device), keeps the starting weights in memory and restores them
before every run, so the per-bucket loop does no disk I/O at all. For the
head-only methods (fc, fc-pooler, cos-pooler, fc-reset-pooler) the frozen
encoder's outputs on the dev and test sets are computed once and reused by
every run of the engine (:mod:`fsxlt.training.features`), so such a run only
trains and evaluates the head; ``feature_cache=False`` turns that off.

One run (one learning rate): restore the start, set up the method's head and
trainable parameters, seed everything with the run's seed, then for at most
``max_epochs`` epochs take **one** Adam step on the whole bucket (micro-batched
for memory if the bucket is large, still one step) and score the target dev
set. The best dev score (strictly better than all earlier epochs) keeps a
copy of the trainable weights; training stops once ``patience`` epochs have
passed without improvement, i.e. at best epoch + patience. Over a grid of
learning rates the one with the best dev score wins (ties: the earlier lr in
the grid) and only its best-epoch weights are scored on the test set.

That is the study's protocol, the default. A :class:`Protocol` changes it
(FewCLUE's fine-tuning baseline needs the first two: a fresh head barely moves
in one step per epoch and stops at epoch 1 + patience): ``batch_size`` N makes
an epoch one pass over the bucket in shuffled mini-batches of N examples, one
Adam step each (ceil(bucket / N) steps; the order is drawn from the run's
seed); ``patience_from="first-improvement"`` starts the patience count only at
the first epoch whose dev score beats the first scored epoch's (until then the
run goes on, at most ``max_epochs``); ``long_sentences="windows"`` trains on
every window of a long bucket sentence instead of truncating it; ``optimizer`` and
``label_all_tokens`` train with the peer's AdamW schedule and tagging loss (:class:`Protocol`).
Records carry the protocol (``protocol``) and each run its optimizer steps;
the record's ``config_hash`` includes the protocol only when it is not the
default, so the study's records keep their hashes.

A training regime (:mod:`fsxlt.training.regimes`) changes what a step trains on:
the joint regimes add the source language's training data (``set_source``,
tokenized once per engine) to the bucket. ``average_last`` keeps, beside the
target-dev selection, the candidates of :mod:`fsxlt.training.candidates` (last
epoch, averaged weights, best on source dev), each scored on dev and test.

Starting from a plain pretrained encoder (no source-training ablation) the
classifier is freshly initialised with the run's seed in every run.

A method (:mod:`fsxlt.methods`) is consulted at fixed points only: ``bind``
and ``encode`` once per adapt call (a method with its own inputs, such as
``pet``, gets its dev and test sets tokenized once per engine, kept like the
task's), ``teardown`` of the previous run's method and ``prepare`` before
every run (no ``teardown`` when the previous method ``keeps`` its change for the
next: LoRA's wrapped encoder stays for LoRA runs of the same options), ``loss``
in every step, ``feature_point`` for the cache.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.data.buckets import Bucket
from fsxlt.errors import FsxltError
from fsxlt.methods import Method, get_method
from fsxlt.models.encoding import Featurizer, check_label_all_tokens, check_long_sentences, collate
from fsxlt.models.precision import resolve_precision
from fsxlt.models.prediction import (
    EvalSet,
    eval_token_budget,
    make_eval_set,
    predict_labels,
    prepare_eval,
    require_scorable,
    score,
    score_and_predict,
)
from fsxlt.models.spans import DEFAULT_QA_DECODING
from fsxlt.study.runs import RUN_FORMAT, ZERO_SHOT_RUN
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.training.candidates import EpochKeeper, RunKept, check_average_last, score_candidates
from fsxlt.training.checkpoint import Start, load_start, resolve_device
from fsxlt.training.features import FeatureCache
from fsxlt.training.followers import Follower
from fsxlt.training.loop import (
    config_hash,
    data_info,
    examples_digest,
    make_optimizer,
    restore,
    seed_all,
    snapshot,
)
from fsxlt.training.optim import OptimizerSettings
from fsxlt.training.protocol import (
    DEFAULT_MICRO_BATCH,
    Protocol,
    adapt_settings,
    check_regime,
)
from fsxlt.training.records import bucket_facts
from fsxlt.training.regimes import Regime
from fsxlt.training.run_records import RunRecords
from fsxlt.training.shared import SharedRuns
from fsxlt.training.starts import bind_to_start
from fsxlt.training.steps import RunSteps, method_key

SEQUENTIAL = Regime()  # the study's regime: the bucket alone
STUDY = Protocol()  # the study's protocol: one step per epoch on the whole bucket


class AdaptEngine(RunSteps, SharedRuns, RunRecords):
    """Holds tokenized dev/test data and the starting weights; adapts bucket after bucket."""

    # a method's change that its next run may keep (LoRA's wrapped encoder) stays; False:
    # torn down and redone every run (the old path, for scripts/bench_adapt.py and tests)
    _keep_method_changes: bool = True

    def __init__(self, task: str | TaskSpec, language: str, start: Start, *,
                 dev: Sequence[Example], test: Sequence[Example] | None = None,
                 dev_source: str | None = None, test_source: str | None = None,
                 device: str | torch.device | None = None, max_seq_length: int | None = None,
                 precision: str = "auto", micro_batch: int = DEFAULT_MICRO_BATCH,
                 eval_max_tokens: int | None = None,
                 feature_cache: bool = True, qa_decoding: str = DEFAULT_QA_DECODING,
                 eval_long: str = "whole"):
        self.task = get_task(task)
        self.language = language
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.micro_batch = max(1, int(micro_batch))
        self.start = start
        self.model = start.model.to(self.device)
        self.model.use_linear_head()
        self.featurizer = Featurizer(start.tokenizer, self.task, max_seq_length, qa_decoding,
                                     eval_long)  # eval_long: a long tagging sentence scored
        self.eval_max_tokens = eval_max_tokens or eval_token_budget(self.device)
        self.test: EvalSet | None = (prepare_eval(self.featurizer, test, self.device,
                                                  max_tokens=self.eval_max_tokens)
                                     if test else None)
        if self.test is not None:  # a test set with no score is refused before training
            require_scorable(self.task, self.test, test_source or self.test.name)
        self.test_info = data_info(test, test_source)
        self.test_examples = list(test) if test else None
        self.custom: dict[tuple[str, str], EvalSet | None] = {}  # a method's own eval inputs
        self.start_state = snapshot(self.model)
        self.features = FeatureCache(self.model, self.device, precision=self.precision,
                                     enabled=feature_cache)
        self.features.register("test", self.test)
        self.method: Method | None = None  # the method of the last run (its teardown is due)
        self.dev: EvalSet
        self._set_dev(dev, dev_source)
        self.set_source()

    def set_source(self, train: Sequence[Example] | None = None,
                   dev: Sequence[Example] | None = None, *, train_source: str | None = None,
                   dev_source: str | None = None) -> None:
        """The source language's training set (for the joint regimes) and dev set (for the
        ``source-dev`` candidate), tokenized once per engine and kept across runs."""
        self.source_train = list(train) if train else None
        self.source_train_info = data_info(train, train_source) if train else None
        self.source_rows: dict[str, list] = {}  # per method encoding
        self.source_dev_examples = list(dev) if dev else None
        self.source_dev_info = data_info(dev, dev_source) if dev else None
        self.source_dev: EvalSet | None = None
        if dev:
            self.source_dev = prepare_eval(self.featurizer, dev, self.device,
                                           max_tokens=self.eval_max_tokens)
            require_scorable(self.task, self.source_dev, dev_source or self.source_dev.name)
        self.custom = {key: value for key, value in self.custom.items()
                       if key[1] != "source-dev"}
        self.features.register("source-dev", self.source_dev)

    def replace_dev(self, dev: Sequence[Example], dev_source: str | None = None) -> None:
        """Use another target dev set from now on; the test set and its features stay.

        Why: XNLI and PAWS-X select on the dev examples that a K's buckets
        left over, so a language has one dev set per K but one test set. A
        sweep worker swaps the dev set instead of building a new engine, so
        the test set is tokenized (and, for head-only methods, encoded) once.
        """
        self._set_dev(dev, dev_source)

    def _set_dev(self, dev: Sequence[Example], dev_source: str | None) -> None:
        """Tokenize ``dev`` into the engine's eval set and feature cache (constructor, swaps)."""
        if not dev:
            raise FsxltError("the target dev set is empty; early stopping needs one")
        self.dev = prepare_eval(self.featurizer, dev, self.device, max_tokens=self.eval_max_tokens)
        require_scorable(self.task, self.dev, dev_source or self.dev.name)  # before training
        self.dev_info = data_info(dev, dev_source)
        self.dev_examples = list(dev)
        self.custom = {key: value for key, value in self.custom.items() if key[1] != "dev"}
        self.features.register("dev", self.dev)

    @classmethod
    def from_start(cls, task: str | TaskSpec, language: str, start: str, *,
                   dev: Sequence[Example], test: Sequence[Example] | None = None,
                   seed: int | None = None, **kwargs: Any) -> AdaptEngine:
        """Load ``start`` (an fsxlt checkpoint dir, or an encoder name for the ablation)."""
        task = get_task(task)
        seed = task.training.seed if seed is None else seed
        return cls(task, language, load_start(start, task, seed=seed), dev=dev, test=test,
                   **kwargs)

    # ----------------------------------------------------------------- one run

    def _eval_set(self, method: Method, split: str) -> EvalSet | None:
        """The dev or test set as ``method`` reads it: the engine's own, or the method's
        encoding of the same examples (made once per engine and method settings)."""
        own = {"dev": self.dev, "test": self.test, "source-dev": self.source_dev}[split]
        examples = {"dev": self.dev_examples, "test": self.test_examples,
                    "source-dev": self.source_dev_examples}[split]
        key = (method_key(method), split, self.language)  # a language view's sets differ
        if own is None:
            return None
        if key not in self.custom:
            encoded = method.encode(self.featurizer, examples)
            self.custom[key] = None if encoded is None else make_eval_set(
                encoded, self.featurizer.pad_id, self.device, max_tokens=self.eval_max_tokens)
        return self.custom[key] or own

    def _bucket_rows(self, examples: Sequence[Example], method: Method | None = None,
                     long_sentences: str = STUDY.long_sentences,
                     label_all_tokens: bool = False) -> list:
        """The bucket's training rows, as ``method`` encodes them, else the task's way."""
        encoded = method.encode(self.featurizer, examples) if method is not None else None
        rows = (encoded or self.featurizer.training_rows(examples, long_sentences,
                                                         label_all_tokens)).rows
        if not rows:
            raise FsxltError("the bucket holds no examples")
        return list(rows)

    def _micro_batches(self, rows: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        """``rows`` (one logical batch) as micro-batches that fit memory."""
        # ``micro_batch`` counts encoder inputs: a multiple-choice row is one per candidate
        # (ChID: 7), so 64 of its rows at once would be 448 sequences in one backward pass
        step = max(1, self.micro_batch // rows[0].n_sequences)
        return [collate(rows[i:i + step], self.featurizer.pad_id, self.device)
                for i in range(0, len(rows), step)]

    def _bucket_batches(self, examples: Sequence[Example],
                        method: Method | None = None) -> list[dict[str, torch.Tensor]]:
        """The whole bucket as the micro-batches of one step (the study's protocol)."""
        return self._micro_batches(self._bucket_rows(examples, method))

    def _as_batches(self, rows: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        """Training rows as the micro-batches of one step, as the active method reads them."""
        return self.features.bucket_batches(self._micro_batches(rows), self.features.active)

    def _reset(self, method: str | Method, seed: int) -> list[str]:
        """Undo the last run's method, restore the start, let ``method`` prepare the model."""
        method = get_method(method, self.task.kind)
        model, previous = self.model, self.method
        names = None  # the start's names in the model: its own, unless a change is kept
        if previous is not None and self._keep_method_changes and previous.keeps(method):
            names = previous.start_names(model)
        elif previous is not None:
            previous.teardown(model)
            self.method = None
        model.use_linear_head()
        restore(model, self.start_state, names)
        if self.start.fresh_head:
            model.reset_classifier(seed)
            if not model.native_pooler:
                model.reset_pooler(seed)
        self.method = method
        method.prepare(model, seed)
        trainable = model.trainable_names()
        if not trainable:
            raise FsxltError(f"method {method.name} left no parameter to train")
        model.to(self.device)
        self.features.activate(self.features.point_for(method))  # dev/test serve features
        return trainable

    def _run(self, rows: Sequence[Any], method: Method, lr: float, seed: int,
             max_epochs: int, patience: int, select_start: bool = False,
             dev_set: EvalSet | None = None, protocol: Protocol = STUDY,
             regime: Regime = SEQUENTIAL, keeper: EpochKeeper | None = None,
             companions: dict[str, list] | None = None,
             ) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """One learning rate: train, score dev after every epoch, keep the best epoch.

        With ``select_start`` the model as the method prepared it, before any
        step, is scored too and competes as epoch 0: adapting then never
        selects a model worse on the target dev set than its start.
        ``protocol``: the steps of an epoch and when patience counts (module docstring);
        ``regime``: what a step trains on (:mod:`fsxlt.training.regimes`); ``keeper``
        follows the epochs for the candidates (:mod:`fsxlt.training.candidates`).
        """
        follower = Follower(dev_set or self.dev, patience,
                            protocol.patience_from == "first-improvement", keeper)
        (run, state), = self._run_followed(rows, method, lr, seed, max_epochs, [follower],
                                           select_start, protocol, regime, companions)
        restore(self.model, state)
        return run, state

    def _run_followed(self, rows: Sequence[Any], method: Method, lr: float, seed: int,
                      max_epochs: int, followers: Sequence[Follower], select_start: bool,
                      protocol: Protocol, regime: Regime, companions: dict[str, list] | None,
                      ) -> list[tuple[dict[str, Any], dict[str, torch.Tensor]]]:
        """One learning rate, trained while any of ``followers`` (one per dev set:
        :mod:`fsxlt.training.followers`) follows; each follower's run facts and best
        weights. The model holds the last epoch's weights afterwards."""
        began = time.perf_counter()
        trainable = self._reset(method, seed)
        next_epoch = self._epoch_maker(rows, method, protocol, regime, seed, companions)
        seed_all(seed)
        optimizer = make_optimizer(self.model, lr, protocol.optimizer,
                                   next_epoch.steps_per_epoch * max_epochs)
        for follower in followers:
            follower.start(self.model, trainable, score(
                self.model, follower.dev_set, self.task, precision=self.precision)
                if select_start else None)
        n_steps = 0
        for epoch in range(1, max_epochs + 1):
            steps = next_epoch()
            losses = [self._train_on(step, optimizer, method) for step in steps]
            n_steps += len(steps)
            loss = losses[0] if len(losses) == 1 else sum(losses) / len(losses)
            for follower in followers:
                if not follower.stopped:
                    follower.after_epoch(self.model, trainable, epoch, loss, score(
                        self.model, follower.dev_set, self.task, precision=self.precision), n_steps)
            if all(follower.stopped for follower in followers):
                break
        n_trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        wall = round(time.perf_counter() - began, 3)
        results = []
        for follower in followers:
            run = {**follower.run_facts(lr), "n_trainable_parameters": n_trainable,
                   "optimizer_steps": follower.steps, "wall_time_s": wall}
            if not regime.is_sequential:  # the regime's steps, not the bucket's
                run["steps_per_epoch"] = next_epoch.steps_per_epoch
            if protocol.patience_from == "first-improvement":
                run["patience_from_epoch"] = follower.counting  # None: never improved
            results.append((run, follower.best_state))
        return results

    # ----------------------------------------------------------------- the API

    def adapt(self, bucket: Bucket | Sequence[Example], method: str | Method = "full",
              lrs: Sequence[float] | None = None, seed: int | None = None, *,
              max_epochs: int | None = None, patience: int | None = None,
              predictions: bool = False, method_options: dict[str, Any] | None = None,
              select_start: bool = False,
              predict: Sequence[Example] | None = None,
              batch_size: int | None = None, patience_from: str = "start",
              regime: str | Regime = "sequential",
              average_last: int | None = None, long_sentences: str = STUDY.long_sentences,
              optimizer: OptimizerSettings | None = None, label_all_tokens: bool = False,
              companions: dict[str, Bucket | Sequence[Example]] | None = None,
              ) -> dict[str, Any]:
        """Adapt on one bucket over a learning-rate grid; return the run record (a dict).

        ``method`` is a name (built-in or installed plug-in), a
        ``package.module:Class`` reference, or a :class:`~fsxlt.methods.Method`
        instance; ``method_options`` configure a named one. With
        ``select_start`` the prepared start model competes as epoch 0 (see
        :meth:`_run`); the record's ``start_selected`` says whether it won.
        With ``predictions`` the record also holds ``test_predictions``: the
        selected model's predicted labels for every test example, in test
        order. Callers write them beside the record (``fsxlt.study.predictions``)
        and drop the key, so saved records stay small. ``predict``: examples
        of an unlabelled file; the record's ``predict`` then holds the
        selected model's label for each (``fsxlt.study.submission`` writes them).
        ``batch_size``, ``patience_from``, ``long_sentences``, ``optimizer``
        (:class:`~fsxlt.training.optim.OptimizerSettings`), ``label_all_tokens``: the
        :class:`Protocol` (defaults: the study's); the record's ``protocol`` says which one
        ran. ``regime``: a name of
        :data:`~fsxlt.training.regimes.REGIMES` or a :class:`Regime` (joint ones need
        :meth:`set_source`'s training set). ``average_last`` N: the record's
        ``candidates`` (:mod:`fsxlt.training.candidates`) keep the dev and test scores
        of the last epoch, the mean of the last N epochs, the mean over the lr grid and,
        with a source dev set, the best epoch on it. ``companions``: the buckets of the
        other target languages a ``multi`` regime trains on, by language.
        """
        began = time.perf_counter()
        settings = self._settings(method, lrs, seed, max_epochs, patience, method_options,
                                  select_start, batch_size, patience_from, regime,
                                  average_last, long_sentences, optimizer, label_all_tokens)
        examples, bucket_info = bucket_facts(bucket, self.task.name, self.language)
        rows = self._rows_and_companions(examples, settings, companions or {})
        runs, kept, selected = self._grid(rows, settings, self._eval_set(settings["method"],
                                                                          "dev"))
        return self._finish(settings, bucket_info, len(rows), runs, kept, selected, began,
                            predictions, predict)

    def _settings(self, method: str | Method = "full", lrs: Sequence[float] | None = None,
                  seed: int | None = None, max_epochs: int | None = None,
                  patience: int | None = None, method_options: dict[str, Any] | None = None,
                  select_start: bool = False, batch_size: int | None = None,
                  patience_from: str = "start", regime: str | Regime = "sequential",
                  average_last: int | None = None,
                  long_sentences: str = STUDY.long_sentences,
                  optimizer: OptimizerSettings | None = None, label_all_tokens: bool = False,
                  ) -> dict[str, Any]:
        """An adapt call's settings (:meth:`adapt`'s options, its defaults), each checked,
        the method bound to the start."""
        task = self.task
        method = get_method(method, task.kind, method_options)
        lrs, seed, max_epochs, patience = adapt_settings(task, lrs, seed, max_epochs, patience)
        protocol = Protocol(batch_size, patience_from, check_long_sentences(long_sentences, task),
                            optimizer or STUDY.optimizer,
                            check_label_all_tokens(label_all_tokens, task))
        regime = check_regime(regime, protocol, self.source_train is not None, task, method)
        bind_to_start(method, task, self.language, self.start)
        return {"method": method, "lrs": lrs, "seed": seed, "max_epochs": max_epochs,
                "patience": patience, "select_start": select_start, "protocol": protocol,
                "regime": regime, "average_last": check_average_last(average_last)}

    def _finish(self, settings: dict[str, Any], bucket_info: dict[str, Any], n_rows: int,
                runs: list[dict[str, Any]], kept: list[RunKept], selected: int, began: float,
                predictions: bool, predict: Sequence[Example] | None) -> dict[str, Any]:
        """The record of an adapt call whose selected weights the model holds: the test
        score (and predictions), the unlabelled file's labels, the candidates."""
        task, method = self.task, settings["method"]
        test_set = self._eval_set(method, "test")
        test, predicted = None, None
        if test_set and predictions:  # the same as score(), keeping the labels
            test, predicted = score_and_predict(self.model, test_set, task,
                                                precision=self.precision)
        elif test_set:
            test = score(self.model, test_set, task, precision=self.precision)
        predicted_extra = None
        if predict is not None:
            predicted_extra = predict_labels(self.model, self._extra_set(method, predict),
                                             task.labels, precision=self.precision)
        record = self._adapt_record(settings, bucket_info, n_rows, runs, runs[selected],
                                    test, began)
        if predictions:
            record["test_predictions"] = predicted
        if predicted_extra is not None:
            record["predict"] = predicted_extra
        average_last = settings["average_last"]
        if average_last is not None:
            record["candidates"] = self._candidates(
                record, kept, average_last, self._eval_set(method, "dev"), test_set)
            record["wall_time_s"] = round(time.perf_counter() - began, 3)
        return record

    def _grid(self, rows: Sequence[Any], settings: dict[str, Any], dev_set: EvalSet,
              ) -> tuple[list[dict[str, Any]], list[RunKept], int]:
        """One run per lr of the grid: the runs, what each kept for the candidates, and the
        index of the selected one (best target dev; ties: the earlier lr), whose best
        weights the model holds afterwards."""
        method, average_last = settings["method"], settings["average_last"]
        source_dev = self._eval_set(method, "source-dev") if average_last else None
        runs: list[dict[str, Any]] = []
        kept: list[RunKept] = []
        chosen: tuple[float, int, dict[str, torch.Tensor]] | None = None
        for index, lr in enumerate(settings["lrs"]):
            keeper = self._keeper(average_last, source_dev)
            run, state = self._run(rows, method, lr, settings["seed"], settings["max_epochs"],
                                   settings["patience"], settings["select_start"], dev_set,
                                   settings["protocol"], settings["regime"], keeper,
                                   settings["companions"])
            runs.append(run)
            if keeper is not None:
                kept.append(keeper.finish(lr))
            if chosen is None or run["dev"]["score"] > chosen[0]:
                chosen = (run["dev"]["score"], index, state)
        assert chosen is not None
        if chosen[1] != len(runs) - 1:
            restore(self.model, chosen[2])  # same method, so the same parameter names
        return runs, kept, chosen[1]

    def _candidates(self, record: dict[str, Any], kept: Sequence[RunKept], average_last: int,
                    dev_set: EvalSet, test_set: EvalSet | None) -> dict[str, Any]:
        """Score every model the runs kept beside the target-dev selection (the record's)."""
        selected = {"name": "target-dev", "rule": "target-dev", "lr": record["selected_lr"],
                    "epochs": [record["best_epoch"]], "dev": record["dev_score"],
                    "test": record["test_score"]}

        def evaluate() -> tuple[float, float | None]:
            dev = score(self.model, dev_set, self.task, precision=self.precision)["score"]
            test = score(self.model, test_set, self.task, precision=self.precision)["score"] \
                if test_set is not None else None
            return dev, test

        return score_candidates(self.model, selected, kept, average_last, evaluate)

    def zero_shot(self, method: str | Method = "pet", seed: int | None = None, *,
                  predictions: bool = False, method_options: dict[str, Any] | None = None,
                  predict: Sequence[Example] | None = None,
                  select_start: bool = False) -> dict[str, Any]:
        """K=0: score the start as ``method`` prepares it, with no bucket and no training.

        Only for a method that predicts untrained (``scores_untrained``: pet,
        the pretrained masked LM and the pattern, FewCLUE's zero-shot rows).
        The record is an adapt record of K=0: bucket ``zero-shot`` (index 0,
        no examples), no learning-rate runs, the dev and test scores of the
        prepared model; ``predictions`` and ``predict`` as for :meth:`adapt`;
        ``select_start`` only files it with the arm of K>0 runs that let the start
        compete (at K=0 the start is the only model there is).
        """
        began = time.perf_counter()
        task = self.task
        method = get_method(method, task.kind, method_options)
        if not method.scores_untrained:
            raise FsxltError(f"method {method.name} predicts nothing untrained; K=0 (no "
                             "bucket) is for methods such as pet")
        seed = task.training.seed if seed is None else int(seed)
        bind_to_start(method, task, self.language, self.start)
        dev_set, test_set = self._eval_set(method, "dev"), self._eval_set(method, "test")
        self._reset(method, seed)
        dev = score(self.model, dev_set, task, precision=self.precision)
        test, predicted = None, None
        if test_set and predictions:
            test, predicted = score_and_predict(self.model, test_set, task,
                                                precision=self.precision)
        elif test_set:
            test = score(self.model, test_set, task, precision=self.precision)
        config = {"task": task.name, "labels": list(task.labels), "metric": task.metric,
                  "language": self.language, "method": method.describe(), "k": 0,
                  "seed": seed, "max_seq_length": self.featurizer.max_len,
                  "start": self.start.info["id"],
                  "dev": self.dev_info["sha256"] if self.dev_info else None,
                  "test": self.test_info["sha256"] if self.test_info else None,
                  **self._decoding(), **self._precision_identity()}
        record = {
            "format": RUN_FORMAT, "task": task.name, "language": self.language, "k": 0,
            "bucket": {"id": f"{task.name}/{self.language}/k0/{ZERO_SHOT_RUN}", "index": 0,
                       "k": 0, "name": ZERO_SHOT_RUN, "n_examples": 0},
            "method": method.name, "method_info": method.describe(),
            "select_start": select_start,
            "lrs": [], "seed": seed, "max_epochs": 0, "patience": 0,
            **self._record_context(),
            "runs": [], "selected_lr": None, "best_epoch": 0, "start_selected": True,
            "dev": dev, "test": test, "dev_score": dev["score"],
            "test_score": test["score"] if test else None, "config_hash": config_hash(config),
            "wall_time_s": round(time.perf_counter() - began, 3),
        }
        if predictions:
            record["test_predictions"] = predicted
        if predict is not None:
            record["predict"] = predict_labels(self.model, self._extra_set(method, predict),
                                               task.labels, precision=self.precision)
        return record

    def _extra_set(self, method: Method, examples: Sequence[Example]) -> EvalSet:
        """An unlabelled file's examples as ``method`` reads them, tokenized once per engine."""
        key = (method_key(method), "predict:" + examples_digest(examples))
        if key not in self.custom:
            encoded = method.encode(self.featurizer, examples) or self.featurizer.encode(
                examples, windows=True)
            self.custom[key] = make_eval_set(encoded, self.featurizer.pad_id, self.device,
                                             max_tokens=self.eval_max_tokens)
        return self.custom[key]
