"""The students' JupyterLab (``make lab``): this folder is its JUPYTER_CONFIG_DIR.

- nbgrader's student tools (Validate, the assignment list) and not the instructor's:
  the formgrader and course list server extensions are off here, their JupyterLab
  plugins off in ``labconfig/page_config.json``; on a student's own machine (``make lab``,
  which adds ``local/`` to JUPYTER_CONFIG_PATH) the assignment list and nbgrader's menu are
  off too: there is no exchange to list;
- it opens on the workbook's start page, ``START.md`` (written by
  ``python -m autograders practice``), shown rendered (``settings/overrides.json``);
- no news pop-up and no update check;
- ``custom/custom.css``: no Validate button on a notebook with no code to validate
  (the self-test);
- kernels speak over Unix sockets in the user's runtime folder, not TCP ports on 127.0.0.1.
"""

import os
import tempfile

from jupyter_core.paths import jupyter_runtime_dir

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}
c.LabApp.default_url = "/lab/tree/START.md"
c.LabApp.app_settings_dir = os.path.join(here, "settings")  # overrides.json: defaults of the settings
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.LabApp.custom_css = True

# On a server shared by a class (make hub), a kernel's TCP ports on 127.0.0.1 are open to every
# account: anyone can subscribe to another student's IOPub (signed, not encrypted: their outputs),
# and the ports, picked free by one server and bound later by its kernel, collide between servers
# (the hub benchmark, 40 students starting at once: "Address already in use", a kernel lost).
# Unix sockets in the user's own runtime folder (0700) are neither.
c.KernelManager.transport = "ipc"

# A kernel's sockets are "<runtime folder>/kernel-<36-character id>-ipc-<n>", and a Unix socket's path
# has at most 107 bytes (Linux): in a runtime folder longer than 57 characters (a long home folder's
# ~/.local/share/jupyter/runtime) no kernel could start. The server then keeps its runtime files,
# kernels' included, in a private temporary folder (0700) instead. ``ServerApp.runtime_dir`` is not
# configurable (jupyter_core 5): the server reads JUPYTER_RUNTIME_DIR after this file has run.
SOCKET_PATH_MAX = 107
if len(os.path.join(jupyter_runtime_dir(), "kernel-" + "0" * 36 + "-ipc-5").encode()) > SOCKET_PATH_MAX:
    os.environ["JUPYTER_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="jupyter-")
