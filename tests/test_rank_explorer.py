"""The rank explorer (beyond the sheet, Problem 3.4): its state at every value the sliders reach, and its view."""

import numpy as np
import pytest

from mha_core.explore import rank


def test_the_state_counts_min_n_d_k_singular_values_at_every_reachable_value():
    for n in range(2, rank.MAX_N + 1):
        for d_k in range(1, rank.MAX_D_K + 1):
            state = rank.rank_state(n, d_k)
            values = state["singular_values"]
            assert values.shape == (n,) and (np.diff(values) <= 1e-12).all()  # descending
            # independently: numpy's own rank of the same scores
            assert state["rank"] == min(n, d_k) == np.linalg.matrix_rank(rank.score_matrix(n, d_k))
            assert f"<b>{min(n, d_k)}</b>" in state["readout"] and f"{n} × {n}" in state["readout"]
            assert (f"the other {n - d_k} are zero" in state["readout"]) == (d_k < n)


def test_the_view_follows_its_sliders_and_refuses_what_they_cannot_reach():
    explorer = rank.rank_explorer(n=12, d_k=2)
    assert explorer.state["rank"] == 2
    explorer.controls["d_k"].value = 20
    assert explorer.state["rank"] == 12 and "12 bars stand high" in explorer.state["alt"]
    explorer.controls["n"].value = 5
    assert explorer.state["rank"] == 5
    with pytest.raises(ValueError, match="n must be at most"):
        rank.rank_explorer(n=40)
    with pytest.raises(ValueError, match="d_k"):
        rank.rank_explorer(d_k=0)
