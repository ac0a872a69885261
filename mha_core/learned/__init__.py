"""Learned heads: a tiny attention-only model trained on an induction task ("after A B ... A, predict B").

:mod:`.task` makes the sequences, :mod:`.model` runs the shipped weights through
:func:`mha_core.multi_head_attention` (and ablates heads), :mod:`.train` reproduces the weights.
The notebooks only load the weights (:func:`load`); they never train. Which head does what is Problem
5.4's question: its measures are the grader's (:mod:`autograders.checks.beyond`), not here.
"""

from .model import TinyModel, head_titles, load, patterns
from .task import LETTERS, N, VOCAB, evaluation_set, induction_batch, spelled

__all__ = ["LETTERS", "N", "TinyModel", "VOCAB", "evaluation_set", "induction_batch", "load", "head_titles",
           "patterns", "spelled"]
