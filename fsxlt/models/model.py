"""Encoders, heads and the freezing policy of every target-adapting method.

One model class, :class:`FsxltModel`, serves every task kind (docs/protocol.md#training):

- **classification**: the encoder's [CLS] hidden state goes through a pooler
  (linear + tanh; the encoder's own pretrained pooler when it has one, e.g.
  BERT and XLM-R, otherwise a freshly initialised one), dropout and a linear
  classifier (``head`` ``pooler``, BERT's ``BertForSequenceClassification``, the
  study's). Pair inputs are fed as a segment pair. ``head`` ``cls`` has no
  pooler: dropout and the linear classifier on the [CLS] hidden state, as the
  training-regime peer's ``AutoModelForCLSClassification`` does
  (fdschmidt93/fsxlt, ``trident-xtreme/src/modules/modeling/auto_models.py``
  lines 52-54); its methods are those of a model without a pooler.
- **multiple choice**: every (text, candidate) pair is one encoder input; its
  [CLS] state goes through the pooler, dropout and a linear layer with one
  output, and the scores of an example's candidates are its logits (a
  softmax over the candidates in the loss, argmax to predict).
- **tagging**: dropout and a linear classifier on the hidden state of each
  word's **last** wordpiece. Other pieces and special tokens never reach the
  loss or the metric because only the last-piece positions are gathered.
- **extractive QA**: a span head, one linear layer from every token's hidden
  state to a start and an end logit (no dropout, as BERT's SQuAD head); the
  windows of long contexts and span decoding live in :mod:`fsxlt.models.spans`.

The model is split at a clean seam: :meth:`FsxltModel.encode` runs the
encoder and returns *features* (the [CLS] hidden state before the pooler, or
one vector per scored word); :meth:`FsxltModel.head` maps features to logits
(pooler, dropout, classifier). The head-only adapting variants freeze the
whole encoder and run it in eval mode (no dropout), so its features are a
deterministic function of the input and can be cached.

The study's adapting methods (:data:`fsxlt.methods.METHODS`; all but ``full`` freeze
embeddings and all transformer layers; each is a class in :mod:`fsxlt.methods`,
where LoRA and plug-ins live too):

============== ============================================= ====================
method         trained parameters                            classifier at start
============== ============================================= ====================
full           everything                                    source-trained
fc             classifier                                    source-trained
fc-pooler      classifier, pooler                            source-trained
cos-pooler     cosine matrix W, pooler                       new random W, s=10
fc-reset-pooler classifier, pooler                           re-initialised
============== ============================================= ====================

Tagging and QA models have no pooler, so only ``full`` and ``fc`` (and LoRA) apply to them.

Turning examples into inputs lives in :mod:`fsxlt.models.encoding`. This module reads no data files.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from fsxlt.errors import FsxltError
from fsxlt.models.spans import span_logits
from fsxlt.tasks import TaskSpec

COS_SCALE = 10.0
HEADS = ("pooler", "cls")  # a classification model's head: with BERT's pooler, or without
DEFAULT_HEAD = HEADS[0]


class Pooler(nn.Module):
    """Linear + tanh on the [CLS] hidden state (same parameter names as BERT's pooler)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, cls_state: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(cls_state))


class CosineClassifier(nn.Module):
    """Logits ``s * cos(x, w_c)`` for a matrix ``W`` of shape (hidden, classes)."""

    def __init__(self, hidden_size: int, num_labels: int, scale: float = COS_SCALE):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden_size, num_labels))
        self.scale = scale

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.normalize(features, dim=-1, eps=1e-8)
        w = F.normalize(self.weight, dim=0, eps=1e-8)
        return self.scale * (x @ w)


def _normal_(tensor: torch.Tensor, std: float, generator: torch.Generator) -> None:
    with torch.no_grad():
        values = torch.randn(tensor.shape, generator=generator, dtype=torch.float32) * std
        tensor.copy_(values.to(tensor.device, tensor.dtype))


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))
    return gen


