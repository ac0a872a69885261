"""The class report, the last step of a submission's path (after :mod:`autograders.grading`): a class's
results, from the gradebook and the autograded notebooks, as ``grades.csv`` and ``report.html`` (score
distribution per level, success rate per problem, how often each named misconception occurred, the item
analysis, the class's predictions, the copying list, the submissions that could not be graded).

- :mod:`.results`: the results read (:func:`read_results`), each failed test with its misconception tag;
- :mod:`.analysis`: what the report computes and draws from them: the names it shows, the item analysis
  (per graded cell, the share of graded submissions with full, partial and no points, its most frequent
  misconception tags, how often each option of a labelled choice was chosen), the predictions (per
  "predict first" cell, how many students predicted right), the figures;
- :mod:`.copying`: answers right for another student's numbers and wrong for one's own;
- :mod:`.write`: the two files (:func:`build`).

    python -m autograders report --course course --out course/reports
"""

from .analysis import MISCONCEPTIONS, OTHER, UNCONFIRMED, item_analysis, misconception_name, plot_items, prediction_summary, problem_label
from .results import Results, add_answers, add_failed_tests, late_by, read_results, tag_of_outputs, verdict_of_cell
from .write import build, write_csv, write_report

__all__ = ["MISCONCEPTIONS", "OTHER", "UNCONFIRMED", "Results", "add_answers", "add_failed_tests", "build", "item_analysis",
           "late_by", "misconception_name", "plot_items", "prediction_summary", "problem_label", "read_results",
           "tag_of_outputs", "verdict_of_cell", "write_csv", "write_report"]
