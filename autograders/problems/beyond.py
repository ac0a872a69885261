"""Beyond the sheet, notebooks/beyond_the_sheet.ipynb: Problem 3.5 (b)'s labelled choice;
Problem 4.5, the KV cache's size, the key-value projections' parameters, what a generated token reads; Problem 4.7 (b),
where attention's n² starts to matter; Problem 5.4, the learned model's previous-token and induction heads; declared once.

The notebook's problems that moved from the levels (3.4, 3.5, 4.4: a function, constructions) and the functions of
4.6 and 4.7 keep their own checks (:mod:`autograders.checks.beyond`, :mod:`autograders.checks.today`), which name the
misconceptions declared here, in their problems' sections. 3.5 (b) and 5.4 have no per-student numbers
(:data:`autograders.variants.levels.FIXED`)."""

import functools
import itertools

import numpy as np

from ..student.feedback import WrongAnswer, unanswered
from . import shared
from .declare import HIDDEN_PASSED, NO_NUMBERS, Answer, Coincidence, Mistake, Numbers, choice, mismatch
from .misconception import Misconception, named, tag_of

ASSIGNMENT = "beyond_the_sheet"

# --- Problems 3.4 and 3.5 (a): functions, whose checks (autograders.checks.beyond) name these --------------------

RANK_IS_N = Misconception("rank-is-n", "the scores' rank taken as n (the d_k bottleneck forgotten)")
RANK_IGNORES_N = Misconception("rank-ignores-n", "the scores' rank taken as d_k even when n is smaller")
OUTPUT_NOT_PERMUTED = Misconception("output-not-permuted", "equivariance tested without permuting the output")
PERMUTATION_INVERTED = Misconception("permutation-inverted", "the output permuted with the inverse permutation")
EXACT_FLOAT_EQUALITY = Misconception("exact-float-equality", "floats compared exactly instead of within a tolerance")
CAUSAL_EQUIVARIANT = Misconception("causal-equivariant", "a causal mask taken to keep permutation equivariance")


# --- Problem 3.5 (b): why a Transformer needs positions (its test is 3.5's, autograders.checks.beyond) -------

PERMUTATION_MIXES_TOKENS = Misconception(
    "permutation-mixes-tokens", "permuting the tokens taken to mix them",
    option=r"mixes their rows",
)
POSITIONS_MAKE_HEADS_DIFFER = Misconception(
    "positions-make-heads-differ", "positions taken to make the heads differ",
    option=r"make the heads differ",
)
POSITIONS_FOR_RANK = Misconception("positions-for-rank", "positions taken to lift the rank bottleneck",
                                   option=r"full rank")

WHY_POSITIONS = choice("q3_5_why_positions", "B", {
    "A": (PERMUTATION_MIXES_TOKENS, "A is the belief that permuting the tokens mixes them: it only reorders the "
          "output's rows, each token keeping its own output. Nothing is lost; the trouble is that nothing changes."),
    "C": (POSITIONS_FOR_RANK, "C confuses positions with the rank bottleneck: the rank bound comes from Q_i and "
          "K_i being n × d_k, and adding position vectors to X does not change d_k."),
    "D": (POSITIONS_MAKE_HEADS_DIFFER, "D confuses positions with projections: heads differ because each has its "
          "own W_i^Q, W_i^K, W_i^V (Problem 3.3), with or without positions."),
}, right="Without positions self-attention sees a set: word order changes nothing but the order of the outputs.",
    hidden_right=HIDDEN_PASSED, hidden_says="`why_positions` is not the reason positions are needed.")


# --- Problem 4.4: heads built by hand (constructions, whose checks, autograders.checks.beyond, name these) ------

ATTENDS_TO_ITSELF = Misconception("attends-to-itself", "a previous-token head that attends to the token itself")
ATTENDS_TO_FIRST = Misconception("attends-to-first", "a previous-token head that attends to the first token")
MATCHES_HIDDEN_KEY = Misconception(
    "matches-hidden-key", "a head whose queries match keys the causal mask hides (the shift the wrong way)"
)
TOO_FLAT = Misconception("too-flat", "the right pattern, too flat (scores not scaled up)")
WORDS_NOT_POSITIONS = Misconception("words-not-positions", "a pattern of positions built from the words")
QUERY_FROM_VALUES = Misconception("query-from-values", "a query built from the values, not the keys")
ONE_KEY_ONLY = Misconception("one-key-only", "a query that picks one key instead of two")


# --- Problem 4.5: the bytes a decoder keeps for its keys and values ------------------------------------

