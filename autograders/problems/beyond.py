"""Beyond the sheet, notebooks/beyond_the_sheet.ipynb: Problem 4.5, the KV cache's size."""

import itertools

import numpy as np

from ..checks import misconceptions as tags
from .declare import Answer, Mistake, Numbers

ASSIGNMENT = "beyond_the_sheet"

# --- Problem 4.5: the bytes a decoder keeps for its keys and values ------------------------------------

SHEET_4_5 = {"n_layers": 32, "n_ctx": 8192, "n_heads": 32, "n_kv_heads": 8, "d_head": 128, "bytes_per_value": 2}
MODEL_4_5 = Numbers("q4_5", sheet=SHEET_4_5, entries=tuple(
    e for e in ({"n_layers": L, "n_ctx": n, "n_heads": h, "n_kv_heads": g, "d_head": d, "bytes_per_value": b}
                for L, n, (h, g), d, b in itertools.product((24, 32, 48), (3000, 6000, 12000), ((32, 8), (32, 4), (64, 8)),
                                                             (64, 128), (2, 1)))
    if e != SHEET_4_5),
    valid=lambda e: None if e["n_heads"] % e["n_kv_heads"] == 0 and e["n_heads"] > e["n_kv_heads"] else
    "n_kv_heads should divide n_heads and be smaller (grouped-query attention)")


def _cached(n):
    """An independent count: numpy's size in bytes of one layer's K and V caches, times the layers."""
    dtype = {1: np.int8, 2: np.float16, 4: np.float32}[n.bytes_per_value]
    one = np.empty((n.n_ctx, n.n_kv_heads * n.d_head), dtype=dtype)  # not written to: nothing is filled
    return n.n_layers * 2 * one.nbytes


KV_CACHE_BYTES = Answer(
    "q4_5_kv_cache_bytes", "number", numbers=MODEL_4_5, tolerance=0.5, sheet_mistake=True, hidden=_cached, prefix="",
    answer=lambda n: 2 * n.n_layers * n.n_ctx * n.n_kv_heads * n.d_head * n.bytes_per_value,
    mistakes=(
        Mistake(tags.KV_COUNTED_ONCE, lambda n: n.n_layers * n.n_ctx * n.n_kv_heads * n.d_head * n.bytes_per_value,
                "That counts one cache per layer: a layer keeps the keys *and* the values of every past token, two "
                "tensors of n_ctx × n_kv_heads × d_head numbers: multiply by 2."),
        Mistake(tags.GQA_IGNORED, lambda n: 2 * n.n_layers * n.n_ctx * n.n_heads * n.d_head * n.bytes_per_value,
                lambda n: f"That caches keys and values for all n_heads = {n.n_heads} query heads. With grouped-query "
                          f"attention they share n_kv_heads = {n.n_kv_heads} key-value heads, and only those are "
                          "cached."),
    ),
    fallback=lambda n: f"`kv_cache_bytes` is {n.value:,.0f}: count the numbers one layer caches (keys and values, n_ctx "
                       "tokens, n_kv_heads heads of d_head numbers), then multiply by the layers and the bytes per "
                       "number.",
    right=lambda n: f"2 · {n.n_layers} · {n.n_ctx} · {n.n_kv_heads} · {n.d_head} · {n.bytes_per_value} = "
                    f"{2 * n.n_layers * n.n_ctx * n.n_kv_heads * n.d_head * n.bytes_per_value:,} bytes.",
    hidden_right="It matches the size of the cached arrays themselves.",
)

ANSWERS = (KV_CACHE_BYTES,)
