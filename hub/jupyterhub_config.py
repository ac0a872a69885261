"""JupyterHub's configuration for a hosted class (``mha-workbook hub up`` copies this file
into the hub's folder beside ``settings.json``): everything is in
``autograders/hub/hubconfig.py``, from the settings written there; then the folder's
``jupyterhub_config_local.py``, if the teacher wrote one.
"""

from pathlib import Path

from autograders.hub.hubconfig import configure
from autograders.hub.settings import HubSettings

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = Path(__file__).resolve().parent
configure(c, HubSettings.load(here))
# The teacher's own additions, kept across `make hub` (for example LTI 1.3 sign-in: see docs/lms.md).
if (here / "jupyterhub_config_local.py").exists():
    load_subconfig(str(here / "jupyterhub_config_local.py"))  # noqa: F821 (traitlets' config loader)