SHEET_4_5 = {"n_layers": 32, "n_ctx": 8192, "n_heads": 32, "n_kv_heads": 8, "d_head": 128, "bytes_per_value": 2}
MODEL_4_5 = Numbers("q4_5", sheet=SHEET_4_5, entries=tuple(
    e for e in ({"n_layers": L, "n_ctx": n, "n_heads": h, "n_kv_heads": g, "d_head": d, "bytes_per_value": b}
                for L, n, (h, g), d, b in itertools.product((24, 32, 48), (3000, 6000, 12000), ((32, 8), (32, 4), (64, 8)),
                                                             (64, 128), (2, 1)))
    if e != SHEET_4_5),
    valid=lambda e: None if e["n_heads"] % e["n_kv_heads"] == 0 and e["n_heads"] > e["n_kv_heads"] else
    "n_kv_heads should divide n_heads and be smaller (grouped-query attention)",
    derive=lambda e: {"d_model": e.n_heads * e.d_head})


def _dtype(n):
    """The numpy type of a cached number of ``n.bytes_per_value`` bytes."""
    return {1: np.int8, 2: np.float16, 4: np.float32}[n.bytes_per_value]


def _cached(n):
    """An independent count: numpy's size in bytes of one layer's K and V caches, times the layers."""
    one = np.empty((n.n_ctx, n.n_kv_heads * n.d_head), dtype=_dtype(n))  # not written to: nothing is filled
    return n.n_layers * 2 * one.nbytes


def _cache_bytes(n):
    return 2 * n.n_layers * n.n_ctx * n.n_kv_heads * n.d_head * n.bytes_per_value


KV_COUNTED_ONCE = Misconception("kv-counted-once", "the KV cache counted for the keys or the values only")
GQA_IGNORED = Misconception("gqa-ignored", "a KV cache for every query head (grouped-query attention ignored)")
BYTES_FORGOTTEN = Misconception("bytes-forgotten",
                                "numbers counted where bytes are asked (bytes per number forgotten)")
BITS_FOR_BYTES = Misconception("bits-for-bytes", "bits counted where bytes are asked")
# Two mistakes whose answers coincide at some numbers (Coincidence): the message, and the report, name both causes,
# since the answer cannot tell them apart.
KV_HALF = Misconception("kv-half", "half the KV cache: the keys or the values only, or numbers not bytes (one answer "
                        "at 2 bytes)")
KV_EIGHTFOLD = Misconception(
    "kv-eightfold", "8 times the KV cache: every query head cached, or bits not bytes (one answer at 8 query heads "
    "a key-value head)"
)

_ONE_CACHE = ("a layer keeps the keys *and* the values of every past token, two tensors of n_ctx × n_kv_heads × "
              "d_head numbers")
KV_CACHE_BYTES = Answer(
    "q4_5_kv_cache_bytes", "number", numbers=MODEL_4_5, tolerance=0.5, sheet_mistake=True, hidden=_cached, prefix="",
    trials=("the size of the cached arrays themselves",),
    answer=_cache_bytes,
    mistakes=(
        Mistake(KV_COUNTED_ONCE, lambda n: _cache_bytes(n) // 2,
                f"That counts one cache per layer: {_ONE_CACHE}: multiply by 2."),
        Mistake(GQA_IGNORED, lambda n: _cache_bytes(n) * n.n_heads // n.n_kv_heads,
                lambda n: f"That caches keys and values for all n_heads = {n.n_heads} query heads. With grouped-query "
                          f"attention they share n_kv_heads = {n.n_kv_heads} key-value heads, and only those are "
                          "cached."),
        Mistake(BYTES_FORGOTTEN, lambda n: _cache_bytes(n) // n.bytes_per_value,
                when=lambda n: n.bytes_per_value != 1,
                says=lambda n: f"That counts the cached numbers, not their bytes: each number takes "
                               f"{n.bytes_per_value} bytes: multiply by {n.bytes_per_value}."),
        Mistake(BITS_FOR_BYTES, lambda n: 8 * _cache_bytes(n),
                "That counts bits: a byte is 8 bits, and bytes are asked: divide by 8."),
    ),
    coinciding=(
        Coincidence((KV_COUNTED_ONCE, BYTES_FORGOTTEN), KV_HALF,
                    f"That is half the cache, which two slips give with numbers of 2 bytes: counting one cache per "
                    f"layer ({_ONE_CACHE}), or counting the cached numbers, not their bytes (each takes 2 bytes). "
                    "Either way, multiply by 2."),
        Coincidence((GQA_IGNORED, BITS_FOR_BYTES), KV_EIGHTFOLD,
                    lambda n: f"That is 8 times the cache, which two slips give when n_heads = {n.n_heads} is 8 times "
                              f"n_kv_heads = {n.n_kv_heads}: caching keys and values for every query head (with "
                              "grouped-query attention they share the n_kv_heads key-value heads, and only those are "
                              "cached), or counting bits, not bytes (a byte is 8 bits). Either way, divide by 8."),
    ),
    fallback=lambda n: f"`kv_cache_bytes` is {n.value:,.0f}: count the numbers one layer caches (keys and values, n_ctx "
                       "tokens, n_kv_heads heads of d_head numbers), then multiply by the layers and the bytes per "
                       "number.",
    right=lambda n: f"2 · {n.n_layers} · {n.n_ctx} · {n.n_kv_heads} · {n.d_head} · {n.bytes_per_value} = "
                    f"{_cache_bytes(n):,} bytes.",
    hidden_right="It matches the size of the cached arrays themselves.",
)


