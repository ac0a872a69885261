"""The instructor's JupyterLab in a hosted class (its JUPYTER_CONFIG_DIR): on the one-server hub
(``make hub``) and in the Kubernetes image (/etc/jupyter/instructor, deploy/Dockerfile). Every
nbgrader tool, the Formgrader included; it opens on ``START.md``; no news pop-up and no update check.

Under JupyterHub >= 4.1 a single-user server forbids being framed (``frame-ancestors
'none'``), so nbgrader's Formgrader tab inside Lab would stay blank: that plugin is off
(``labconfig/page_config.json``) and **Course > Formgrader** (``settings/overrides.json``)
opens ``<JUPYTERHUB_SERVICE_PREFIX>formgrader`` in a browser tab of its own instead (the address
is rendered into the user's own settings folder at start-up: autograders/hub/labsettings.py).
"""

import os

from autograders.hub import labsettings

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": True,
    "nbgrader.server_extensions.course_list": True,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}
c.LabApp.default_url = "/lab/tree/START.md"
c.LabApp.app_settings_dir = labsettings.render(os.path.join(here, "settings"), labsettings.user_settings_dir(),
                                               os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/"))
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.KernelManager.transport = "ipc"  # as the students' (lab/jupyter_server_config.py says why)
