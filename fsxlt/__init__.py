"""fsxlt: few-shot crosslingual transfer with standardized, verifiable buckets.

The package is a set of small modules, one concern each (see README's
architecture section); the ``fsxlt`` command line is a thin layer over them,
so everything it does can also be called from Python or a notebook.
"""

__version__ = "0.1.0"
