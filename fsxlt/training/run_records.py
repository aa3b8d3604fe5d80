"""What an adapt record holds (a part of :class:`~fsxlt.training.adapt.AdaptEngine`).

:meth:`RunRecords._adapt_record` builds the record of an adapt call from its settings,
every lr's run and the selected one; its ``config_hash`` covers what determines the
result (task, language, method, grid, protocol, start, dev and test data, regime and
candidates). :meth:`RunRecords._record_context` is what every record of the engine says
of its start, data and machine. The class reads the engine's ``task``, ``language``,
``featurizer``, ``start``, ``dev_info``, ``test_info``, ``source_train_info``,
``source_dev_info``, ``device`` and ``precision``.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from fsxlt.models.precision import DEFAULT_RESOLVED
from fsxlt.study.runs import RUN_FORMAT
from fsxlt.training.loop import config_hash, versions
from fsxlt.training.protocol import regime_facts, regime_identity
from fsxlt.training.records import long_sentence_facts


class RunRecords:
    """The record building of :class:`~fsxlt.training.adapt.AdaptEngine`."""

    task: Any
    language: str
    featurizer: Any
    start: Any
    dev_info: dict[str, Any] | None
    test_info: dict[str, Any] | None
    source_train_info: dict[str, Any] | None
    source_dev_info: dict[str, Any] | None
    device: torch.device
    precision: str

    def _adapt_record(self, settings: dict[str, Any], bucket_info: dict[str, Any],
                      n_rows: int, runs: list[dict[str, Any]], selected: dict[str, Any],
                      test: dict[str, Any] | None, began: float) -> dict[str, Any]:
        """The run record of :meth:`adapt`: its settings, every lr's run, the selected one's
        dev and test scores, and the hash of what determines them."""
        task, method, protocol = self.task, settings["method"], settings["protocol"]
        lrs, seed, select_start = settings["lrs"], settings["seed"], settings["select_start"]
        max_epochs, patience = settings["max_epochs"], settings["patience"]
        config = {
            "task": task.name, "labels": list(task.labels), "metric": task.metric,
            "language": self.language, "method": method.describe(), "lrs": lrs, "seed": seed,
            "max_epochs": max_epochs, "patience": patience, "select_start": select_start,
            "max_seq_length": self.featurizer.max_len, "start": self.start.info["id"],
            "dev": self.dev_info["sha256"] if self.dev_info else None,
            "test": self.test_info["sha256"] if self.test_info else None,
            "batch": protocol.batch_size or "bucket", "optimizer": protocol.optimizer.name,
            **({} if protocol.is_default else {"protocol": protocol.changes()}),
            **self._decoding(), **self._precision_identity(),
            **regime_identity(settings["regime"], settings["average_last"], self.source_train_info,
                              self.source_dev_info, settings["companion_info"]),
        }
        extra = regime_facts(settings["regime"], settings["average_last"], self.source_train_info,
                             self.source_dev_info, settings["companion_info"], config, bucket_info)
        extra.update(long_sentence_facts(self.task, self.start, protocol.long_sentences))
        return {
            "format": RUN_FORMAT,
            "task": task.name, "language": self.language, "k": bucket_info.get("k"),
            "bucket": bucket_info, "method": method.name, "method_info": method.describe(),
            "select_start": select_start, "lrs": lrs, "seed": seed,
            "max_epochs": max_epochs, "patience": patience,
            "protocol": {**protocol.record(n_rows),
                         **{key: runs[0][key] for key in ("steps_per_epoch",) if key in runs[0]}},
            **self._record_context(), "runs": runs,
            "selected_lr": selected["lr"], "best_epoch": selected["best_epoch"],
            "start_selected": selected["best_epoch"] == 0,
            "dev": selected["dev"], "test": test,
            "dev_score": selected["dev"]["score"],
            "test_score": test["score"] if test else None, "config_hash": config_hash(config),
            "wall_time_s": round(time.perf_counter() - began, 3), **extra,
        }

    def _decoding(self) -> dict[str, Any]:
        """How answers are decoded (extractive QA only, whose scores it changes)."""
        return {"qa_decoding": self.featurizer.qa_decoding} if self.task.is_qa else {}

    def _precision_identity(self) -> dict[str, Any]:
        """The precision, where it is not fp32 (so fp32 runs keep the identity they had
        before precisions were named: every CPU run of fsxlt < 0.8 was fp32)."""
        return {} if self.precision == DEFAULT_RESOLVED else {"precision": self.precision}

    def _record_context(self) -> dict[str, Any]:
        """What every record of the engine says of its start, data and machine (threads too)."""
        return {"max_seq_length": self.featurizer.max_len, "metric": self.task.metric,
                **self._decoding(),
                "model": {"encoder": self.start.info.get("encoder"), "start": self.start.info,
                          "source_training": not self.start.fresh_head},
                "source_languages": self.start.info.get("source_languages"),
                "data": {"dev": self.dev_info, "test": self.test_info},
                "device": self.device.type, "precision": self.precision,
                "torch_threads": torch.get_num_threads(), "versions": versions()}
