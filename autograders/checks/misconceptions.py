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
    "not-own-work": "the library called instead of written with numpy",
    "raised": "the student's function raised an error",
    # beyond the sheet (autograders.checks.beyond)
    "attends-to-itself": "a previous-token head that attends to the token itself",
    "attends-to-first": "a previous-token head that attends to the first token",
    "too-flat": "the right pattern, too flat (scores not scaled up)",
    "words-not-positions": "a pattern of positions built from the words",
    "query-from-values": "a query built from the values, not the keys",
    "one-key-only": "a query that picks one key instead of two",
    "rank-is-n": "the scores' rank taken as n (the d_k bottleneck forgotten)",
    "rank-ignores-n": "the scores' rank taken as d_k even when n is smaller",
    "output-not-permuted": "equivariance tested without permuting the output",
    "permutation-inverted": "the output permuted with the inverse permutation",
    "exact-float-equality": "floats compared exactly instead of within a tolerance",
    "causal-equivariant": "a causal mask taken to keep permutation equivariance",
    "permutation-mixes-tokens": "permuting the tokens taken to mix them",
    "positions-make-heads-differ": "positions taken to make the heads differ",
    "positions-for-rank": "positions taken to lift the rank bottleneck",
    "heads-swapped": "the previous-token and induction heads swapped",
    "head-pattern-misread": "a learned head's pattern misread",
}

TAG_LINE = "[misconception: {}]"  # the first line of a tagged error's value (not shown to the student)
