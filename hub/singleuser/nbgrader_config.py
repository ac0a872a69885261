"""nbgrader in a hosted class's JupyterLab, a student's or the instructor's (the hub puts
this file in their Jupyter configuration; the Kubernetes image in /etc/jupyter/):

- the exchange is the ngshare service, reached at ``$MHA_EXCHANGE_URL`` (on Kubernetes,
  ngshare-exchange finds ``http://proxy-public/services/ngshare`` by itself), for the
  course ``$MHA_COURSE_ID``, with the workbook's checks of a submission;
- the instructor's course folder is ``$MHA_COURSE_ROOT`` (set for the instructor only), and
  the instructor's side of the exchange (collecting) is the grader's, ``autograders.hub``; a
  student's environment holds only ``autograders.student`` (the students' wheel);
- the Validate button executes the notebook headless: mha_core draws nothing there.
"""

import os

from autograders.student.exchange import HEADLESS_KERNEL_ARGUMENTS
from autograders.student.validating import validate_as_graded

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
if os.environ.get("MHA_COURSE_ROOT"):  # the instructor's server
    from autograders.hub.exchange import configure
else:
    from autograders.student.exchange import configure
configure(c, os.environ.get("MHA_EXCHANGE_URL") or None, os.environ.get("MHA_COURSE_ID", "mha-workbook"))
c.Execute.extra_arguments = HEADLESS_KERNEL_ARGUMENTS
validate_as_graded()  # Validate runs what grading runs: not a cell of the student's own
if os.environ.get("MHA_COURSE_ROOT"):
    c.CourseDirectory.root = os.environ["MHA_COURSE_ROOT"]
