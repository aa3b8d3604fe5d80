"""Oracle starts: per target language, the source-trained epoch best on its own dev set.

Schmidt et al. (2022, "Don't Stop Fine-Tuning") adapt from the source-trained
checkpoint that the target language's dev set selects (their "*-oracle"
start) beside the one the source dev set selects. With ``keep="oracle"``
(``fsxlt source-train --keep oracle``) source-training follows, for every
target language with a dev set, the best epoch so far on that dev set: one
CPU copy of the weights per language (shared by the languages one epoch
improves), replaced when a later epoch beats it (strictly: the first best
wins, as the record's ``oracle`` says). After the grid each becomes a
complete checkpoint ``DIR/oracle-<lang>/`` inside the selected one's
directory, loadable wherever a checkpoint is (``fsxlt adapt --from
DIR/oracle-de``).

An oracle checkpoint's record is the source-run record of those weights
(``zero_shot``, ``english_dev``, ``source_dev`` scored on them) with
``selection`` naming the target-dev rule and ``oracle_start``: the language,
the rule, the lr and epoch, the dev scores (equal to the selected record's
``oracle[lang]``) and the selected checkpoint's config hash. Its own
``config_hash`` adds the language and the rule, so runs adapted from it are
runs of another start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.models.model import FsxltModel
from fsxlt.training.loop import snapshot

State = dict[str, torch.Tensor]
ORACLE_RULE = "target-dev"  # the rule that picks an oracle start: best on its target's dev


def oracle_dir_name(language: str) -> str:
    """The oracle checkpoint's folder inside the selected one's: ``oracle-<lang>``."""
    return f"oracle-{language}"


def oracle_config(language: str) -> dict[str, Any]:
    """What an oracle checkpoint's config hash adds to the grid's config."""
    return {"oracle": {"language": language, "rule": ORACLE_RULE}}


def check_oracle(keep: str, target_dev: Mapping[str, Sequence[Any]]) -> None:
    """``keep`` oracle needs a target language with a dev set (one line, before training)."""
    if keep == "oracle" and not any(target_dev.values()):
        raise FsxltError("keep oracle keeps the epoch best on each target language's dev set: "
                         "give a --target with a dev set (--data-dir or --target-dev LANG=FILE)")


@dataclass
class OracleBest:
    """The best epoch so far on one target language's dev set, and its weights (CPU)."""

    lr: float
    epoch: int
    dev_score: float
    state: State


@dataclass
class OracleKeeper:
    """Follows the grid's epochs: per target language, the best on its dev set so far."""

    languages: list[str]
    best: dict[str, OracleBest] = field(default_factory=dict)

    def epoch_done(self, model: FsxltModel, entry: dict[str, Any]) -> None:
        """After an epoch scored as ``entry`` (lr, epoch, dev scores): copy the weights once
        for the languages whose dev score it beats."""
        improved = [lang for lang in self.languages
                    if lang not in self.best or entry["dev"][lang] > self.best[lang].dev_score]
        if not improved:
            return
        state = snapshot(model, device="cpu")
        for lang in improved:
            self.best[lang] = OracleBest(entry["lr"], entry["epoch"], entry["dev"][lang], state)


@dataclass
class OracleStart:
    """One oracle checkpoint to save: its language, weights (CPU) and record."""

    language: str
    state: State
    record: dict[str, Any]

    @property
    def name(self) -> str:
        return oracle_dir_name(self.language)


def as_oracle_record(record: dict[str, Any], language: str,
                     grid_oracle: dict[str, Any]) -> dict[str, Any]:
    """The record of the oracle start of ``language``: ``record`` is the source-run record
    scored with the model holding its weights (and its own config hash); ``grid_oracle``
    the selected record's ``oracle[language]``, which it must hold."""
    lr, epoch = grid_oracle["lr"], grid_oracle["epoch"]
    checkpoint = next(c for c in record["checkpoints"] if (c["lr"], c["epoch"]) == (lr, epoch))
    out = {key: value for key, value in record.items() if key != "candidates"}
    out["selection"] = {"protocol": ORACLE_RULE, "languages": [language], "lr": lr,
                        "epoch": epoch, "dev_score": grid_oracle["dev_score"],
                        "keep": "oracle", "kept": oracle_dir_name(language)}
    out["oracle_start"] = {"language": language, "rule": ORACLE_RULE, **grid_oracle,
                           "dev": dict(checkpoint["dev"])}
    return out


def link_to_selected(starts: Sequence[OracleStart], record: dict[str, Any]) -> None:
    """Name the oracle checkpoints in the selected record (``oracle_starts``: language ->
    folder) and the selected checkpoint's config hash in each oracle record."""
    record["oracle_starts"] = {start.language: start.name for start in starts}
    for start in starts:
        start.record["oracle_start"]["selected_config_hash"] = record["config_hash"]
