"""Loading starting points (checkpoints or pretrained encoders) and saving checkpoints.

A checkpoint written by source-training is a directory that is at the same
time a plain Hugging Face encoder (``save_pretrained`` of the encoder with
its pooler, plus the tokenizer) and an fsxlt model::

    DIR/config.json, model.safetensors, tokenizer files   the encoder (AutoModel loads it)
    DIR/fsxlt_head.safetensors                            pooler + classifier weights
    DIR/fsxlt_checkpoint.json                             task, labels, the source-run record
    DIR/oracle-<lang>/                                    (--keep oracle) a checkpoint each

Anything else given as a starting point is taken as a Hugging Face encoder
name or directory and gets a freshly initialised (seeded) head: the
no-source-training ablation (docs/protocol.md#ablations).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, read_json, staged_dir
from fsxlt.identity import hub_source
from fsxlt.models.location import TOKENIZER_FILES, check_model_location
from fsxlt.models.model import DEFAULT_HEAD, FsxltModel, build_model
from fsxlt.study.runs import CHECKPOINT_FILE, is_checkpoint, start_fingerprint
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.training.loop import restore, snapshot

CHECKPOINT_FORMAT = "fsxlt-checkpoint/1"
HEAD_FILE = "fsxlt_head.safetensors"


@dataclass
class Start:
    """A model to start training from, with what it is."""

    model: FsxltModel
    tokenizer: Any
    info: dict[str, Any]
    fresh_head: bool
    record: dict[str, Any] = field(default_factory=dict)
    # modules a method added and the checkpoint saved beside the head, by attribute name,
    # each as its state dict (pet: ``mlm_head``); a method gets its own ones in ``bind``
    extra: dict[str, Any] = field(default_factory=dict)


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``None``/``"auto"``: CUDA when present, else CPU."""
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as err:
        raise FsxltError(f"invalid device {device!r}: {err}") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise FsxltError("device cuda requested but CUDA is not available")
    return resolved


def _first_line(err: BaseException) -> str:
    from fsxlt.identity import whole_words

    text = str(err).strip()
    return whole_words(text, 300) if text else err.__class__.__name__


def load_failure(name: str, err: BaseException, what: str = "encoder",
                 tokenizer: bool = True) -> FsxltError:
    """The one line for a model that did not load (the boundary every model load shares:
    encoders, checkpoints, causal LMs): the broken file of a local directory when one
    is (unreadable JSON, cut weights), a directory without tokenizer files, else the
    error's first line. ``tokenizer`` False: the tokenizer comes from elsewhere (GGUF)."""
    directory = Path(name).expanduser()
    if directory.is_dir():
        broken = broken_model_file(directory)
        if broken is not None:
            return FsxltError(f"cannot load {what} {name!r}: {broken}")
        if tokenizer and not any((directory / f).is_file() for f in TOKENIZER_FILES):
            return FsxltError(f"cannot load {what} {name!r}: no tokenizer files "
                              f"({', '.join(TOKENIZER_FILES)})")
    where = "" if directory.is_dir() else " (no such directory; tried the hub)"
    return FsxltError(f"cannot load {what} {name!r}{where}: {err.__class__.__name__}: "
                      f"{_first_line(err)}")