# 4.5 (b) and (c): what grouped-query attention saves in parameters, and what one generated token's attention reads
# from the cache for each multiply-add. The layer's width is d_model = n_heads · d_head (MODEL_4_5.derive).


def _projection_sizes(n):
    """An independent count: the sizes of one layer's W_K and W_V as numpy arrays (never filled)."""
    return sum(np.empty((n.d_model, n.n_kv_heads * n.d_head), dtype=np.int8).size for _ in ("W_K", "W_V"))


def _decode_step(n):
    """An independent count of one generated token's attention in one layer: the multiply-adds of the n_heads
    queries' scores and weighted sums over the cache, over the bytes of the cache they read."""
    q = np.empty((n.n_heads, n.d_head), dtype=_dtype(n))  # one token's queries, every head
    K = V = np.empty((n.n_ctx, n.n_kv_heads, n.d_head), dtype=_dtype(n))  # the cache, shared by n_heads / n_kv_heads
    scores = q.size * n.n_ctx  # each head's query against every cached key: d_head products per key
    weighted = n.n_heads * n.n_ctx * V.shape[-1]  # each head's weights times every cached value
    return (scores + weighted) / (K.nbytes + V.nbytes)


KV_PARAMS = Answer(
    "q4_5_kv_params", "int", numbers=MODEL_4_5, hidden=_projection_sizes,  # no sheet_mistake: powers of two collide
    trials=("the sizes of the matrices themselves",),
    answer=lambda n: 2 * n.d_model * n.n_kv_heads * n.d_head,
    mistakes=(
        Mistake(GQA_IGNORED, lambda n: 2 * n.d_model * n.n_heads * n.d_head,
                lambda n: f"That gives every one of the n_heads = {n.n_heads} query heads its own keys and values "
                          f"(2 d_model², ordinary multi-head attention). W_K and W_V project to the "
                          f"n_kv_heads = {n.n_kv_heads} shared key-value heads only: d_model × n_kv_heads · d_head each."),
        Mistake(KV_COUNTED_ONCE, lambda n: n.d_model * n.n_kv_heads * n.d_head,
                "That counts one matrix: the layer has W_K and W_V, both d_model × n_kv_heads · d_head."),
    ),
    fallback=lambda n: f"`kv_params` is {n.value:,}: W_K and W_V each map d_model = {n.d_model} numbers to the "
                       "n_kv_heads key-value heads of d_head numbers.",
    right=lambda n: f"2 · {n.d_model} · {n.n_kv_heads} · {n.d_head} = {2 * n.d_model * n.n_kv_heads * n.d_head:,}: "
                    "W_K and W_V each map d_model numbers to the shared key-value heads only.",
    hidden_right="It matches the sizes of the matrices themselves.",
)


def _macs_per_byte(n):
    return n.n_heads / (n.n_kv_heads * n.bytes_per_value)


def _kv_heads_shared(n):
    return (f"the n_heads = {n.n_heads} query heads share n_kv_heads = {n.n_kv_heads} key-value heads: each cached "
            f"number read serves {n.n_heads // n.n_kv_heads} query heads")


SCORES_ALONE = Misconception("scores-alone", "one token's multiply-adds counted for its scores alone (the "
                             "weighted sum forgotten)")
MACS_DOUBLED = Misconception(
    "macs-doubled", "twice the multiply-adds per byte: 2 FLOPs a multiply-add, the keys' bytes alone, or at 2 bytes "
    "a number per number (one answer)"
)
MACS_GQA_OR_UPSIDE_DOWN = Misconception(
    "macs-gqa-or-upside-down", "multiply-adds per byte with a cache per query head, or upside down (one answer)"
)
MACS_SCORES_OR_SHEET = Misconception(
    "macs-scores-or-sheet", "multiply-adds per byte of the scores alone, or the sheet's answer (one answer)"
)

