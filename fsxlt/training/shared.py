"""Regime ``multi`` trained once for all its languages (a part of :class:`AdaptEngine`).

A ``multi`` run trains the source rows and every language's bucket together, the
languages in sorted order (:mod:`fsxlt.training.regimes`), so the runs of its L
languages train one and the same model, epoch by epoch; they differ only in the dev
set that picks the epoch and lr, and the test set that scores the choice.
:meth:`SharedRuns.adapt_languages` trains it once per learning rate, follows every
wanted language's dev set after each epoch (:mod:`fsxlt.training.followers`: each
with its own patience, the training going on while any follows) and keeps each
language's best epoch in memory: L copies of the trainable weights per learning
rate, plus each language's best over the lrs so far (with ``average_last`` N, N
more per language). Then each language gets the record :meth:`AdaptEngine.adapt`
would have given it alone, with its own dev and test sets, bucket and companions.

Each language's dev and test sets are a :class:`LanguageView`, tokenized once per
engine (:meth:`SharedRuns.language_view`) and registered with the feature cache;
the engine switches to a view to score or write that language. The shared path is
only for a single-stage ``multi`` (a multi-stage run trains its own language alone
after its multi epochs) and a method whose ``bind`` does not depend on the language
(PET's verbalizers do): :func:`shares_training` says which.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.data import Example
from fsxlt.data.buckets import Bucket
from fsxlt.errors import FsxltError
from fsxlt.methods import Method
from fsxlt.models.prediction import EvalSet, prepare_eval, require_scorable, score
from fsxlt.training.candidates import EpochKeeper
from fsxlt.training.followers import Follower
from fsxlt.training.loop import data_info, restore
from fsxlt.training.records import bucket_facts
from fsxlt.training.regimes import Regime


@dataclass
class LanguageView:
    """One target language's dev and test sets as an engine scores them."""

    language: str
    dev: EvalSet
    dev_info: dict[str, Any]
    dev_examples: list[Example]
    test: EvalSet | None
    test_info: dict[str, Any] | None
    test_examples: list[Example] | None


def shares_training(regime: Regime, method: Method) -> bool:
    """Whether the runs of ``regime``'s languages train one model: a single-stage multi
    and a method bound alike in every language."""
    return (regime.name == "multi" and regime.multi_epochs is None
            and type(method).bind is Method.bind)


