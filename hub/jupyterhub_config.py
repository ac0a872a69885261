"""JupyterHub's configuration for a hosted class (``mha-workbook hub up`` copies this file
into the hub's folder beside ``settings.json``): everything is in
``autograders/hub/hubconfig.py``, from the settings written there.
"""

from pathlib import Path

from autograders.hub.hubconfig import configure
from autograders.hub.settings import HubSettings

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
configure(c, HubSettings.load(Path(__file__).resolve().parent))
