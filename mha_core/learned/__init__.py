"""Learned heads: a tiny attention-only model trained on an induction task ("after A B ... A, predict B").

:mod:`.task` makes the sequences, :mod:`.model` runs the shipped weights through
:func:`mha_core.multi_head_attention` (and ablates heads), :mod:`.train` reproduces the weights.
The notebooks only load the weights (:func:`load`); they never train.
"""

from .model import TinyModel, head_scores, head_titles, induction_score, load, patterns, previous_token_score
from .task import LETTERS, N, VOCAB, evaluation_set, induction_batch, spelled

__all__ = ["LETTERS", "N", "TinyModel", "VOCAB", "evaluation_set", "induction_batch", "induction_score", "load",
           "head_scores", "head_titles", "patterns", "previous_token_score", "spelled"]