_TWO_FLOPS = "counting 2 FLOPs (a multiply and an add) per multiply-add"
_KEYS_ALONE = "counting the bytes of the keys alone (the weighted sum reads the cached values too, as many bytes again)"
_SCORES_ALONE = ("counting the multiply-adds of the scores alone (the weighted sum of the cached values costs as many "
                 "again, n_ctx · d_head per head)")
MACS_PER_BYTE = Answer(
    "q4_5_macs_per_byte", "number", numbers=MODEL_4_5, tolerance=0.005, sheet_mistake=True, hidden=_decode_step,
    trials=("one decoding step's arrays",),
    answer=_macs_per_byte,
    mistakes=(
        Mistake(GQA_IGNORED, lambda n: 1 / n.bytes_per_value,
                lambda n: f"That reads a key and a value per query head. The n_heads = {n.n_heads} query heads share "
                          f"n_kv_heads = {n.n_kv_heads} key-value heads: each cached number read serves "
                          f"{n.n_heads // n.n_kv_heads} query heads."),
        Mistake(BYTES_FORGOTTEN, lambda n: n.n_heads / n.n_kv_heads, when=lambda n: n.bytes_per_value != 1,
                says=lambda n: f"That is multiply-adds per cached number: each number takes {n.bytes_per_value} "
                               "bytes, and bytes are asked."),
        Mistake(shared.TWO_FLOPS, lambda n: 2 * _macs_per_byte(n),
                "That counts 2 FLOPs (a multiply and an add) per multiply-add: multiply-adds are asked, one each."),
        Mistake(KV_COUNTED_ONCE, lambda n: 2 * _macs_per_byte(n),
                "That counts the bytes of the keys alone: each head's weighted sum reads the cached values too, as "
                "many bytes again."),
        Mistake(SCORES_ALONE, lambda n: _macs_per_byte(n) / 2,
                "That counts the multiply-adds of the scores alone: the weighted sum of the cached values costs as "
                "many again (n_ctx · d_head per head)."),
        Mistake("-/upside-down", lambda n: 1 / _macs_per_byte(n), "Upside down: that is bytes per multiply-add."),
    ),
    coinciding=(
        Coincidence((BYTES_FORGOTTEN, shared.TWO_FLOPS, KV_COUNTED_ONCE), MACS_DOUBLED + "/per-number",
                    f"That is twice the answer, which three slips give with numbers of 2 bytes: {_TWO_FLOPS}, "
                    f"{_KEYS_ALONE}, or counting per cached number, not per byte (each number takes 2 bytes). "
                    "Whichever it was, halve it."),
        Coincidence((shared.TWO_FLOPS, KV_COUNTED_ONCE), MACS_DOUBLED,
                    f"That is twice the answer, which two slips give: {_TWO_FLOPS} (multiply-adds are asked, one "
                    f"each), or {_KEYS_ALONE}. Either way, halve it."),
        Coincidence((GQA_IGNORED, "-/upside-down"), MACS_GQA_OR_UPSIDE_DOWN,
                    lambda n: f"Two slips give that with your numbers: reading a key and a value per query head "
                              f"({_kv_heads_shared(n)}), or the ratio upside down (bytes per multiply-add)."),
        Coincidence((SCORES_ALONE, shared.EXAMPLE_NUMBERS_ONLY), MACS_SCORES_OR_SHEET,
                    f"Two slips give that with your numbers: the answer for the sheet's numbers, not for yours (use "
                    f"the numbers in the cell under the problem), or {_SCORES_ALONE}."),
    ),
    fallback=lambda n: f"`macs_per_byte` is {n.value:g}: count the multiply-adds of the {n.n_heads} query heads' "
                       "scores and weighted sums over the n_ctx cached tokens, and the bytes of the K and V caches "
                       "they read, then divide.",
    right=lambda n: f"2 · {n.n_heads} · n_ctx · {n.d_head} multiply-adds over 2 · n_ctx · {n.n_kv_heads} · {n.d_head} "
                    f"· {n.bytes_per_value} bytes = {_macs_per_byte(n):g}, whatever n_ctx.",
    hidden_right="It matches a count of one decoding step's arrays.",
)
DECODE_COMPUTE_BOUND = Misconception(
    "decode-compute-bound", "decoding taken to be limited by multiply-adds, not by memory",
    option=r"multiply-adds: attention's cost",
)
MEMORY_FREE = Misconception("memory-free", "reading the GPU's memory taken to cost nothing",
                            option=r"reading it is free")
