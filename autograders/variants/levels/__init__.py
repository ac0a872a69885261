"""The pools of the levels' varied problems (from their declarations, :mod:`autograders.problems`), and
the problems that keep the sheet's numbers.

:data:`POOLS` is ``{assignment: {answer grade_id: Pool}}``. A pool's ``problem`` names the numbers
(``q2_3``): the answers of one problem (2.3's weights, winner and ratio) have one pool each, with the
same entries and the same problem, so a student gets one set of numbers per problem. Each pool's
entries come from a small rule over a few lists (sizes that divide, scores in the sheet's order),
enumerated in a fixed order and never holding the sheet's own numbers (the practice edition's
worked solution would give those away); ``tests/test_problems.py`` vets every entry.
"""

from ...problems import LEVELS
from ...problems.engine import pool

# Problems whose point needs their exact numbers, or that have no numbers: they stay fixed.
FIXED = {
    "q1_1_head_dim": "a function: its tests already try many sizes",
    "q1_2_why": "a labelled choice",
    "q2_2_why": "a labelled choice whose option D is about the sheet's coincidence √64 = 8 = h",
    "q2_3_softmax": "a function: its tests already try many scores, large ones included",
    "q3_1_attention_cost": "a function: its hidden tests already try many sizes, h = 1 and h = d_model included",
    "q3_1_explain": "the written answer's worked counts (d_model = 512, n = 10: 102,400) are the rubric's",
    "q3_2_wrong_step": "a labelled choice about the sheet's broken forward pass, whose steps quote its numbers",
    "q3_2_explain": "the written answer is about the sheet's broken pass",
    "q3_3_shared_outcome": "a labelled choice",
    "q3_3_count_distinct_heads": "a function: its tests already try blocks of several sizes",
    "q3_4_max_rank": "a function: its tests already try many n and d_k",
    "q3_5_permutation_test": "a function: its tests already try several functions, inputs and permutations",
    "q3_5_why_positions": "a labelled choice",
    "q4_1_parameter_count": "a function: its hidden tests already try many sizes, h = 1 and h = d_model included",
    "q4_3_multi_head_attention": "a function written with numpy: its tests already try many random blocks",
    "q4_4_previous_token": "a construction (W_Q, W_K) over the sheet's one-hot embeddings, tried on several sentences",
    "q4_4_average_query": "a construction with many right answers (any large enough query pointing at k_2 + k_4): "
                          "an answer copied would not be told from one's own, and its keys and values are 4.4 (a)'s",
    "q5_1_d_k_limit": "the limit h = d_model gives d_k = 1 whatever d_model is, and 5.1 takes the paper's "
                      "d_model = 512 throughout: its choices weigh 512 heads of width 1 against the paper's 8 of 64",
    "q5_1_sweet_spot_heads": "the paper's configuration (d_model = 512, d_k = 64: 8 heads), which (c)'s choices and "
                             "(d)'s written limit quote; another d_model would give the student two in one problem",
    "q5_1_refutation": "a labelled choice whose options quote d_model = 512 (512 heads of width 1, 8 of width 64)",
    "q5_1_explain": "the written answer's limit is 5.1's d_model = 512",
    "q5_4_previous_token_head": "the learned model's heads: one trained model (mha_core/learned) for everybody",
    "q5_4_induction_head": "the learned model's heads: one trained model (mha_core/learned) for everybody",
}


POOLS = {assignment: {answer.id: pool(answer) for answer in module.ANSWERS if answer.numbers.entries}
         for assignment, module in LEVELS.items()}
POOLS = {assignment: pools for assignment, pools in POOLS.items() if pools}


def problems(assignment):
    """{problem: its first pool} of ``assignment`` (one set of numbers per problem)."""
    found = {}
    for pool in POOLS.get(assignment, {}).values():
        found.setdefault(pool.problem, pool)
    return found
