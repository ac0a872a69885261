"""Submissions into the course, the first step of their path (then :mod:`autograders.grading`):
a folder in nbgrader's ``submitted/`` layout (:mod:`.folder`), or the files an LMS exports, each
zip checked before its notebooks are filed (:mod:`.zips`)."""

from .folder import pairs, take_submissions
from .zips import Intake, Refused, collect_zips

__all__ = ["Intake", "Refused", "collect_zips", "pairs", "take_submissions"]
