"""The misconceptions several problems name (or every check can: a blank answer, an answer of the wrong kind,
a function that raised or calls the library), declared once; each problem's own are declared in its module.

Those the students' side raises itself keep its tags (:mod:`autograders.student.tags`) and get their report
names here."""

from ..student import tags as _student
from .misconception import Misconception

# --- what any check can say --------------------------------------------------------------------------------
NO_ANSWER = Misconception(_student.NO_ANSWER, "no answer yet")
WRONG_KIND = Misconception(_student.WRONG_KIND, "answer of the wrong kind (type or shape)")
SHAPE_ERROR = Misconception(_student.SHAPE_ERROR, "a shape error inside the student's function")
NOT_OWN_WORK = Misconception("not-own-work", "the library called instead of written with numpy")
RAISED = Misconception("raised", "the student's function raised an error")
EXAMPLE_NUMBERS_ONLY = Misconception("example-numbers-only", "a formula of the example's numbers only")

# --- the heads and their widths (Levels 1 to 5, Beyond the sheet) ------------------------------------------
MULTIPLIED_BY_H = Misconception("multiplied-by-h", "multiplied by h instead of dividing")
HEAD_FULL_WIDTH = Misconception(
    "head-full-width", "a head keeps the full width d_model",
    option=r"full width|512 \\times 64|width 64",
)
ONE_HEAD_FOR_ALL = Misconception("one-head-for-all", "one head confused with all heads", option=r"only \$1/h\$")
HEADS_SUMMED = Misconception(
    _student.HEADS_SUMMED, "heads summed or stacked instead of concatenated",
    option=r"added together|summed",
)
HEADS_COST_MORE = Misconception(
    "heads-cost-more", "more heads cost more",
    option=r"\$h\$ times the single-head work|\$W\^O\$ grow with \$h,?\$",
)
HEADS_FREE = Misconception("heads-free", "more heads are free or always better", option=r"Nothing is lost")
FORGOT_W_O = Misconception("forgot-w-o", "forgot W^O")
TWO_FLOPS = Misconception("two-flops", "2 FLOPs per multiply-add (multiply-adds asked)")

# --- shapes and matrices -----------------------------------------------------------------------------------
TRANSPOSED = Misconception("transposed", "transposed shape")
MATRIX_CONFUSED = Misconception("matrix-confused", "a matrix confused with another (weights, scores, projections)")
NO_KEEPDIMS = Misconception(_student.NO_KEEPDIMS, "a sum or maximum without keepdims (broadcast over the wrong axis)")
TRANSPOSED_ALL_AXES = Misconception(
    _student.TRANSPOSED_ALL_AXES, ".T on a 3-D array (every axis reversed, not the last two)"
)

# --- scaling, softmax and masks ----------------------------------------------------------------------------
SCALED_BY_D_K = Misconception("scaled-by-d-k", "scaled by d_k instead of √d_k", option=r"dividing by \$d_k\$")
NO_SCALING = Misconception("no-scaling", "no scaling by √d_k")
SCALED_WITH_D_MODEL = Misconception("scaled-with-d-model", "scaled with d_model instead of d_k")
MULTIPLIED_BY_SQRT_D_K = Misconception("multiplied-by-sqrt-d-k", "multiplied by √d_k instead of dividing")
FORGOT_SOFTMAX = Misconception("forgot-softmax", "forgot the softmax")
SOFTMAX_OVERFLOWS = Misconception("softmax-overflows", "softmax that overflows")
COUNTED_FROM_0 = Misconception("counted-from-0", "token numbers counted from 0")
RATIO_MISREAD = Misconception("ratio-misread", "ratio of weights misread")
CAUSAL_MASK_APPLIED = Misconception("causal-mask-applied", "causal mask applied wrongly")
MASK_WRONG_WAY = Misconception("mask-wrong-way", "causal mask the wrong way round or after the softmax")
