"""Data the exercise sheet gives that the students' side computes from too: Problem 4.2's vectors (its
declaration, :mod:`autograders.problems.level4`, takes them from here; a prediction moment draws them)."""

SHEET_4_2 = {"query": (1.0, 0.0), "keys": ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (2.0, 0.0)),
             "values": ((1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, 4.0))}
