"""What a source-training's record says of it beside its scores: the data it read
(:func:`data_record`), what determines the checkpoint (:func:`config`, whose hash is
the record's ``config_hash``), the selection protocol's name, each target's oracle
checkpoint, and whether the kept model learned anything (:func:`learned_nothing`).
:mod:`fsxlt.training.source` builds the record with them (``training`` and ``data``:
its run's state and what it read)."""

from __future__ import annotations

from typing import Any

from fsxlt.models.encoding import DEFAULT_LONG_SENTENCES
from fsxlt.models.model import DEFAULT_HEAD
from fsxlt.models.precision import DEFAULT_RESOLVED
from fsxlt.tasks import TaskSpec
from fsxlt.training.loop import data_info


def protocol(data: Any) -> str:
    """The selection protocol's name: the study's ``english-dev``, else ``select``."""
    return "english-dev" if data.languages == ["en"] and data.select == "source-dev" \
        else data.select


def data_record(data: Any, task: TaskSpec) -> dict[str, Any]:
    """What the training read: each set's hash and where it came from (the source dev sets
    too, when the source is not the study's English alone)."""
    sources = data.sources
    record = {"train": data_info(data.train, sources.get("train")),
              "dev": data_info(data.source_dev[data.languages[0]], sources.get("dev")),
              "target_dev": {lang: data_info(ex, sources.get(f"dev-{lang}"))
                             for lang, ex in data.target_dev.items()},
              "target_test": {lang: data_info(ex, sources.get(f"test-{lang}"))
                              for lang, ex in data.target_test.items()}}
    if beyond_the_study(data, task):
        record["source_dev"] = {lang: data_info(ex, sources.get(f"dev-{lang}"))
                                for lang, ex in data.source_dev.items()}
    return record


def beyond_the_study(data: Any, task: TaskSpec) -> bool:
    """Whether the source is other than English alone selected on its dev set (the study's,
    whose config hash stays what it always was)."""
    return (data.languages != [task.source_language] or data.select != "source-dev"
            or len(data.source_dev) > 1)


def config(training: Any, model_name: str, data: Any, read: dict[str, Any],
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What determines the checkpoint; its hash is the record's ``config_hash``."""
    task, trainer, schedule = training.task, training.trainer, training.schedule
    config = {"task": task.name, "labels": list(task.labels), "encoder": model_name,
              **({"method": trainer.identity()} if trainer.identity() is not None else {}),
              "lrs": schedule.lrs, "epochs": schedule.epochs, "batch_size": schedule.batch_size,
              "seed": schedule.seed, "max_seq_length": training.featurizer.max_len,
              **({"qa_decoding": training.featurizer.qa_decoding} if task.is_qa else {}),
              **({} if schedule.long_sentences == DEFAULT_LONG_SENTENCES
                 else {"long_sentences": schedule.long_sentences}),
              **({"eval_long": schedule.eval_long} if schedule.eval_long != "whole" else {}),
              **({"optimizer": schedule.optimizer.changes()} if schedule.optimizer.changes()
                 else {}), **({"label_all_tokens": True} if schedule.label_all_tokens else {}),
              **({"head": schedule.head} if schedule.head != DEFAULT_HEAD else {}),
              **({"precision": training.precision}
                 if training.precision != DEFAULT_RESOLVED else {}),
              "data": {k: (v["sha256"] if isinstance(v, dict) and "sha256" in v else
                           {lang: d["sha256"] for lang, d in v.items()})
                       for k, v in read.items() if k != "source_dev"}}
    if beyond_the_study(data, task):
        config.update(source_languages=data.languages, select=data.select,
                      source_dev={lang: d["sha256"] for lang, d in read["source_dev"].items()})
    if training.collector is not None:
        config.update(training.collector.averaging.config())  # nothing when the defaults
    config.update(extra or {})  # an oracle start's language and rule; the seeds averaged
    return config


def oracle(checkpoints: list[dict[str, Any]], target_dev: dict[str, Any]) -> dict[str, Any]:
    """Per target language, the checkpoint its own dev set would select (first best wins)."""
    oracle = {}
    for lang in target_dev:
        top = max(checkpoints, key=lambda c, lang=lang: c["dev"][lang])
        oracle[lang] = {"lr": top["lr"], "epoch": top["epoch"], "dev_score": top["dev"][lang],
                        "test_score": top.get("test", {}).get(lang)}
        if "seed" in top:  # several seeds' checkpoints (keep average-seeds)
            oracle[lang]["seed"] = top["seed"]
    return oracle


def learned_nothing(task: TaskSpec, scores: dict[str, dict[str, Any]],
                    predicted: dict[str, list[Any]]) -> list[str]:
    """One line per source dev set on which the kept model learned nothing: a score of 0,
    or (classification, multiple choice) one label predicted for every example; empty when
    it learned. The checkpoint's record keeps them (``warnings``), ``fsxlt source-train``
    prints them, and every report over runs adapted from it repeats them."""
    lines = []
    for lang, found in scores.items():
        labels = predicted.get(lang) or []
        one = (task.kind in ("classification", "multiple_choice") and len(labels) > 1
               and len({str(label) for label in labels}) == 1)
        if abs(float(found.get("score") or 0.0)) < 1e-12:
            lines.append(f"the kept checkpoint scores 0.00 on the {lang} dev set: it learned "
                         "nothing (check the tokenizer, the data and the learning rates)")
        elif one:
            lines.append(f"the kept checkpoint predicts one label ({labels[0]}) for all "
                         f"{len(labels)} examples of the {lang} dev set: it learned nothing "
                         "of the task")
    return lines


__all__ = ["beyond_the_study", "config", "data_record", "learned_nothing", "oracle",
           "protocol"]
