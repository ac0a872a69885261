"""The hints between nothing and the solution: two per problem students stall on, asked for, never the answer.

Each hint cell is a markdown cell just before the answer it helps with, holding two collapsed
``<details>`` blocks: first the idea, then the first step. A hint never contains a line of the
problem's solution code, a number the solution works out, or the formula the answer is.
"""

import re

import pytest

from .test_notebooks import NOTEBOOKS, read

# hint cell id -> (notebook, the graded cell it precedes, what the answer is, in words a hint must avoid)
HINTS = {
    "q2_3_hints": ("level2_application", "q2_3_softmax", ["np.max(scores)", "scores - ", "exps / exps.sum()"]),
    "q3_3_hints": ("level3_analysis", "q3_3_explain", ["W_a^O + W_b^O", "h - 1", "98{,}304", "7 distinct"]),
    "q3_4_hints": ("beyond_the_sheet", "q3_4_max_rank", ["min(n, d_k)", "\\min(n, d_k)"]),
    "q4_2_hints": ("level4_synthesis", "q4_2_scaled_scores", ["keys @ q", "@ values", "0.7071", "0.2212"]),
    "q4_3_hints": ("level4_synthesis", "q4_3_multi_head_attention", ["swapaxes", "np.tri", "keepdims"]),
    "q4_4_hints": ("beyond_the_sheet", "q4_4_previous_token", ["e_{i+1}", "+ 1] =", "20.0"]),
    "q5_1_hints": ("level5_mastery", "q5_1_explain", ["largest $k_j$", "smallest $k_j$", "prefers the key"]),
    "q4_5_hints": ("beyond_the_sheet", "q4_5_kv_cache_bytes", ["2 *", "1,073,741,824", "2^{30}", "1 GiB", "2 \\cdot"]),
    "q4_5_macs_hints": ("beyond_the_sheet", "q4_5_macs_per_byte", ["n_heads / (n_kv_heads", "= 2 multiply-adds",
                                                                  "32 / (8", "\\cdot 2} = 2"]),
    "q4_6_hints": ("beyond_the_sheet", "q4_6_masked_softmax", ["-np.inf", "np.tri", "np.divide", "where=total",
                                                              "& np.tri", "[:, None, None, :]"]),
    "q4_7_hints": ("beyond_the_sheet", "q4_7_attention_in_blocks", ["np.exp(m - m_new)", "e^{m - m'}", "rescale",
                                                                   "* rescale", "total * "]),
}
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
DECIMAL = re.compile(r"\d+\.\d{2,}")


def _notebook(name):
    return read(next(path for path in NOTEBOOKS if path.stem == name))


def _problem(grade_id):
    return "_".join(grade_id.split("_")[:2])  # q4_2_scaled_scores -> q4_2


@pytest.mark.parametrize("hint_id", sorted(HINTS))
def test_two_hints_just_before_the_answer(hint_id):
    name, before, _ = HINTS[hint_id]
    cells = _notebook(name).cells
    at = next(i for i, cell in enumerate(cells) if cell.get("id") == hint_id)
    assert cells[at].cell_type == "markdown"
    assert cells[at + 1].metadata.get("nbgrader", {}).get("grade_id") == before
    summaries = re.findall(r"<details><summary>(.*?)</summary>", cells[at].source)
    assert summaries == ["Hint 1: the idea", "Hint 2: the first step"]
    assert "nbgrader" not in cells[at].metadata  # not graded, and in every edition


@pytest.mark.parametrize("hint_id", sorted(HINTS))
def test_a_hint_never_holds_the_answer(hint_id):
    name, before, answer_words = HINTS[hint_id]
    cells = _notebook(name).cells
    hint = next(cell.source for cell in cells if cell.get("id") == hint_id)
    problem = _problem(before)
    solution = "\n".join(
        "\n".join(SOLUTION.findall(cell.source)) + (cell.source if cell.source.startswith("**Solution") else "")
        for cell in cells
        if _problem(cell.metadata.get("nbgrader", {}).get("grade_id", "x_x")) == problem
        or cell.source.startswith(f"**Solution {problem[1:].replace('_', '.')}")
    )
    code_lines = {line.split("#")[0].strip() for line in solution.splitlines()}
    leaked = [line for line in code_lines if len(line) >= 12 and line in hint]
    leaked += [number for number in set(DECIMAL.findall(solution)) if number in hint]
    leaked += [words for words in answer_words if words in hint]
    assert solution, f"no solution found for {problem}"
    assert not leaked, f"{hint_id} gives away: {leaked}"
