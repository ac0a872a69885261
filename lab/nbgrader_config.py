"""nbgrader's configuration in the students' JupyterLab (``make lab``; this folder is its
JUPYTER_CONFIG_DIR, where the Validate button reads it): the notebook is executed
headless, so mha_core draws nothing in that kernel (a figure's layout costs a second
or more, and nobody looks at it). The course's own config (``python -m autograders
release``) says the same for autograde and the instructor's validate.
"""

from autograders.student.exchange import HEADLESS_KERNEL_ARGUMENTS
from autograders.student.validating import validate_as_graded

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
c.Execute.extra_arguments = HEADLESS_KERNEL_ARGUMENTS
validate_as_graded()  # Validate runs what grading runs: not a cell of the student's own
