"""Target-adapting methods: one small class each, built in or from a plug-in.

The contract a method fulfils, with an example, is :mod:`~fsxlt.methods.base`'s
docstring (:class:`Method`). The code lives in :mod:`~fsxlt.methods.base`,
:mod:`~fsxlt.methods.builtin` (the built-in methods), :mod:`~fsxlt.methods.registry`
(finding and building a method) and :mod:`~fsxlt.methods.options` (typed options);
this package hands their names on.
"""

from fsxlt.methods.base import DEFAULT_MODEL, ENTRY_POINT_GROUP, KINDS, Method
from fsxlt.methods.builtin import (
    BUILTIN,
    METHODS,
    CosPooler,
    Fc,
    FcPooler,
    FcResetPooler,
    Full,
    Lora,
    Pet,
)
from fsxlt.methods.options import Option, parse_method_options
from fsxlt.methods.registry import (
    check_source_training,
    discover,
    get_method,
    method_class,
    method_label,
    plugins,
    prepare_method,
    source_training_methods,
)

__all__ = ["BUILTIN", "DEFAULT_MODEL", "ENTRY_POINT_GROUP", "KINDS", "METHODS", "CosPooler",
           "Fc", "FcPooler", "FcResetPooler", "Full", "Lora", "Method", "Option", "Pet",
           "check_source_training", "discover", "get_method", "method_class", "method_label",
           "parse_method_options", "plugins", "prepare_method", "source_training_methods"]
