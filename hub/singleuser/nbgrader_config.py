"""nbgrader in a hosted class's JupyterLab, a student's or the instructor's (the hub puts
this file in their Jupyter configuration; the Kubernetes image in /etc/jupyter/):

- the exchange is the ngshare service, reached at ``$MHA_EXCHANGE_URL`` (on Kubernetes,
  ngshare-exchange finds ``http://proxy-public/services/ngshare`` by itself), for the
  course ``$MHA_COURSE_ID``, with the workbook's checks of a submission;
- the instructor's course folder is ``$MHA_COURSE_ROOT`` (set for the instructor only);
- the Validate button executes the notebook headless: mha_core draws nothing there.
"""

import os

from autograders.editions.editions import HEADLESS_KERNEL_ARGUMENTS
from autograders.hub.exchange import configure

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
configure(c, os.environ.get("MHA_EXCHANGE_URL") or None, os.environ.get("MHA_COURSE_ID", "mha-workbook"))
c.Execute.extra_arguments = HEADLESS_KERNEL_ARGUMENTS
if os.environ.get("MHA_COURSE_ROOT"):
    c.CourseDirectory.root = os.environ["MHA_COURSE_ROOT"]