SOFTMAX_BOTTLENECK = Misconception(
    "softmax-bottleneck", "the softmax's exponentials taken for the cost of attention",
    option=r"exponentials cost more",
)
DECODE_LIMIT = choice("q4_5_decode_limit", "B", {
    "A": (DECODE_COMPUTE_BOUND, "A is the belief that the multiply-adds limit decoding. One new query costs 2 · n_ctx "
          "· d_head multiply-adds per head (n_ctx · d_head for its scores, as many for its weighted sum), linear in n_ctx, and each byte read feeds only macs_per_byte of them: far "
          "fewer than the ~78 the GPU could do while it reads that byte. The GPU waits on memory."),
    "C": (MEMORY_FREE, "C takes memory to be free: the cache is in the GPU's memory, but every generated token "
          "reads all of it again, at about 2 · 10^12 bytes a second, and that is slower than the arithmetic."),
    "D": (SOFTMAX_BOTTLENECK, "D blames the softmax: one token's attention takes n_heads · n_ctx exponentials, "
          "2 · d_head times fewer than its 2 · n_heads · n_ctx · d_head multiply-adds (256 times fewer at d_head = "
          "128); both wait on the cache being read."),
}, right="Generating one token reads the whole cache for a few multiply-adds per byte: decoding is limited by memory "
         "traffic, which is why shrinking the cache (grouped-query attention, 8-bit numbers) speeds it up.",
    hidden_right=HIDDEN_PASSED, hidden_says="`decode_limit` is not what limits decoding.")


# --- Problem 4.6: a key-padding mask and the causal mask (a function, whose check, autograders.checks.today, ------
# names these)

MASK_AFTER_SOFTMAX = Misconception(
    "mask-after-softmax", "a mask applied after the softmax (weights zeroed, not renormalised)"
)
MASK_AFTER_SOFTMAX_RENORMALISED = Misconception(
    "mask-after-softmax-renormalised", "a mask applied after the softmax, then renormalised (what the masked keys' "
    "maximum leaves underflows)"
)
MASK_FILL_ZERO = Misconception("mask-fill-zero", "masked scores set to 0 instead of -inf")
FULLY_MASKED_NAN = Misconception("fully-masked-nan", "a row whose keys are all masked left as NaN (0/0)")
FULLY_MASKED_UNIFORM = Misconception(
    "fully-masked-uniform", "a row whose keys are all masked left uniform (a finite fill)"
)
PADDING_MASKS_QUERIES = Misconception(
    "padding-masks-queries", "the padding mask applied to the queries instead of the keys"
)
PADDING_OFF_BY_ONE = Misconception("padding-off-by-one", "the padding mask one key off (j <= valid length)")
PADDING_ONE_LENGTH = Misconception("padding-one-length", "one valid length used for every sequence of the batch")
PADDING_IGNORED = Misconception("padding-ignored", "the padding mask left out")
MASKS_COMBINED_WITH_OR = Misconception(
    "masks-combined-with-or", "the padding and causal masks combined with or, not and"
)
FLOAT32 = Misconception("float32", "computed in float32 (single precision), not float64")
MUTATES_INPUT = Misconception("mutates-input", "the function writes into the arrays it is given")


# --- Problem 4.7 (a): attention one block of keys at a time (a function, whose check, autograders.checks.today,
# names these)

ONLINE_SOFTMAX_NO_RESCALE = Misconception(
    "online-softmax-no-rescale", "a running sum not rescaled when the running maximum changes"
)
LAST_BLOCK_DROPPED = Misconception("last-block-dropped", "the last, partial block of keys left out")
ALL_SCORES_AT_ONCE = Misconception("all-scores-at-once", "all the scores held at once, not one block at a time")
ONLINE_MAX_FROM_ZERO = Misconception(
    "online-max-from-zero", "a running maximum started at 0 (not -inf): NaN when every score is very negative"
)
ONLINE_MAX_STILL_INF = Misconception(
    "online-max-still-inf", "a block of -inf scores shifted by a maximum still -inf (-inf - (-inf) = NaN)"
)


# --- Problem 4.7 (b): where attention's n² starts to matter -----------------------------------------------
# Multiply-adds of one self-attention pass (mha_core.flop_count): the projections X W_Q, X W_K, X W_V and
# Concat W_O cost 4 n d_model², linear in n; the scores Q_i K_i^T and the weighted sums weights_i V_i cost
# 2 n² d_model over all heads, quadratic. Their ratio is 2 d_model / n: about a hundred at n = 10 for
# d_model = 512, and 1 at n = 2 d_model.

