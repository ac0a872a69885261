"""nbgrader in the instructor's server (/etc/jupyter/instructor in the image): the course
is ``$MHA_COURSE_DIR`` (default ``~/course``, on the instructor's persistent home), made
there with ``mha-workbook course --course ~/course --source <a clone>/notebooks``.
Its own ``nbgrader_config.py`` (the course id, the release's preprocessors, the sandbox,
the rubrics) is loaded on top of /etc/jupyter/nbgrader_config.py (the exchange).
"""

import os

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
course = os.path.expanduser(os.environ.get("MHA_COURSE_DIR", "~/course"))
c.CourseDirectory.root = course
if os.path.isfile(os.path.join(course, "nbgrader_config.py")):
    load_subconfig(os.path.join(course, "nbgrader_config.py"))  # noqa: F821 (traitlets)
