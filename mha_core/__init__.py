"""mha_core: multi-head attention in numpy, for the workbook.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_v = d_model / h``,
``n`` (or ``n_q``, ``n_k``), ``W_Q``, ``W_K``, ``W_V``, ``W_O``.
Importing draws nothing and starts no widget. Two public faces, imported on first use: the
figures are ``mha_core.plots``, the explorers ``mha_core.widgets``; what they are built with
(``mha_core.figures``, one module per explorer in ``mha_core.explore``) is theirs, not the
notebooks'.
``mha_core.heads`` builds heads whose W_Q, W_K are written by hand (previous token,
same word, first token, pronoun, translation), for figures that show real patterns.

Drawing can be switched off where nobody looks at the pictures (a notebook executed
headless: grading, a validation run): ``mha_core.drawing(False)`` in the process, or
the environment variable ``MHA_CORE_DRAW=0`` (read at each figure, so a kernel started
with it draws nothing). Then the figures of ``mha_core.plots`` check their arguments
and return one line of text naming them, and the explorers of ``mha_core.widgets``
compute their state but draw no frame. ``mha_core.drawing()`` says whether it draws.
"""

import os

from .attention import (
    causal_mask,
    concat_heads,
    head_dim,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from .counting import ShapeRow, flop_count, parameter_count, shape_table
from .layer import MultiHeadAttention, Trace, shared_projection_attention, summed_heads_attention
from . import heads

__all__ = [
    "MultiHeadAttention",
    "drawing",
    "ShapeRow",
    "Trace",
    "causal_mask",
    "concat_heads",
    "flop_count",
    "head_dim",
    "multi_head_attention",
    "parameter_count",
    "scaled_dot_product_attention",
    "shape_table",
    "shared_projection_attention",
    "softmax",
    "split_heads",
    "summed_heads_attention",
]


_drawing = None  # set by drawing(on); None: as MHA_CORE_DRAW says (default: draw)


def drawing(on=None):
    """Whether figures and explorers draw; ``drawing(False)`` / ``drawing(True)`` switches it
    for this process (over ``MHA_CORE_DRAW``), ``drawing(None)`` (the default) only asks.

    Without a switch, the environment decides: ``MHA_CORE_DRAW=0`` draws nothing,
    anything else (or nothing) draws."""
    global _drawing
    if on is not None:
        if not isinstance(on, bool):
            raise ValueError(f"on must be True, False or None, got {on!r}")
        _drawing = on
    if _drawing is not None:
        return _drawing
    return os.environ.get("MHA_CORE_DRAW", "1").strip() != "0"


def __getattr__(name):
    # `mha_core.plots`, `.widgets`, `.explore` load matplotlib and ipywidgets only when asked for.
    if name in ("plots", "widgets", "explore", "figures"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mha_core' has no attribute {name!r}")
