"""One notation (the exercise sheet's) in every level: the same notation box at the top of each level
notebook, and no cell that gives Q another meaning than the block's input."""

import re

import pytest

from tests.conftest import ids, level_notebooks, read

LEVELS = level_notebooks()
TAG = "notation"


def notation_cells(path):
    return [(i, c) for i, c in enumerate(read(path).cells) if TAG in c.metadata.get("tags", [])]


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_each_level_opens_with_the_notation_box(path):
    cells = notation_cells(path)
    assert len(cells) == 1, f"{path.stem}: {len(cells)} notation cells"
    index, cell = cells[0]
    first_code = next(i for i, c in enumerate(read(path).cells) if c.cell_type == "code")
    assert cell.cell_type == "markdown" and index < first_code, f"{path.stem}: the box is not at the top"
    for symbol in ("d_{\\text{model}}", "d_k = d_v", "Q_i = Q W_i^Q", "X W^Q", "W^O", "`X @ W`", "**rows**"):
        assert symbol in cell.source, f"{path.stem}: the box does not name {symbol}"


def test_the_box_is_the_same_everywhere():
    boxes = {path.stem: notation_cells(path)[0][1].source for path in LEVELS}
    assert len(set(boxes.values())) == 1, sorted(boxes)


# Q (capital, alone) set to a projection of X: "Q = X W^Q", "$Q = X W^Q$", "Q = X @ W_Q"; the sheet's Q is the
# block's input and Q_i = Q W_i^Q one head's queries.
Q_AS_PROJECTION = re.compile(r"(?<![\w^_{])Q\s*=\s*\$?\s*X\s*(?:@\s*)?W(?:\^\{?Q|_Q)")


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_q_is_never_the_projection_of_x(path):
    found = [(i, m.group(0)) for i, c in enumerate(read(path).cells) for m in Q_AS_PROJECTION.finditer(c.source)]
    assert not found, f"{path.stem}: {found}"


def test_the_old_notation_is_found():
    assert Q_AS_PROJECTION.search("1. $Q = X W^Q$, $K = X W^K$")
    assert Q_AS_PROJECTION.search("Q = X @ W_Q (K, V alike)")
    assert not Q_AS_PROJECTION.search("$Q_i = X W_i^Q$") and not Q_AS_PROJECTION.search("Q_i = Q W_i^Q")
