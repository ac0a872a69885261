"""autograders: the checks behind the workbook's tests, and the instructor tooling around nbgrader.

- ``autograders.student``: what students' Python gets (their Lab, their graded kernel): no answer, no
  check that can tell a right answer from a wrong one; nothing else of this package is installed there;
- ``autograders.checks``: the checks the notebooks' tests call, and their feedback (``checks.feedback``);
- ``autograders.editions``: building the practice edition and the graded release;
- ``autograders.grading``: intake, grading jobs, gradebooks, the report and the feedback pages,
  with the isolation of students' code (``grading.sandbox``, ``grading.recheck``).
"""

from .student.feedback import WrongAnswer

__all__ = ["WrongAnswer"]
