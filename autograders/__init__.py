"""autograders: the checks behind the workbook's tests, and the instructor tooling around nbgrader.

- ``autograders.student``: what students' Python gets (their Lab, their graded kernel): no answer, no
  check that can tell a right answer from a wrong one; nothing else of this package is installed there;
- ``autograders.checks``: the checks the notebooks' tests call, and their feedback (``checks.feedback``);
- ``autograders.editions``: building the practice edition and the graded release;
- ``autograders.intake``: submissions into the course (a ``submitted/`` folder, an LMS's zips);
- ``autograders.grading``: grading jobs, the isolation of students' code (``grading.sandbox``), the checks
  outside it (``grading.checker``), gradebooks and the feedback pages;
- ``autograders.report``: the class report (``grades.csv``, ``report.html``).
"""

from .student.feedback import WrongAnswer

__all__ = ["WrongAnswer"]