def broken_model_file(directory: Path) -> str | None:
    """``FILE: what is wrong`` for the first unreadable file of a model directory, or None.

    Checks what a half-copied or half-written model directory gets wrong:
    JSON files that do not parse, safetensors files whose header or data is
    cut short.
    """
    from safetensors import safe_open

    for path in sorted(directory.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            return f"{path.name}: not valid JSON ({_first_line(err)})"
    for path in sorted(directory.glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt"):  # checks the header against the size
                pass
        except Exception as err:  # safetensors raises its own error type
            return (f"{path.name}: truncated or corrupt weights ({err.__class__.__name__}: "
                    f"{_first_line(err)})")
    return None


def _load_head(head_path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    try:
        return load_file(str(head_path))
    except Exception as err:  # a truncated or corrupt file
        raise FsxltError(f"{head_path}: truncated or corrupt weights "
                         f"({err.__class__.__name__}: {_first_line(err)})") from None


def load_encoder(name_or_path: str | Path, seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """``AutoModel`` + fast ``AutoTokenizer``; weights the checkpoint lacks get seeded init."""
    from transformers import AutoModel, AutoTokenizer

    name = str(name_or_path)
    check_model_location(name, tokenizer=True)
    source, revision = hub_source(name)  # a hub name: at the commit it resolves to
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **revision)
        torch.manual_seed(seed)  # encoder weights missing from the checkpoint (e.g. a pooler)
        encoder = AutoModel.from_pretrained(source, **revision)
    except Exception as err:  # hub unreachable, not a model, bad files: one line
        raise load_failure(name, err) from None
    if not getattr(tokenizer, "is_fast", False):
        raise FsxltError(f"{name}: fsxlt needs a fast tokenizer (tokenizer.json)")
    check_tokenizer(tokenizer, name)
    return encoder, tokenizer


# a tokenizer that leaves this share of the training data's words wholly unknown cannot
# have been the encoder's (a multilingual encoder's leaves well under 1% of any language's)
UNKNOWN_WORDS_LIMIT = 0.9
CHECKED_WORDS = 2000


def tokenizer_problem(tokenizer: Any, texts: Sequence[str] = ()) -> str | None:
    """What makes ``tokenizer`` unable to tokenize, in words, or None: a vocabulary of
    special tokens only (transformers builds one from ``config.json``'s
    ``tokenizer_class`` when a folder holds no tokenizer files), or, over the first
    :data:`CHECKED_WORDS` words of ``texts``, at least :data:`UNKNOWN_WORDS_LIMIT` of them
    nothing but its unknown token."""
    size = len(tokenizer)
    specials = set(getattr(tokenizer, "all_special_ids", []) or [])
    if size <= len(specials):
        return (f"its tokenizer has {size} pieces, all special tokens: no vocabulary (a "
                "folder without its tokenizer files gets an empty one from config.json's "
                "tokenizer_class)")
    words = [word for text in texts for word in text.split()][:CHECKED_WORDS]
    unk = getattr(tokenizer, "unk_token_id", None)
    if not words or unk is None:
        return None
    encoded = tokenizer(words, add_special_tokens=False)["input_ids"]
    unknown = sum(1 for ids in encoded if all(i == unk for i in ids))
    if unknown >= UNKNOWN_WORDS_LIMIT * len(words):
        return (f"its tokenizer ({size} pieces) knows {len(words) - unknown} of the first "
                f"{len(words)} words of the training data (the rest are all "
                f"{tokenizer.unk_token}): not this encoder's tokenizer, or not its language")
    return None


def check_tokenizer(tokenizer: Any, name: str, texts: Sequence[str] = ()) -> None:
    """Refuse, in one line, a tokenizer that cannot tokenize (:func:`tokenizer_problem`):
    before any training, not after it learned nothing."""
    problem = tokenizer_problem(tokenizer, texts)
    if problem is not None:
        raise FsxltError(f"{name}: {problem}; give a model folder with its tokenizer files "
                         f"({', '.join(TOKENIZER_FILES)})")


def load_start(name_or_path: str | Path, task: str | TaskSpec, *, seed: int = 0,
               head: str | None = None) -> Start:
    """Load an fsxlt checkpoint (with the head it was trained with), or a pretrained
    encoder with a fresh head for ``task`` (``head``: :data:`fsxlt.models.model.HEADS`)."""
    task = get_task(task)
    path = Path(name_or_path)
    if not is_checkpoint(path):
        encoder, tokenizer = load_encoder(name_or_path, seed)
        model = build_model(encoder, task, seed, head or DEFAULT_HEAD)
        info = {"kind": "pretrained", "encoder": str(name_or_path), "path": None,
                "id": start_fingerprint(name_or_path), **_head_fact(model),
                **_revision_fact(str(name_or_path))}
        return Start(model, tokenizer, info, fresh_head=True)
    meta = read_json(path / CHECKPOINT_FILE)
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        raise FsxltError(f"{path / CHECKPOINT_FILE}: not an fsxlt checkpoint ({CHECKPOINT_FORMAT})")
    if meta.get("kind") != task.kind or list(meta.get("labels", [])) != list(task.labels):
        raise FsxltError(f"{path}: checkpoint was trained for task {meta.get('task')!r} "
                         f"with labels {meta.get('labels')}, which do not match task {task.name}")
    head_path = path / HEAD_FILE
    if not head_path.is_file():
        raise FsxltError(f"{head_path}: file not found")
    own = str(meta.get("head") or DEFAULT_HEAD)  # checkpoints before 0.5: the pooler's
    if head is not None and head != own:
        raise FsxltError(f"{path}: a checkpoint with the {own} head, not {head}; its head is "
                         "its own (source-train with --head to get another)")
    encoder, tokenizer = load_encoder(path, seed)
    model = build_model(encoder, task, seed, own)
    head = _load_head(head_path)
    missing = set(model.head_state_dict()) - set(head)
    if missing:
        raise FsxltError(f"{head_path}: missing weights {', '.join(sorted(missing))}")
    model.load_state_dict(head, strict=False)
    info = {"kind": "source-trained", "encoder": meta.get("encoder"), "path": str(path),
            **_head_fact(model),
            "id": start_fingerprint(path),  # by content: record, head, weights, tokenizer
            "source_languages": meta.get("source_languages")
            or [meta.get("source_language", task.source_language)],
            "long_sentences": start_long_sentences(meta, task)}
    if start_warnings(meta):  # it learned nothing: every record adapted from it says so
        info["warnings"] = start_warnings(meta)
    return Start(model, tokenizer, info, fresh_head=False, record=meta,
                 extra=_saved_modules(head, set(model.head_state_dict())))


def start_warnings(meta: dict[str, Any]) -> list[str]:
    """A checkpoint record's warnings (:func:`fsxlt.training.source.learned_nothing`)."""
    found = meta.get("warnings")
    return [str(w) for w in found] if isinstance(found, list) else []


def _revision_fact(name: str) -> dict[str, str]:
    """The hub commit a pretrained start loaded (nothing for a local directory)."""
    return hub_source(name)[1]


def _head_fact(model: FsxltModel) -> dict[str, str]:
    """What a start's record says of its head: which one, where a pooler could be."""
    return {"head": model.head_name} if model.kind in ("classification",
                                                       "multiple_choice") else {}


def start_long_sentences(meta: dict[str, Any], task: TaskSpec) -> str:
    """How a checkpoint's training rows treated long sentences (its record's
    ``long_sentences``). A checkpoint that does not say: ``truncate`` for a
    classification task (its inputs were always truncated), else ``unrecorded``
    (fsxlt from 4acc7b3 to 0.2.0 trained tagging checkpoints on windows without
    saying so; earlier ones truncated)."""
    value = meta.get("long_sentences")
    if isinstance(value, str):
        return value
    return "unrecorded" if task.is_tagging else "truncate"


def _saved_modules(head: dict[str, torch.Tensor], own: set[str],
                   ) -> dict[str, dict[str, torch.Tensor]]:
    """The head file's weights that are not the model's own head, grouped by the module
    (first name part) a method added them as: ``{"mlm_head": {"predictions.bias": ...}}``."""
    saved: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in head.items():
        if key not in own:
            module, _, rest = key.partition(".")
            saved.setdefault(module, {})[rest] = tensor
    return saved


def save_checkpoint(out_dir: str | Path, model: FsxltModel, tokenizer: Any,
                    record: dict[str, Any], *, overwrite: bool = False,
                    inside: Mapping[str, tuple[dict[str, torch.Tensor], dict[str, Any]]]
                    | None = None) -> Path:
    """Write a checkpoint directory atomically (staged beside it, then renamed).

    ``inside``: more checkpoints written in folders of it (folder name -> (weights,
    record)), each the model with those weights (e.g. the oracle starts,
    ``oracle-<lang>``); the model holds its own weights again afterwards.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise FsxltError(f"{out_dir} exists and is not empty; pass --overwrite to replace it")
    with staged_dir(out_dir) as staging:
        _write_checkpoint(staging, model, tokenizer, record)
        if inside:
            own = snapshot(model, device="cpu")
            try:
                for name, (state, inner) in inside.items():
                    restore(model, state)
                    _write_checkpoint(staging / name, model, tokenizer, inner)
            finally:
                restore(model, own)
    return out_dir


def _write_checkpoint(directory: Path, model: FsxltModel, tokenizer: Any,
                      record: dict[str, Any]) -> None:
    """The files of one checkpoint (encoder, tokenizer, head, record) in ``directory``."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    try:
        model.encoder_for_saving().save_pretrained(directory)
    finally:
        model.detach_pooler()
    tokenizer.save_pretrained(directory)
    head = {k: v.detach().to("cpu").contiguous() for k, v in model.head_state_dict().items()}
    save_file(head, str(directory / HEAD_FILE), metadata={"format": "pt"})
    atomic_write_json(directory / CHECKPOINT_FILE, dict(record, format=CHECKPOINT_FORMAT))
