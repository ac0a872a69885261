"""autograders: the checks behind the workbook's tests, and the instructor tooling around nbgrader.

- ``autograders.checks``: the checks the notebooks' tests call, and their feedback (``checks.feedback``);
- ``autograders.editions``: building the practice edition and the graded release;
- ``autograders.grading``: intake, grading jobs, gradebooks, the report and the feedback pages,
  with the isolation of students' code (``grading.sandbox``, ``grading.recheck``).
"""

from .checks.feedback import WrongAnswer

__all__ = ["WrongAnswer"]
