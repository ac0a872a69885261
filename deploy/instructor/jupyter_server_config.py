"""The instructor's JupyterLab in the hosted class: in the image this folder is
/etc/jupyter/instructor, the JUPYTER_CONFIG_DIR the hub gives the members of the
instructors group only (deploy/values.yaml, ``custom.instructors``). The students'
configuration (lab/, /etc/jupyter/student) is not read here at all.

- nbgrader's instructor tools on as well as the students': the Formgrader and the course
  list (server extensions here; their JupyterLab plugins are enabled by default,
  ``labconfig/page_config.json`` disables none). Under JupyterHub >= 4.1 the Formgrader
  tab inside Lab stays blank (the server sends ``frame-ancestors 'none'``): open
  ``/user/<name>/formgrader`` in its own browser tab;
- the same settings defaults as the students' (``settings/``, copied from lab/ by the
  Dockerfile): no news pop-up, Markdown opened rendered.
"""

import os

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": True,
    "nbgrader.server_extensions.course_list": True,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}
c.LabApp.app_settings_dir = os.path.join(here, "settings")
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