class SharedRuns:
    """:meth:`adapt_languages` and the language views, as methods of the engine."""

    task: Any
    language: str
    dev: EvalSet
    dev_info: dict[str, Any]
    dev_examples: list[Example]
    test: EvalSet | None
    test_info: dict[str, Any] | None
    test_examples: list[Example] | None

    def language_view(self, language: str, dev: Sequence[Example],
                      test: Sequence[Example] | None = None, *, dev_source: str | None = None,
                      test_source: str | None = None) -> LanguageView:
        """``language``'s dev and test sets, tokenized for this engine (checked as the
        constructor checks its own) and served by the feature cache."""
        if not dev:
            raise FsxltError(f"the {language} dev set is empty; early stopping needs one")
        sets = []
        for split, examples, source in (("dev", dev, dev_source), ("test", test, test_source)):
            eval_set = prepare_eval(self.featurizer, examples, self.device,
                                    max_tokens=self.eval_max_tokens) if examples else None
            if eval_set is not None:
                require_scorable(self.task, eval_set, source or eval_set.name)
                self.features.register(f"{split}:{language}", eval_set)
            sets.append(eval_set)
        return LanguageView(language, sets[0], data_info(dev, dev_source), list(dev), sets[1],
                            data_info(test, test_source) if test else None,
                            list(test) if test else None)

    def current_view(self) -> LanguageView:
        return LanguageView(self.language, self.dev, self.dev_info, self.dev_examples,
                            self.test, self.test_info, self.test_examples)

    def use_view(self, view: LanguageView) -> None:
        """Score and write ``view``'s language from now on."""
        self.language, self.dev, self.dev_info = view.language, view.dev, view.dev_info
        self.dev_examples, self.test = view.dev_examples, view.test
        self.test_info, self.test_examples = view.test_info, view.test_examples

    def adapt_languages(self, buckets: dict[str, Bucket], views: dict[str, LanguageView],
                        companions: dict[str, Bucket], *, predict: dict[str, Sequence[Example]]
                        | None = None, predictions: bool = False,
                        **options: Any) -> dict[str, dict[str, Any]]:
        """Train regime ``multi`` once on ``buckets`` (the languages whose records are
        wanted, each with its view) and ``companions`` (the regime's other languages);
        return one record per wanted language, the one :meth:`adapt` gives it alone.
        ``options``: :meth:`adapt`'s (method, lrs, seed, regime, ...); another is a
        ``TypeError``."""
        began = time.perf_counter()
        home, languages = self.current_view(), sorted(buckets)
        try:
            self.use_view(views[languages[0]])
            settings = self._settings(**options)
            if not shares_training(settings["regime"], settings["method"]):
                raise FsxltError("only a single-stage multi regime with a method bound alike "
                                 "in every language trains once for all its languages")
            every = {**companions, **buckets}
            rows = self._rows_and_companions(
                bucket_facts(buckets[languages[0]], self.task.name, languages[0])[0], settings,
                {lang: b for lang, b in every.items() if lang != languages[0]})
            trained = self._shared_grid(rows, settings, views, languages)
            records = {}
            for language in languages:
                self.use_view(views[language])
                records[language] = self._finish_language(
                    language, settings, buckets[language], every, trained[language], began,
                    predictions, (predict or {}).get(language))
            return records
        finally:
            self.use_view(home)

    def _shared_grid(self, rows: Sequence[Any], settings: dict[str, Any],
                     views: dict[str, LanguageView], languages: list[str],
                     ) -> dict[str, tuple[list, list, int, dict]]:
        """Every lr trained once, followed by each language's dev set: per language its
        runs, what each kept, the selected lr's index and its weights."""
        method, average_last = settings["method"], settings["average_last"]
        dev_sets = {}
        for language in languages:
            self.use_view(views[language])
            dev_sets[language] = self._eval_set(method, "dev")
        self.use_view(views[languages[0]])  # the language whose rows and companions train
        source_dev = self._eval_set(method, "source-dev") if average_last else None
        runs: dict[str, list] = {lang: [] for lang in languages}
        kept: dict[str, list] = {lang: [] for lang in languages}
        chosen: dict[str, tuple[float, int, dict]] = {}  # per language: best dev, lr index, weights
        for index, lr in enumerate(settings["lrs"]):
            followers = [Follower(dev_sets[lang], settings["patience"],
                                  settings["protocol"].patience_from == "first-improvement",
                                  self._keeper(average_last, source_dev))
                         for lang in languages]
            results = self._run_followed(rows, method, lr, settings["seed"],
                                         settings["max_epochs"], followers,
                                         settings["select_start"], settings["protocol"],
                                         settings["regime"], settings["companions"])
            for lang, follower, (run, state) in zip(languages, followers, results, strict=True):
                runs[lang].append(run)
                if follower.keeper is not None:
                    kept[lang].append(follower.keeper.finish(lr))
                if lang not in chosen or run["dev"]["score"] > chosen[lang][0]:
                    chosen[lang] = (run["dev"]["score"], index, state)
        result = {lang: (runs[lang], kept[lang], chosen[lang][1], chosen[lang][2])
                  for lang in languages}
        return result

    def _keeper(self, average_last: int | None, source_dev: EvalSet | None,
                ) -> EpochKeeper | None:
        if average_last is None:
            return None
        if source_dev is None:
            return EpochKeeper(average_last, None)
        return EpochKeeper(average_last, lambda: score(
            self.model, source_dev, self.task, precision=self.precision)["score"])

    def _finish_language(self, language: str, settings: dict[str, Any], bucket: Bucket,
                         every: dict[str, Bucket], trained: tuple[list, list, int, dict],
                         began: float, predictions: bool,
                         predict: Sequence[Example] | None) -> dict[str, Any]:
        """``language``'s record: its selected weights restored, its bucket and companions'
        facts, its test score (the engine on its view)."""
        runs, kept, selected, weights = trained
        restore(self.model, weights)
        own = dict(settings)
        examples, bucket_info = bucket_facts(bucket, self.task.name, language)
        rows = self._rows_and_companions(examples, own, {lang: b for lang, b in every.items()
                                                          if lang != language})
        return self._finish(own, bucket_info, len(rows), runs, kept, selected, began,
                            predictions, predict)
