"""mha_core: multi-head attention in numpy, for the workbook.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_v = d_model / h``,
``n`` (or ``n_q``, ``n_k``), ``W_Q``, ``W_K``, ``W_V``, ``W_O``.
Importing draws nothing and starts no widget: plots and explorers live in
``mha_core.plots`` and ``mha_core.widgets`` and are imported on first use.
``mha_core.heads`` builds heads whose W_Q, W_K are written by hand (previous token,
same word, first token, pronoun, translation), for figures that show real patterns.
"""

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


def __getattr__(name):
    # `mha_core.plots` / `mha_core.widgets` load matplotlib and ipywidgets only when asked for.
    if name in ("plots", "widgets"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mha_core' has no attribute {name!r}")
