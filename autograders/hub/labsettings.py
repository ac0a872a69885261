"""The instructor's JupyterLab settings, rendered for the server they run in.

``hub/instructor/settings/overrides.json`` names the Formgrader's address as
``{formgrader_url}``: under a hub it is ``<JUPYTERHUB_SERVICE_PREFIX>formgrader`` (the
one-server hub's ``/user/<instructor>/`` or Zero to JupyterHub's), which only the running
server knows. The instructor's ``jupyter_server_config.py`` renders the template into a
folder of the user's own at start-up and points ``LabApp.app_settings_dir`` there.
"""

import os
from pathlib import Path


def formgrader_url(prefix):
    """The Formgrader under the server's URL prefix (``/user/ann/`` → ``/user/ann/formgrader``)."""
    prefix = prefix or "/"
    if not prefix.startswith("/"):
        raise ValueError(f"prefix must be a URL path starting with '/', got {prefix!r}")
    return prefix.rstrip("/") + "/formgrader"


def render(template_dir, target_dir, prefix):
    """Write ``template_dir``'s overrides.json into ``target_dir`` for ``prefix``; return ``target_dir``."""
    text = Path(template_dir, "overrides.json").read_text().replace("{formgrader_url}", formgrader_url(prefix))
    target = Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    overrides = target / "overrides.json"
    if not overrides.exists() or overrides.read_text() != text:
        overrides.write_text(text)
    return str(target)


def user_settings_dir():
    """Where the rendered settings go: the user's Jupyter data folder, which is theirs to write."""
    from jupyter_core.paths import jupyter_data_dir

    return os.path.join(jupyter_data_dir(), "mha-workbook", "instructor-settings")