SHEET_4_7 = {"d_model": 512, "h": 8, "n_short": 10}
COST_4_7 = Numbers("q4_7", sheet=SHEET_4_7, entries=tuple(
    e for e in ({"d_model": d, "h": h, "n_short": n}
                for d, h, n in itertools.product((384, 640, 768, 1536), (4, 8, 16), (8, 16, 20, 32)))
    if e["d_model"] != 512),
    valid=lambda e: None if e["d_model"] % e["h"] == 0 and e["h"] >= 4 else "h should divide d_model and be at least 4")


def _flop_ratio(n, size):
    """Projections over the n² stages at length ``size``, from mha_core's own stage-by-stage count."""
    from mha_core import flop_count

    stages = flop_count(n.d_model, n.h, size)
    return (stages["projections"] + stages["output_projection"]) / (stages["scores"] + stages["weighted_sum"])


def _ratio(n):
    return 2 * n.d_model / n.n_short


def _rounded(value, n):
    """True when ``value`` is a whole number within 1 of the ratio (rounded, up, or down)."""
    return value == int(value) and abs(value - _ratio(n)) < 1


N2_HALF_COUNTED = Misconception(
    "n2-half-counted", "the n² cost counted for the scores alone (the weighted sum forgotten)"
)
PROJECTIONS_PER_HEAD = Misconception("projections-per-head", "the projections counted at one head's width d_k")
HEADS_WIDTH_EITHER = Misconception(  # a coincidence of the two before it
    "heads-width-either", "h times too small: the heads' n² stages at the full width, or the projections at one "
    "head's width (one answer)"
)

_HEADS_AT_FULL_WIDTH = ("counting h heads of the full width d_model in the n² stages (each head has width d_k = "
                        "d_model / h, so the h heads together cost what one head of width d_model would)")
_PROJECTIONS_PER_HEAD = ("counting the projections at one head's width d_k (X W_Q, X W_K, X W_V and Concat W_O each "
                         "take all the heads at once, n × d_model by d_model × d_model)")
_N2_WHAT = ("the projections (X W_Q, X W_K, X W_V and Concat W_O: 4 n d_model² multiply-adds) against the n² stages "
            "(the scores Q_i K_i^T and the weighted sums, h heads each: 2 n² d_model)")
