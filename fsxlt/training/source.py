"""Source-training (METHOD.md §4): fine-tune on English, pick a checkpoint, score K=0.

The source need not be English: a pivot language, or several languages at
once (their training sets joined), selected on the source dev sets or on
every language's dev set (XGLUE's protocol); the record says which
(``source_languages``, ``selection``), and zero-shot scores of a target that
was itself a source are marked ``in_source`` (they are not zero-shot).

For every learning rate of the grid (each a separate run from the same
pretrained weights and the same seed): ``epochs`` epochs over the English
training data in shuffled batches of ``batch_size`` (Adam, default betas, no
weight decay, constant lr). After every epoch the checkpoint is scored on the
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
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from fsxlt.data import Example
from fsxlt.errors import FsxltError
from fsxlt.evaluation import describe_examples, make_eval_set, require_scorable, score
from fsxlt.methods import get_method
from fsxlt.modeling import DEFAULT_MODEL, Featurizer, FsxltModel, collate
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.training.checkpoint import load_start, resolve_device
from fsxlt.training.loop import (
    config_hash,
    data_info,
    make_optimizer,
    restore,
    seed_all,
    snapshot,
    train_step,
    versions,
)

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


SELECTIONS = ("source-dev", "all-dev")


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
                 amp: bool = True, checkpoint_test_scores: bool = False,
                 progress: bool = False, method: str = "full") -> SourceResult:
    """Source-train ``model_name`` on ``train``; select by the source ``dev`` score.

    ``source_languages`` (default: the task's, English) are the languages of
    ``train`` (a pivot language, or the union of several); ``dev`` is one
    dev set, or one per source language. ``select``: ``source-dev`` (the
    mean dev score over the source languages; the study's English dev) or
    ``all-dev`` (XGLUE's choice: the mean over every language with a dev
    set, targets included).

    ``target_dev``/``target_test`` map target languages to their examples;
    ``sources`` maps ``"train"``, ``"dev"``, ``"dev-<lang>"``, ``"test-<lang>"`` to
    where the data came from (recorded only). With ``checkpoint_test_scores``
    every checkpoint is also scored on the target test sets (what oracle
    zero-shot numbers and directional-agreement analyses need). ``method``
    is ``full`` (the study's source-training) or ``pet`` (the task's pattern
    and English verbalizer, for every language; the trained masked-LM head
    is saved with the checkpoint, so adapting with ``pet`` continues from it).
    """
    task = get_task(task)
    cfg = task.training
    lrs = [float(x) for x in (lrs or cfg.lr_grid)]
    epochs = cfg.source_epochs if epochs is None else int(epochs)
    batch_size = cfg.source_batch_size if batch_size is None else int(batch_size)
    seed = cfg.seed if seed is None else int(seed)
    if any(not lr > 0 for lr in lrs) or epochs < 1 or batch_size < 1:
        raise FsxltError(f"learning rates must be > 0 (got {lrs}), epochs and batch size >= 1")
    target_dev, target_test, sources = dict(target_dev or {}), dict(target_test or {}), \
        dict(sources or {})
    sources_langs = list(source_languages or [task.source_language])
    if select not in SELECTIONS:
        raise FsxltError(f"unknown selection {select!r}; valid: {', '.join(SELECTIONS)}")
    source_dev = dict(dev) if isinstance(dev, dict) else {sources_langs[0]: dev}
    if not train or not source_dev or not all(source_dev.values()):
        raise FsxltError("source-training needs non-empty source train and dev sets")
    if set(source_dev) - set(sources_langs):
        raise FsxltError(f"dev sets for {', '.join(sorted(set(source_dev) - set(sources_langs)))}"
                         ", which are not source languages")
    if epochs < 1 or batch_size < 1:
        raise FsxltError("epochs and batch size must be at least 1")
    began = time.perf_counter()
    device = resolve_device(device)
    start = load_start(model_name, task, seed=seed)
    model = start.model.to(device)
    featurizer = Featurizer(start.tokenizer, task, max_seq_length)
    trainer = get_method(method, task.kind)
    if trainer.name not in ("full", "pet"):
        raise FsxltError(f"source-training uses full or pet, not {trainer.name}")
    trainer.bind(task, sources_langs[0], start.tokenizer, dict(start.info))

    def inputs(examples: Sequence[Example]) -> Any:
        return trainer.encode(featurizer, examples) or featurizer.encode(examples, windows=True)

    def eval_set(examples: Sequence[Example]) -> Any:  # one nDCG cannot score: refused now
        made = make_eval_set(inputs(examples), featurizer.pad_id, device,
                             name=describe_examples(examples))
        require_scorable(task, made)
        return made

    rows = inputs(train).rows
    dev_sets = {lang: eval_set(examples) for lang, examples in source_dev.items()}
    for lang, examples in target_dev.items():
        if lang not in dev_sets:
            dev_sets[lang] = eval_set(examples)
    selecting = list(source_dev) if select == "source-dev" else list(dev_sets)

    def selection_score(scores: dict[str, float]) -> float:
        return sum(scores[lang] for lang in selecting) / len(selecting)
    test_sets = {lang: eval_set(ex) for lang, ex in target_test.items()}
    initial = snapshot(model, device="cpu")

    checkpoints: list[dict[str, Any]] = []
    lr_results: list[dict[str, Any]] = []
    best: tuple[float, float, int] | None = None  # (score, lr, epoch)
    best_state: dict[str, torch.Tensor] | None = None
    steps_per_epoch = (len(rows) + batch_size - 1) // batch_size
    bar = tqdm(total=len(lrs) * epochs * steps_per_epoch, disable=not progress,
               desc=f"source-train {task.name}", unit="step")
    for lr in lrs:
        restore(model, initial)
        trainer.prepare(model, seed)
        model.to(device)
        seed_all(seed)
        order_gen = torch.Generator().manual_seed(seed)
        optimizer = make_optimizer(model, lr)
        run_best = (float("-inf"), 0)
        for epoch in range(1, epochs + 1):
            order = torch.randperm(len(rows), generator=order_gen).tolist()
            losses = []
            for i in range(0, len(order), batch_size):
                batch = collate([rows[j] for j in order[i:i + batch_size]], featurizer.pad_id,
                                device)
                losses.append(train_step(model, [batch], optimizer, amp=amp,
                                         loss_fn=trainer.loss))
                bar.update(1)
            dev_scores = {lang: score(model, es, task, amp=amp)["score"]
                          for lang, es in dev_sets.items()}
            entry: dict[str, Any] = {"lr": lr, "epoch": epoch,
                                     "train_loss": sum(losses) / len(losses), "dev": dev_scores}
            if checkpoint_test_scores and test_sets:
                entry["test"] = {lang: score(model, es, task, amp=amp)["score"]
                                 for lang, es in test_sets.items()}
            checkpoints.append(entry)
            en = selection_score(dev_scores)
            entry["selection_score"] = en
            bar.set_postfix(lr=lr, epoch=epoch, dev=round(en, 4))
            if en > run_best[0]:
                run_best = (en, epoch)
            if best is None or en > best[0]:
                best = (en, lr, epoch)
                best_state = snapshot(model, device="cpu")
        lr_results.append({"lr": lr, "best_epoch": run_best[1], "best_dev": run_best[0]})
    bar.close()
    assert best is not None and best_state is not None
    restore(model, best_state)  # the masked-LM head too: best_state holds every weight
    source_scores = {lang: score(model, dev_sets[lang], task, amp=amp) for lang in source_dev}
    zero_shot = {lang: score(model, es, task, amp=amp) for lang, es in test_sets.items()}
    for lang in set(zero_shot) & set(sources_langs):
        zero_shot[lang]["in_source"] = True  # trained on it: not a zero-shot score
    oracle = {}
    for lang in target_dev:
        top = max(checkpoints, key=lambda c, lang=lang: c["dev"][lang])  # first best wins
        oracle[lang] = {"lr": top["lr"], "epoch": top["epoch"], "dev_score": top["dev"][lang],
                        "test_score": top.get("test", {}).get(lang)}
    first = sources_langs[0]
    data = {"train": data_info(train, sources.get("train")),
            "dev": data_info(source_dev[first], sources.get("dev")),
            "target_dev": {lang: data_info(ex, sources.get(f"dev-{lang}"))
                           for lang, ex in target_dev.items()},
            "target_test": {lang: data_info(ex, sources.get(f"test-{lang}"))
                            for lang, ex in target_test.items()}}
    config = {"task": task.name, "labels": list(task.labels), "encoder": model_name,
              **({"method": trainer.describe()} if trainer.name != "full" else {}),
              "lrs": lrs, "epochs": epochs, "batch_size": batch_size, "seed": seed,
              "max_seq_length": featurizer.max_len,
              "data": {k: (v["sha256"] if isinstance(v, dict) and "sha256" in v else
                           {lang: d["sha256"] for lang, d in v.items()})
                       for k, v in data.items()}}
    if sources_langs != [task.source_language] or select != "source-dev" or len(source_dev) > 1:
        # the English-only study keeps the config hash it always had
        data["source_dev"] = {lang: data_info(ex, sources.get(f"dev-{lang}"))
                              for lang, ex in source_dev.items()}
        config.update(source_languages=sources_langs, select=select,
                      source_dev={lang: d["sha256"] for lang, d in data["source_dev"].items()})
    record = {
        "format": SOURCE_FORMAT, "task": task.name, "kind": task.kind,
        "labels": list(task.labels), "metric": task.metric, "encoder": model_name,
        "method": trainer.describe(), "source_language": "+".join(sources_langs),
        "source_languages": sources_langs, "lrs": lrs,
        "epochs": epochs,
        "batch_size": batch_size, "seed": seed, "max_seq_length": featurizer.max_len,
        "data": data, "checkpoints": checkpoints, "lr_results": lr_results,
        "selection": {"protocol": "english-dev" if sources_langs == ["en"] and
                      select == "source-dev" else select, "languages": selecting,
                      "lr": best[1], "epoch": best[2], "dev_score": best[0]},
        "english_dev": source_scores[first], "source_dev": source_scores,
        "zero_shot": zero_shot, "oracle": oracle,
        "device": device.type, "versions": versions(), "config_hash": config_hash(config),
    }
    return SourceResult(model, start.tokenizer, record,
                        wall_time_s=round(time.perf_counter() - began, 3))
