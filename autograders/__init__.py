"""autograders: the checks behind the workbook's tests, and the instructor tooling around nbgrader."""

from .feedback import WrongAnswer

__all__ = ["WrongAnswer"]