PROJECTIONS_OVER_SCORES = Answer(
    "q4_7_projections_over_scores", "number", numbers=COST_4_7, tolerance=0.05, sheet_mistake=True,
    trials=("mha_core's own stage counts",),
    answer=_ratio,
    hidden=lambda n: _flop_ratio(n, n.n_short), hidden_right="It matches the ratio of mha_core's own stage counts.",
    mistakes=(
        Mistake(N2_HALF_COUNTED, lambda n: 4 * n.d_model / n.n_short,
                "That counts the scores Q_i K_i^T alone: the weighted sums weights_i V_i cost as much again (n² d_k "
                "per head), and they grow with n² too."),
        Mistake(shared.FORGOT_W_O, lambda n: 1.5 * n.d_model / n.n_short,
                "That leaves out W^O: the output projection Concat W_O is one more n × d_model by d_model × d_model "
                "product, as costly as each of X W_Q, X W_K, X W_V."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: 2 * n.d_model * n.h / n.n_short,
                "That counts the n² stages of one head: there are h of them, each of width d_k = d_model / h, "
                "2 n² d_model together."),
        Mistake(shared.HEADS_COST_MORE, lambda n: 2 * n.d_model / (n.n_short * n.h),
                "That counts h heads of the full width d_model: each head has width d_k = d_model / h, so the h heads "
                "together cost what one head of width d_model would."),
        Mistake("-/upside-down", lambda n: n.n_short / (2 * n.d_model),
                "Upside down: that is the n² stages over the projections."),
        Mistake(PROJECTIONS_PER_HEAD, lambda n: 2 * n.d_model / (n.n_short * n.h),
                "That counts the projections at one head's width d_k: X W_Q, X W_K, X W_V and Concat W_O each take "
                "all the heads at once, n × d_model by d_model × d_model (4 n d_model² together)."),
        Mistake("-/rounded", lambda n: round(_ratio(n)), matches=_rounded,
                when=lambda n: abs(round(_ratio(n)) - _ratio(n)) > 0.1,  # twice the tolerance: not the right answer
                says="That is the ratio rounded to a whole number: the count is right, give it to 1 decimal."),
    ),
    coinciding=(
        Coincidence((shared.HEADS_COST_MORE, PROJECTIONS_PER_HEAD), HEADS_WIDTH_EITHER,
                    f"That is h times too small, which two slips give: {_HEADS_AT_FULL_WIDTH}, or "
                    f"{_PROJECTIONS_PER_HEAD}."),
    ),
    fallback=lambda n: f"`projections_over_scores` is {n.value:g}: count {_N2_WHAT}, at n = {n.n_short}, and divide.",
    right=lambda n: f"4 n d_model² / (2 n² d_model) = 2 d_model / n = 2 · {n.d_model} / {n.n_short} = "
                    f"{_ratio(n):g}: at this length the projections cost far more than the scores.",
)
EVEN_N = Answer(
    "q4_7_even_n", "int", numbers=COST_4_7, sheet_mistake=True,
    answer=lambda n: 2 * n.d_model,
    hidden=lambda n: round(_flop_ratio(n, 1)), hidden_right="It matches the length where mha_core's counts are even.",
    mistakes=(
        Mistake(N2_HALF_COUNTED, lambda n: 4 * n.d_model,
                "That counts the scores Q_i K_i^T alone: the weighted sums cost as much again, so the n² stages catch "
                "up twice as early."),
        Mistake(shared.FORGOT_W_O, lambda n: 3 * n.d_model // 2,
                "That leaves out W^O: the output projection is a fourth n × d_model by d_model × d_model product."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: 2 * n.d_model * n.h,
                "That counts the n² stages of one head: the h heads together cost 2 n² d_model."),
        Mistake(shared.HEADS_COST_MORE, lambda n: 2 * n.d_model // n.h,
                "That counts h heads of the full width d_model: each head has width d_k = d_model / h."),
        Mistake("-/d-model", lambda n: n.d_model,
                "That is d_model: 4 n d_model² = 2 n² d_model holds at twice that."),
        Mistake(PROJECTIONS_PER_HEAD, lambda n: 2 * n.d_model // n.h,
                "That counts the projections at one head's width d_k: X W_Q, X W_K, X W_V and Concat W_O each take "
                "all the heads at once, 4 n d_model² together."),
    ),
    coinciding=(
        Coincidence((shared.HEADS_COST_MORE, PROJECTIONS_PER_HEAD), HEADS_WIDTH_EITHER,
                    f"That is a length h times too short, which two slips give: {_HEADS_AT_FULL_WIDTH}, or "
                    f"{_PROJECTIONS_PER_HEAD}."),
    ),
    fallback=lambda n: f"`even_n` is {n.value}: find the n where {_N2_WHAT} are equal.",
    right=lambda n: f"4 n d_model² = 2 n² d_model at n = 2 d_model = {2 * n.d_model}: only longer inputs make the n² "
                    "stages the larger cost.",
)



# --- Problem 5.4: which heads of the learned model (mha_core.learned's shipped weights) do what ---------------

ROLE_SEQUENCES = 400  # the evaluation sequences the roles are read from (enough: the heads are clear-cut)
HEADS_SWAPPED = Misconception("heads-swapped", "the previous-token and induction heads swapped")
HEAD_PATTERN_MISREAD = Misconception("head-pattern-misread", "a learned head's pattern misread")


@functools.cache
def _model():
    from mha_core import learned

    return learned.load()


def patterns(model, tokens, independent=False):
    """Each layer's attention weights, (batch, h, n, n), on ``tokens``: from mha_core's run of the model, or with
    ``independent``, from the training code's own forward pass."""
    if not independent:
        return model.run(tokens)[1]
    from mha_core.learned.train import attention_forward

    x = model.E[tokens] + model.P[: tokens.shape[1]]
    found = []
    for weights in model.layers:
        out, cache = attention_forward(x, weights, model.h)
        found.append(cache[4])  # the weights A: (batch, h, n, n)
        x = x + out
    return found


def head_scores(model, data, independent=False):
    """``{head: (previous-token score, induction score)}`` from one run over ``data`` (an evaluation set): the
    mean weight a head puts on position i - 1 (over positions i > 0), and the mean weight its last query puts
    on B's position j + 1, the token after A's first occurrence. Problem 5.4's answer: kept here, with its
    declaration, not in the library the student imports."""
    tokens, _, j = data
    weights = patterns(model, tokens, independent)
    rows = np.arange(1, tokens.shape[1])
    return {(layer, head): (float(weights[layer - 1][:, head - 1][:, rows, rows - 1].mean()),
                            float(weights[layer - 1][:, head - 1][np.arange(len(j)), -1, j + 1].mean()))
            for layer, head in model.heads}