class FsxltModel(nn.Module):
    """A Hugging Face encoder plus an FS-XLT head (see the module docstring).

    Parameter names start with ``encoder.``, ``pooler.`` or ``classifier.``;
    freezing policies are expressed in those prefixes.
    """

    def __init__(self, encoder: nn.Module, kind: str, num_labels: int, *, seed: int = 0,
                 head: str = "pooler"):
        super().__init__()
        if kind not in ("classification", "tagging", "multiple_choice", "extractive_qa"):
            raise ValueError(f"unknown task kind {kind!r}")
        check_head(head, kind)
        self.head_name = head
        config = encoder.config
        self.kind = kind
        self.num_labels = num_labels
        # multiple choice: the classifier scores each (text, candidate) row with one
        # number; classify() lays the scores out as (examples, candidates) logits.
        # extractive QA: a start and an end logit per token
        self.n_outputs = {"multiple_choice": 1, "extractive_qa": 2}.get(kind, num_labels)
        self.hidden_size = int(config.hidden_size)
        self.init_std = float(getattr(config, "initializer_range", 0.02) or 0.02)
        native = getattr(encoder, "pooler", None)
        self.native_pooler = native is not None and isinstance(
            getattr(native, "dense", None), nn.Linear)
        self.pooler: Pooler | None = None
        if kind not in ("tagging", "extractive_qa") and head == "pooler":
            self.pooler = Pooler(self.hidden_size)
            if self.native_pooler:
                self.pooler.load_state_dict(native.dense.state_dict(prefix="dense."))
            else:
                self.reset_pooler(seed)
        if native is not None:
            encoder.pooler = None  # we own the pooler; the encoder returns hidden states
        self.encoder = encoder
        dropout = getattr(config, "hidden_dropout_prob", None)
        if dropout is None:
            dropout = getattr(config, "dropout", 0.1)
        self.dropout = nn.Dropout(float(dropout))
        self.classifier: nn.Module = nn.Linear(self.hidden_size, self.n_outputs)
        self.reset_classifier(seed)
        self.head_kind = "linear"
        # A method may replace the head: ``output_head`` maps the hidden state at each
        # batch's scored positions (``word_index``) to logits (pet scores a mask there).
        self.output_head: nn.Module | None = None

    # ----------------------------------------------------------------- head set-up

    def reset_classifier(self, seed: int) -> None:
        """A fresh linear classifier: N(0, initializer_range) weights, zero bias."""
        classifier = nn.Linear(self.hidden_size, self.n_outputs)
        classifier.to(self._device_dtype()[0])
        _normal_(classifier.weight, self.init_std, _generator(seed))
        nn.init.zeros_(classifier.bias)
        self.classifier = classifier
        self.head_kind = "linear"

    def reset_pooler(self, seed: int) -> None:
        if self.pooler is None:
            return
        _normal_(self.pooler.dense.weight, self.init_std, _generator(seed + 7919))
        nn.init.zeros_(self.pooler.dense.bias)

    def use_cosine_head(self, seed: int) -> None:
        """Replace the classifier by a new random cosine head (scale 10)."""
        head = CosineClassifier(self.hidden_size, self.n_outputs)
        head.to(self._device_dtype()[0])
        _normal_(head.weight, 1.0 / math.sqrt(self.hidden_size), _generator(seed))
        self.classifier = head
        self.head_kind = "cos"

    def use_linear_head(self) -> None:
        """Make sure the classifier is linear (shape as in a saved state dict)."""
        if self.head_kind != "linear":
            self.reset_classifier(0)

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        param = next(self.encoder.parameters())
        return param.device, param.dtype

    # ----------------------------------------------------------------- freezing

    @property
    def encoder_trainable(self) -> bool:
        return any(p.requires_grad for p in self.encoder.parameters())

    def train(self, mode: bool = True) -> FsxltModel:
        super().train(mode)
        if mode and not self.encoder_trainable:
            self.encoder.eval()  # frozen encoder: deterministic features, no dropout
        return self

    def trainable_names(self) -> list[str]:
        return [n for n, p in self.named_parameters() if p.requires_grad]

    # ----------------------------------------------------------------- forward

    def encode(self, batch: dict[str, torch.Tensor], *, positions: bool = False,
               ) -> torch.Tensor:
        """Encoder forward: [CLS] state (classification) or one vector per scored word.

        ``positions`` gathers the states at the batch's ``word_index`` for a
        classification model too (what an ``output_head`` reads).
        """
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        if "token_type_ids" in batch:
            inputs["token_type_ids"] = batch["token_type_ids"]
        grad = torch.is_grad_enabled() and self.encoder_trainable
        with torch.set_grad_enabled(grad):
            hidden = self.encoder(**inputs).last_hidden_state
        if self.kind == "extractive_qa":
            return hidden
        if self.kind != "tagging" and not positions:
            return hidden[:, 0]
        flat = hidden.reshape(-1, hidden.shape[-1])
        return flat.index_select(0, batch["word_index"])

    def pool(self, features: torch.Tensor) -> torch.Tensor:
        """The pooler on [CLS] states (classification); tagging features pass unchanged."""
        return self.pooler(features) if self.pooler is not None else features

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        """Pooled features -> logits: dropout, classifier.

        Multiple choice: the rows of a batch are each example's candidates in
        order, so the one score per row is reshaped to (examples, candidates)
        and a softmax (in the loss) runs over an example's candidates.
        """
        if self.kind == "extractive_qa":
            return self.classifier(pooled)  # BERT's span head has no dropout
        logits = self.classifier(self.dropout(pooled))
        if self.kind == "multiple_choice":
            return logits.reshape(-1, self.num_labels)
        return logits

    def head(self, features: torch.Tensor) -> torch.Tensor:
        """Features -> logits: (pooler,) dropout, classifier."""
        return self.classify(self.pool(features))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits for an input batch, or for a batch of cached features.

        A batch normally holds ``input_ids`` etc. A batch built by
        :mod:`fsxlt.training.features` holds ``features`` (what :meth:`encode`
        returned) or ``pooled`` (what :meth:`pool` returned) instead, and
        only the parts after that point run.
        """
        if self.kind == "extractive_qa":
            features = batch["features"] if "features" in batch else self.encode(batch)
            return span_logits(self.head(features), batch["attention_mask"])
        if "pooled" in batch:
            return self.classify(batch["pooled"])
        if "features" in batch:
            return self.head(batch["features"])
        if self.output_head is not None:
            return self.output_head(self.encode(batch, positions=True))
        return self.head(self.encode(batch))

    def represent(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """What the prediction reads, and the logits it makes of it.

        The pooled [CLS] state (tagging: each word's state) and the
        classifier's logits; with a method's own ``output_head`` (``pet``),
        the states at the scored positions (the mask) and that head's logits.
        """
        if self.output_head is not None:
            states = self.encode(batch, positions=True)
            return states, self.output_head(states)
        pooled = self.pool(self.encode(batch))
        return pooled, self.classify(pooled)

    # ----------------------------------------------------------------- state

    def head_state_dict(self) -> dict[str, torch.Tensor]:
        """Pooler and classifier weights (what a checkpoint stores beside the encoder)."""
        out, seen = {}, set()
        for name, tensor in self.state_dict().items():
            if name.startswith(("encoder.", "output_head.")) or name.endswith("decoder.weight"):
                continue  # the encoder's own (a tied decoder is its embedding matrix)
            key = (tensor.data_ptr(), tuple(tensor.shape))
            if key not in seen:  # a tensor shared by two names is saved once
                seen.add(key)
                out[name] = tensor
        return out

    def encoder_for_saving(self) -> nn.Module:
        """The encoder with its native pooler re-attached, for ``save_pretrained``."""
        if self.native_pooler and self.pooler is not None:
            self.encoder.pooler = self.pooler
        return self.encoder

    def detach_pooler(self) -> None:
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None


def build_model(encoder: nn.Module, task: TaskSpec, seed: int = 0,
                head: str = "pooler") -> FsxltModel:
    """Wrap an encoder with a fresh head for ``task`` (seeded; ``head``: :data:`HEADS`)."""
    return FsxltModel(encoder, task.kind, len(task.labels), seed=seed, head=head)


def check_head(head: str, kind: str, what: str = "head") -> str:
    """``head`` if it is one of :data:`HEADS` and ``kind`` can have it (``cls`` is for the
    kinds with a pooler: classification and multiple choice), else one line."""
    if head not in HEADS:
        raise FsxltError(f"{what} must be one of {', '.join(HEADS)}, got {head!r}")
    if head != "pooler" and kind not in ("classification", "multiple_choice"):
        raise FsxltError(f"{what} {head} is for classification and multiple-choice tasks "
                         f"(a {kind.replace('_', ' ')} head has no pooler to leave out)")
    return head


def quiet_transformers() -> None:
    """Silence transformers' load reports and progress bars (the CLI prints its own)."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
