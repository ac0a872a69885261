"""The misconceptions a check can name: a tag (what a :class:`~autograders.checks.feedback.WrongAnswer`
carries) and the name the class report shows for it.

A check that recognises a wrong answer raises ``WrongAnswer(message, misconception="transposed")``
(or takes the message from :func:`~autograders.checks.feedback.named`); the notebook's error output
carries the tag (:func:`~autograders.checks.feedback.error_value`), and the report counts tags, never
phrases of the message. A tag not in :data:`NAMES` is refused where it is raised.
"""

# tag: the name the report shows. In the order the report lists them when counts tie.
NAMES = {
    "no-answer": "no answer yet",
    "wrong-kind": "answer of the wrong kind (type or shape)",
    "multiplied-by-h": "multiplied by h instead of dividing",
    "roles-swapped": "split h by d_model (roles swapped)",
    "head-full-width": "a head keeps the full width d_model",
    "transposed": "transposed shape",
    "one-head-for-all": "one head confused with all heads",
    "matrix-confused": "a matrix confused with another (weights, scores, projections)",
    "qt-k": "Q_i^T K_i instead of Q_i K_i^T",
    "heads-summed": "heads summed or stacked instead of concatenated",
    "scaled-by-d-k": "scaled by d_k instead of √d_k",
    "no-scaling": "no scaling by √d_k",
    "scaled-with-d-model": "scaled with d_model instead of d_k",
    "multiplied-by-sqrt-d-k": "multiplied by √d_k instead of dividing",
    "scaling-as-softmax": "scaling confused with softmax's job",
    "scale-is-h": "the scale taken for the number of heads",
    "softmax-linear": "softmax as a linear normalisation",
    "softmax-not-normalised": "softmax not normalised",
    "softmax-overflows": "softmax that overflows",
    "softmax-flipped-signs": "softmax with flipped signs",
    "weights-as-percentages": "weights as percentages",
    "counted-from-0": "token numbers counted from 0",
    "softmax-reorders": "softmax reorders the scores",
    "ratio-misread": "ratio of weights misread",
    "causal-mask-applied": "causal mask applied wrongly",
    "forgot-softmax": "forgot the softmax",
    "sum-of-keys": "weighted sum of the keys, not the values",
    "forgot-w-o": "forgot W^O",
    "counted-biases": "counted biases",
    "two-flops": "2 FLOPs per multiply-add (multiply-adds asked)",
    "example-numbers-only": "a formula of the example's numbers only",
    "heads-cost-more": "more heads cost more",
    "heads-free": "more heads are free or always better",
    "narrow-heads-uniform": "one-number heads taken to attend uniformly",
    "heads-split-tokens": "heads taken to split the tokens, not the width",
    "softmax-sets-width": "softmax taken to set the output's width",
    "beyond-the-values": "the output taken to leave the range of the values",
    "sharing-breaks-shapes": "shared projections taken to break the shapes",
    "cross-attention-square": "cross-attention is square (output follows the keys)",
    "creates-information": "attention creates new information",
    "weights-never-matter": "the weights never matter",
    "shared-projections-differ": "shared projections give different heads",
    "symptom-for-cause": "a symptom taken for the cause",
    "split-without-transpose": "heads split without the transpose (tokens and heads mixed)",
    "softmax-wrong-axis": "softmax over the wrong axis",
    "mask-wrong-way": "causal mask the wrong way round or after the softmax",
    "rows-not-columns": "per-head slices from rows instead of columns",
    "batch-dimension": "a leading batch dimension not handled",
    "no-keepdims": "a sum or maximum without keepdims (broadcast over the wrong axis)",
    "transposed-all-axes": ".T on a 3-D array (every axis reversed, not the last two)",
    "x-w-transposed": "X @ W.T instead of X @ W (the transpose of the sheet's convention)",
    "shape-error": "a shape error inside the student's function",
    "not-own-work": "the library called instead of written with numpy",
    "raised": "the student's function raised an error",
}

TAG_LINE = "[misconception: {}]"  # the first line of a tagged error's value (not shown to the student)
