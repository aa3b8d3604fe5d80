"""What each optimizer step of an adapt run trains on (a part of :class:`AdaptEngine`).

The study's protocol takes one step on the whole bucket per epoch; the mini-batch
protocol one step per ``batch_size`` rows; a training regime
(:mod:`fsxlt.training.regimes`) adds the source language's rows (tokenized once per
engine, kept per method encoding) and, for ``multi``, other target languages' buckets;
``mixup`` steps are mixed (:mod:`fsxlt.training.mixup`). :class:`RunSteps` holds these
methods of the engine; it reads the engine's ``featurizer``, ``features``, ``model``,
``precision``, ``language``, ``source_train`` and ``source_rows`` and its ``_bucket_rows`` and
``_as_batches``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.data.buckets import Bucket
from fsxlt.methods import Method
from fsxlt.training.loop import train_step, weighted_step
from fsxlt.training.mixup import mixup_step
from fsxlt.training.protocol import Protocol
from fsxlt.training.records import bucket_facts
from fsxlt.training.regimes import Epochs, JointMixer, MixStep, Regime, Step


class RunSteps:
    """The steps of a run, as methods of :class:`~fsxlt.training.adapt.AdaptEngine`."""

    task: Any
    language: str
    model: Any
    precision: str
    source_train: Any
    source_rows: dict[str, list]

    def _bucket_rows(self, examples: Any, method: Method | None = None,
                     long_sentences: str = "truncate",
                     label_all_tokens: bool = False) -> list:  # AdaptEngine's
        raise NotImplementedError

    def _as_batches(self, rows: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        raise NotImplementedError

    def _epoch_steps(self, rows: Sequence[Any], protocol: Protocol,
                     generator: torch.Generator) -> list[list[dict[str, torch.Tensor]]]:
        """One epoch of mini-batches: the bucket shuffled by ``generator``, cut into
        ``protocol.batch_size`` rows; each step's micro-batches, as the method reads them."""
        size = int(protocol.batch_size or len(rows))
        order = torch.randperm(len(rows), generator=generator).tolist()
        return [self._as_batches([rows[i] for i in order[at:at + size]])
                for at in range(0, len(rows), size)]

    def _source_train_rows(self, method: Method, long_sentences: str,
                           label_all_tokens: bool = False) -> list:
        """The source training set's rows, made once per engine, method and settings."""
        assert self.source_train is not None
        key = f"{method_key(method)}:{long_sentences}:{label_all_tokens}"
        if key not in self.source_rows:
            self.source_rows[key] = self._bucket_rows(self.source_train, method, long_sentences,
                                                      label_all_tokens)
        return self.source_rows[key]

    def _epoch_maker(self, rows: Sequence[Any], method: Method, protocol: Protocol,
                     regime: Regime, seed: int, companions: dict[str, list] | None = None,
                     ) -> Epochs:
        """What one epoch trains on, step by step, under ``regime`` and ``protocol``."""
        if not regime.is_sequential:
            source = self._source_train_rows(method, protocol.long_sentences,
                                             protocol.label_all_tokens)
            mixer = JointMixer(regime, source, rows, seed, companions=companions,
                               language=self.language)
            return Epochs(lambda: [self._step_batches(step) for step in mixer.epoch()],
                          mixer.steps_per_epoch)
        if protocol.batch_size is None:  # the study's: one step on the whole bucket
            whole = self._as_batches(rows)
            return Epochs(lambda: [[(whole, 1.0)]], 1)
        order = torch.Generator().manual_seed(seed)  # mini-batch order; global RNG untouched
        return Epochs(lambda: [[(batches, 1.0)]
                               for batches in self._epoch_steps(rows, protocol, order)],
                      protocol.steps_per_epoch(len(rows)))

    def _rows_and_companions(self, examples: Sequence[Example], settings: dict[str, Any],
                             companions: dict[str, Bucket | Sequence[Example]]) -> list:
        """The bucket's training rows; ``settings`` gets the regime with this language and
        the other languages' rows and facts (multi)."""
        method, protocol = settings["method"], settings["protocol"]
        rows = self._bucket_rows(examples, method, protocol.long_sentences,
                                 protocol.label_all_tokens)
        settings["regime"], settings["companions"], settings["companion_info"] = \
            self._companions(settings["regime"], companions, method, protocol)
        return rows

    def _companions(self, regime: Regime, companions: dict[str, Any], method: Method,
                    protocol: Protocol) -> tuple[Regime, dict[str, list], dict[str, Any]]:
        """A multi regime with the run's own language, the other languages' bucket rows and
        what the record says of their buckets (nothing for the other regimes)."""
        if regime.name != "multi" and not companions:
            return regime, {}, {}
        regime = regime.with_language(self.language)
        rows, info = {}, {}
        for lang, bucket in sorted(companions.items()):
            examples, info[lang] = bucket_facts(bucket, self.task.name, lang)
            rows[lang] = self._bucket_rows(examples, method, protocol.long_sentences,
                                           protocol.label_all_tokens)
        return regime, rows, info

    def _step_batches(self, step: Step | MixStep) -> Step | MixStep:
        """A mixer's step with its rows as the active method's micro-batches."""
        if isinstance(step, MixStep):
            return MixStep(self._as_batches(step.source), self._as_batches(step.target),
                           step.pairing)
        return [(self._as_batches(group), weight) for group, weight in step]

    def _train_on(self, step: Step | MixStep, optimizer: torch.optim.Optimizer,
                  method: Method) -> float:
        """One optimizer step; one group of weight 1 is the study's :func:`train_step`."""
        if isinstance(step, MixStep):
            return mixup_step(self.model, step.source, step.target, step.pairing, optimizer,
                              precision=self.precision)
        if len(step) == 1 and step[0][1] == 1.0:
            return train_step(self.model, step[0][0], optimizer, precision=self.precision,
                              loss_fn=method.loss)
        return weighted_step(self.model, step, optimizer, precision=self.precision,
                             loss_fn=method.loss)


def method_key(method: Method) -> str:
    """A method and its options: the key of its own encodings of a data set."""
    return f"{method.name}:{json.dumps(method.config, sort_keys=True)}"
