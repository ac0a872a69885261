"""Every graded answer of the workbook, declared once: a module per level (its numbers, pool of
per-student variants, right answers, accepted forms, misconceptions and hidden cases), judged by
:mod:`.engine`. How to change or add a problem: docs/adding-a-problem.md."""
