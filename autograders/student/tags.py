"""The misconception tags the students' side raises itself (a blank answer, a shape error in their
function); the report's names for them are the grader's (:mod:`autograders.problems.shared`), as is every
other tag (declared where a problem's mistakes use it)."""

NO_ANSWER = "no-answer"
WRONG_KIND = "wrong-kind"
HEADS_SUMMED = "heads-summed"
NO_KEEPDIMS = "no-keepdims"
TRANSPOSED_ALL_AXES = "transposed-all-axes"
SHAPE_ERROR = "shape-error"

TAG_LINE = "[misconception: {}]"  # the first line of a tagged error's value (not shown to the student)
