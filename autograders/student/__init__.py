"""What runs where students run code: their JupyterLab and, when their work is graded, their kernel.

It holds no right answer, no hidden test, no solution and no check that can tell a right answer from a
wrong one (``tests/test_student_side.py`` reads every file and imports every module alone): the
graded kernel is shown this package and ``mha_core`` only, and a hosted class's students get them
alone (``mha-workbook student-wheel``). It imports nothing of ``autograders`` outside itself.

- ``tracebacks``: a failed check shown as its message (``short_tracebacks``, the setup cell's);
- ``forms``: the graded edition's visible tests, which check an answer's form only;
- ``numbers``: which numbers a student's problems use (the sheet's, or their own), and the locked cell
  that shows them;
- ``moments``, ``sentences``, ``by_hand``: the workbook's content the notebooks import (the
  prediction moments, the sentences figures are drawn over, Problem 4.4's data);
- ``serve``, ``protocol``, ``output_cap``, ``shape_errors``, ``settings``: the kernel's side of grading
  (the answers handed over after the last cell, as data; the output cap; a shape error named).
"""