def roles(model, independent=False):
    """``(previous-token head, induction head)`` of ``model``: the head that puts most weight on position
    i - 1, and the last-layer head whose last query puts most weight on the token after α (the repeated letter). With
    ``independent``, the patterns come from the training code's own forward pass, not from mha_core."""
    from mha_core.learned import evaluation_set

    scores = head_scores(model, evaluation_set(size=ROLE_SEQUENCES), independent)
    last_layer = [hd for hd in model.heads if hd[0] == len(model.layers)]
    return max(model.heads, key=lambda hd: scores[hd][0]), max(last_layer, key=lambda hd: scores[hd][1])


@functools.cache
def _roles(independent=False):
    """The shipped model's roles, read once per process (the weights never change)."""
    return roles(_model(), independent)


def _as_head(name):
    """The conversion of 5.4's answers: a pair (layer, head) of the model, each counted from 1."""
    def convert(value, n):
        unanswered(name, value)
        try:
            layer, head = (int(v) if float(v) == int(v) else None for v in value)
        except (TypeError, ValueError):
            layer = head = None
        if layer is None or head is None or isinstance(value, str):
            raise WrongAnswer(f"`{name}` should be a whole number pair (layer, head), each counted from 1, got "
                              f"{type(value).__name__} {value!r:.60}.", misconception=shared.WRONG_KIND)
        heads = _model().heads
        if (layer, head) not in heads:
            counted_from_0 = (layer + 1, head + 1) in heads
            message = (named(shared.COUNTED_FROM_0, "Layers and heads are counted from 1 here: (1, 1) is the first head "
                             "of the first layer.") if counted_from_0 else "")
            raise WrongAnswer(f"`{name}` = {(layer, head)} is not a head of the model, which has heads {heads}. "
                              f"{message}".rstrip(), misconception=tag_of(message) or shared.WRONG_KIND)
        return layer, head
    return convert


def _head(id, role, mistakes, fallback, right):
    """Which head of the learned model plays ``role`` (0: previous-token, 1: induction); the hidden test reads the
    patterns from the training code's own forward pass."""
    name = id.split("_", 2)[2]
    return Answer(id, "head", lambda n: _roles()[role], NO_NUMBERS, tolerance=0, prefix="", convert=_as_head(name),
                  mistakes=mistakes, fallback=fallback, fallback_tag=HEAD_PATTERN_MISREAD, right=right,
                  hidden=lambda n: _roles(independent=True)[role], hidden_right=HIDDEN_PASSED,
                  hidden_says=mismatch(name), trials=("the training code's own forward pass",))


PREVIOUS_TOKEN_HEAD = _head(
    "q5_4_previous_token_head", 0, (
        Mistake(HEADS_SWAPPED, lambda n: _roles()[1], "That is the induction head: its last row looks at the token "
                "after α's first occurrence (α: the letter that comes again). The previous-token head's rows each look "
                "one position back."),
    ), lambda n: f"Head {n.value}'s rows do not look one position back: find the head whose pattern is the diagonal "
                 "just below the main one (in rows 2 to 6, where the task can put the answer).",
    "Its pattern is the diagonal just below the main one: each token looks at the one before.")

INDUCTION_HEAD = _head(
    "q5_4_induction_head", 1, (
        Mistake(HEADS_SWAPPED, lambda n: _roles()[0], "That is the previous-token head: it looks one position back "
                "from every token. The induction head's last row looks at the token after α's first occurrence."),
        Mistake(HEAD_PATTERN_MISREAD + "/layer", lambda n: next(hd for hd in _model().heads if hd[0] == 1
                                                                      and hd not in _roles()),
                lambda n: f"Head {n.value} is in layer {n.value[0]}: an induction head needs what a previous-token head "
                          "wrote before it, so it sits in a later layer.",
                matches=lambda value, n: value[0] != len(_model().layers)),
    ), lambda n: f"Head {n.value}'s last row does not look at the token after α's first occurrence: compare the last "
                 "row of each second-layer head with the sequence.",
    "Its last query looks at the token that followed α (the repeated letter) the first time, and copies it.")

ANSWERS = (WHY_POSITIONS, KV_CACHE_BYTES, KV_PARAMS, MACS_PER_BYTE, DECODE_LIMIT, PROJECTIONS_OVER_SCORES, EVEN_N,
           PREVIOUS_TOKEN_HEAD, INDUCTION_HEAD)
