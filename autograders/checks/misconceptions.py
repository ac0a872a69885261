"""The misconceptions a check can name: a tag (what a :class:`~autograders.checks.feedback.WrongAnswer`
carries) and the name the class report shows for it.

A check that recognises a wrong answer raises ``WrongAnswer(message, misconception="transposed")``
(or takes the message from :func:`~autograders.checks.feedback.named`); the notebook's error output
carries the tag (:func:`~autograders.checks.feedback.error_value`), and the report counts tags, never
phrases of the message. A tag not in :data:`NAMES` is refused where it is raised.
"""

from ..student import feedback as _feedback, tags as _student

# tag: the name the report shows. In the order the report lists them when counts tie.
NAMES = {}
# tag: words (a regular expression) that a labelled choice's option must hold to carry this tag: a tag
# attached to the wrong option fails tests/test_choices.py.
OPTION_WORDS = {}


def _tag(tag, name, option=None):
    """Declare the misconception ``tag``, named ``name`` in the report, ``option`` the words of an option
    showing it (for a tag a labelled choice uses); return the tag."""
    NAMES[tag] = name
    if option is not None:
        OPTION_WORDS[tag] = option
    return tag


NO_ANSWER = _tag(_student.NO_ANSWER, "no answer yet")
WRONG_KIND = _tag(_student.WRONG_KIND, "answer of the wrong kind (type or shape)")
MULTIPLIED_BY_H = _tag("multiplied-by-h", "multiplied by h instead of dividing")
ROLES_SWAPPED = _tag("roles-swapped", "split h by d_model (roles swapped)")
HEAD_FULL_WIDTH = _tag(
    "head-full-width", "a head keeps the full width d_model",
    option=r"full width|512 \\times 64|width 64",
)
TRANSPOSED = _tag("transposed", "transposed shape")
ONE_HEAD_FOR_ALL = _tag("one-head-for-all", "one head confused with all heads", option=r"only \$1/h\$")
MATRIX_CONFUSED = _tag("matrix-confused", "a matrix confused with another (weights, scores, projections)")
QT_K = _tag("qt-k", "Q_i^T K_i instead of Q_i K_i^T")
HEADS_SUMMED = _tag(
    _student.HEADS_SUMMED, "heads summed or stacked instead of concatenated",
    option=r"added together|summed",
)
SCALED_BY_D_K = _tag("scaled-by-d-k", "scaled by d_k instead of √d_k", option=r"dividing by \$d_k\$")
NO_SCALING = _tag("no-scaling", "no scaling by √d_k")
SCALED_WITH_D_MODEL = _tag("scaled-with-d-model", "scaled with d_model instead of d_k")
MULTIPLIED_BY_SQRT_D_K = _tag("multiplied-by-sqrt-d-k", "multiplied by √d_k instead of dividing")
SCALING_AS_SOFTMAX = _tag("scaling-as-softmax", "scaling confused with softmax's job", option=r"sum to 1")
SCALED_TWICE = _tag("scaled-twice", "scores already scaled divided by √d_k again")
SCALE_IS_H = _tag("scale-is-h", "the scale taken for the number of heads", option=r"number of heads")
SOFTMAX_LINEAR = _tag("softmax-linear", "softmax as a linear normalisation")
SOFTMAX_NOT_NORMALISED = _tag("softmax-not-normalised", "softmax not normalised")
SOFTMAX_OVERFLOWS = _tag("softmax-overflows", "softmax that overflows")
SOFTMAX_SHIFT_NOT_MAX = _tag(
    "softmax-shift-not-max", "softmax shifted by a score other than the largest (overflows for scores far apart)"
)
SOFTMAX_FLIPPED_SIGNS = _tag("softmax-flipped-signs", "softmax with flipped signs")
WEIGHTS_AS_PERCENTAGES = _tag("weights-as-percentages", "weights as percentages")
COUNTED_FROM_0 = _tag("counted-from-0", "token numbers counted from 0")
SOFTMAX_REORDERS = _tag("softmax-reorders", "softmax reorders the scores")
RATIO_MISREAD = _tag("ratio-misread", "ratio of weights misread")
CAUSAL_MASK_APPLIED = _tag("causal-mask-applied", "causal mask applied wrongly")
FORGOT_SOFTMAX = _tag("forgot-softmax", "forgot the softmax")
SUM_OF_KEYS = _tag("sum-of-keys", "weighted sum of the keys, not the values")
FORGOT_W_O = _tag("forgot-w-o", "forgot W^O")
W_O_PER_HEAD = _tag("w-o-per-head", "W^O applied to each head apart (not to the heads side by side)")
COUNTED_BIASES = _tag("counted-biases", "counted biases")
TWO_FLOPS = _tag("two-flops", "2 FLOPs per multiply-add (multiply-adds asked)")
EXAMPLE_NUMBERS_ONLY = _tag("example-numbers-only", "a formula of the example's numbers only")
HEADS_COST_MORE = _tag(
    "heads-cost-more", "more heads cost more",
    option=r"\$h\$ times the single-head work|\$W\^O\$ grow with \$h,?\$",
)
HEADS_FREE = _tag("heads-free", "more heads are free or always better", option=r"Nothing is lost")
NARROW_HEADS_UNIFORM = _tag("narrow-heads-uniform", "one-number heads taken to attend uniformly", option=r"uniform")
HEADS_SPLIT_TOKENS = _tag(
    "heads-split-tokens", "heads taken to split the tokens, not the width",
    option=r"slice of the encoder's tokens",
)
SOFTMAX_SETS_WIDTH = _tag(
    "softmax-sets-width", "softmax taken to set the output's width",
    option=r"[Ss]oftmax normalises.*width",
)
BEYOND_THE_VALUES = _tag(
    "beyond-the-values", "the output taken to leave the range of the values",
    option=r"beyond the values",
)
SHARING_BREAKS_SHAPES = _tag(
    "sharing-breaks-shapes", "shared projections taken to break the shapes",
    option=r"shape no longer fits",
)
CROSS_ATTENTION_SQUARE = _tag(
    "cross-attention-square", "cross-attention is square (output follows the keys)",
    option=r"square again|one row per key",
)
CREATES_INFORMATION = _tag(
    "creates-information", "attention creates new information",
    option=r"weights alone|number of heads",
)
WEIGHTS_NEVER_MATTER = _tag("weights-never-matter", "the weights never matter")
SHARED_PROJECTIONS_DIFFER = _tag(
    "shared-projections-differ", "shared projections give different heads",
    option=r"still differ|average out",
)
SYMPTOM_FOR_CAUSE = _tag("symptom-for-cause", "a symptom taken for the cause", option=r"W\^O \\in")
SPLIT_WITHOUT_TRANSPOSE = _tag(
    "split-without-transpose", "heads split without the transpose (tokens and heads mixed)"
)
SOFTMAX_WRONG_AXIS = _tag("softmax-wrong-axis", "softmax over the wrong axis")
SOFTMAX_SUM_ALL = _tag("softmax-sum-all", "softmax divided by the sum of every entry (a sum with no axis)")
MAX_SUM_AXES_DIFFER = _tag("max-sum-axes-differ", "the softmax's maximum and sum taken over different axes")
HEADS_AXES_SWAPPED = _tag("heads-axes-swapped", "the wrong axes swapped when splitting or merging the heads")
MASK_WRONG_WAY = _tag("mask-wrong-way", "causal mask the wrong way round or after the softmax")
ROWS_NOT_COLUMNS = _tag("rows-not-columns", "per-head slices from rows instead of columns")
BATCH_DIMENSION = _tag("batch-dimension", "a leading batch dimension not handled")
NO_KEEPDIMS = _tag(_student.NO_KEEPDIMS, "a sum or maximum without keepdims (broadcast over the wrong axis)")
TRANSPOSED_ALL_AXES = _tag(_student.TRANSPOSED_ALL_AXES, ".T on a 3-D array (every axis reversed, not the last two)")
X_W_TRANSPOSED = _tag("x-w-transposed", "X @ W.T instead of X @ W (the transpose of the sheet's convention)")
SHAPE_ERROR = _tag(_student.SHAPE_ERROR, "a shape error inside the student's function")
NOT_OWN_WORK = _tag("not-own-work", "the library called instead of written with numpy")
RAISED = _tag("raised", "the student's function raised an error")
# beyond the sheet (autograders.checks.beyond)
ATTENDS_TO_ITSELF = _tag("attends-to-itself", "a previous-token head that attends to the token itself")
ATTENDS_TO_FIRST = _tag("attends-to-first", "a previous-token head that attends to the first token")
MATCHES_HIDDEN_KEY = _tag(
    "matches-hidden-key", "a head whose queries match keys the causal mask hides (the shift the wrong way)"
)
TOO_FLAT = _tag("too-flat", "the right pattern, too flat (scores not scaled up)")
WORDS_NOT_POSITIONS = _tag("words-not-positions", "a pattern of positions built from the words")
QUERY_FROM_VALUES = _tag("query-from-values", "a query built from the values, not the keys")
ONE_KEY_ONLY = _tag("one-key-only", "a query that picks one key instead of two")
RANK_IS_N = _tag("rank-is-n", "the scores' rank taken as n (the d_k bottleneck forgotten)")
RANK_IGNORES_N = _tag("rank-ignores-n", "the scores' rank taken as d_k even when n is smaller")
OUTPUT_NOT_PERMUTED = _tag("output-not-permuted", "equivariance tested without permuting the output")
PERMUTATION_INVERTED = _tag("permutation-inverted", "the output permuted with the inverse permutation")
EXACT_FLOAT_EQUALITY = _tag("exact-float-equality", "floats compared exactly instead of within a tolerance")
CAUSAL_EQUIVARIANT = _tag("causal-equivariant", "a causal mask taken to keep permutation equivariance")
PERMUTATION_MIXES_TOKENS = _tag(
    "permutation-mixes-tokens", "permuting the tokens taken to mix them",
    option=r"mixes their rows",
)
POSITIONS_MAKE_HEADS_DIFFER = _tag(
    "positions-make-heads-differ", "positions taken to make the heads differ",
    option=r"make the heads differ",
)
POSITIONS_FOR_RANK = _tag("positions-for-rank", "positions taken to lift the rank bottleneck", option=r"full rank")
HEADS_SWAPPED = _tag("heads-swapped", "the previous-token and induction heads swapped")
HEAD_PATTERN_MISREAD = _tag("head-pattern-misread", "a learned head's pattern misread")
KV_COUNTED_ONCE = _tag("kv-counted-once", "the KV cache counted for the keys or the values only")
GQA_IGNORED = _tag("gqa-ignored", "a KV cache for every query head (grouped-query attention ignored)")
BYTES_FORGOTTEN = _tag("bytes-forgotten", "numbers counted where bytes are asked (bytes per number forgotten)")
BITS_FOR_BYTES = _tag("bits-for-bytes", "bits counted where bytes are asked")
SCORES_ALONE = _tag("scores-alone", "one token's multiply-adds counted for its scores alone (the weighted sum forgotten)")
# Two mistakes whose answers coincide at some numbers (autograders.problems.declare.Coincidence): the message, and
# the report, name both causes, since the answer cannot tell them apart.
KV_HALF = _tag("kv-half", "half the KV cache: the keys or the values only, or numbers not bytes (one answer at 2 bytes)")
KV_EIGHTFOLD = _tag(
    "kv-eightfold", "8 times the KV cache: every query head cached, or bits not bytes (one answer at 8 query heads "
    "a key-value head)"
)
MACS_DOUBLED = _tag(
    "macs-doubled", "twice the multiply-adds per byte: 2 FLOPs a multiply-add, the keys' bytes alone, or at 2 bytes "
    "a number per number (one answer)"
)
MACS_GQA_OR_UPSIDE_DOWN = _tag(
    "macs-gqa-or-upside-down", "multiply-adds per byte with a cache per query head, or upside down (one answer)"
)
MACS_SCORES_OR_SHEET = _tag(
    "macs-scores-or-sheet", "multiply-adds per byte of the scores alone, or the sheet's answer (one answer)"
)
DECODE_COMPUTE_BOUND = _tag(
    "decode-compute-bound", "decoding taken to be limited by multiply-adds, not by memory",
    option=r"multiply-adds: attention's cost",
)
MEMORY_FREE = _tag("memory-free", "reading the GPU's memory taken to cost nothing", option=r"reading it is free")
SOFTMAX_BOTTLENECK = _tag(
    "softmax-bottleneck", "the softmax's exponentials taken for the cost of attention",
    option=r"exponentials cost more",
)
# problems of today's models (autograders.checks.today)
MASK_AFTER_SOFTMAX = _tag(
    "mask-after-softmax", "a mask applied after the softmax (weights zeroed, not renormalised)"
)
MASK_FILL_ZERO = _tag("mask-fill-zero", "masked scores set to 0 instead of -inf")
FULLY_MASKED_NAN = _tag("fully-masked-nan", "a row whose keys are all masked left as NaN (0/0)")
FULLY_MASKED_UNIFORM = _tag(
    "fully-masked-uniform", "a row whose keys are all masked left uniform (a finite fill)"
)
PADDING_MASKS_QUERIES = _tag(
    "padding-masks-queries", "the padding mask applied to the queries instead of the keys"
)
PADDING_OFF_BY_ONE = _tag("padding-off-by-one", "the padding mask one key off (j <= valid length)")
PADDING_ONE_LENGTH = _tag("padding-one-length", "one valid length used for every sequence of the batch")
PADDING_IGNORED = _tag("padding-ignored", "the padding mask left out")
MASKS_COMBINED_WITH_OR = _tag(
    "masks-combined-with-or", "the padding and causal masks combined with or, not and"
)
ONLINE_SOFTMAX_NO_RESCALE = _tag(
    "online-softmax-no-rescale", "a running sum not rescaled when the running maximum changes"
)
LAST_BLOCK_DROPPED = _tag("last-block-dropped", "the last, partial block of keys left out")
ALL_SCORES_AT_ONCE = _tag("all-scores-at-once", "all the scores held at once, not one block at a time")
ONLINE_MAX_FROM_ZERO = _tag(
    "online-max-from-zero", "a running maximum started at 0 (not -inf): NaN when every score is very negative"
)
ONLINE_MAX_STILL_INF = _tag(
    "online-max-still-inf", "a block of -inf scores shifted by a maximum still -inf (-inf - (-inf) = NaN)"
)
MUTATES_INPUT = _tag("mutates-input", "the function writes into the arrays it is given")
N2_HALF_COUNTED = _tag(
    "n2-half-counted", "the n² cost counted for the scores alone (the weighted sum forgotten)"
)
PROJECTIONS_PER_HEAD = _tag("projections-per-head", "the projections counted at one head's width d_k")
HEADS_WIDTH_EITHER = _tag(
    "heads-width-either", "h times too small: the heads' n² stages at the full width, or the projections at one "
    "head's width (one answer)"
)
MASK_AFTER_SOFTMAX_RENORMALISED = _tag(
    "mask-after-softmax-renormalised", "a mask applied after the softmax, then renormalised (what the masked keys' "
    "maximum leaves underflows)"
)
FLOAT32 = _tag("float32", "computed in float32 (single precision), not float64")

TAG_LINE = _student.TAG_LINE

_feedback.KNOWN_TAGS = NAMES  # a tag not declared here is refused where it is raised
