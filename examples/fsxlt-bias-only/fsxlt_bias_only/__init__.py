"""An fsxlt adapting method in a package of its own: only the classifier's bias trains.

A deliberately small method that shows the whole interface: a name and a
version, the task kinds it supports, one typed option, the parameters it
trains, where frozen-encoder features may be cached, and its own loss.

    pip install -e examples/fsxlt-bias-only
    fsxlt methods                                   # lists bias-only
    fsxlt adapt ... --method bias-only --method-opt label_smoothing=0.1
"""

from __future__ import annotations

from fsxlt.methods import Method, Option


class BiasOnly(Method):
    """The classifier's bias alone moves: the cheapest possible target adaptation."""

    name = "bias-only"
    version = "1"
    summary = "classifier bias only (frozen encoder; features cached)"
    kinds = ("classification", "tagging")
    options = (Option("label_smoothing", float, 0.0, "label smoothing of the loss"),)

    def prepare(self, model, seed):
        for name, param in model.named_parameters():
            param.requires_grad_(name == "classifier.bias")

    def feature_point(self, model):
        # Nothing before the classifier trains: cache what the pooler outputs.
        return "pooled"

    def loss(self, logits, labels):
        from torch.nn import functional as F

        return F.cross_entropy(logits.float(), labels, reduction="sum",
                               label_smoothing=self.label_smoothing)
