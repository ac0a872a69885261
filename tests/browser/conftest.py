"""Browser tests: the practice edition in JupyterLab and the classroom demo in Voila, in Chromium.

One Chromium (the system's, ``/usr/bin/chromium``) and one server of each kind
for the whole session, each on a free loopback port in a temporary directory,
stopped afterwards. Every test here is marked ``browser``: ``pytest -m browser``
runs only these, ``pytest -m "not browser"`` everything else.

Without Chromium (or Playwright) the tests skip with a message saying how to get
it; with ``MHA_REQUIRE_BROWSER=1`` (set by ``.ci/run``) they fail instead.
Screenshots go to ``artifacts/screenshots/`` (git-ignored) for a reviewer to look at.
"""

import os
import re
import sys
from pathlib import Path

import pytest

from . import servers

ROOT = servers.ROOT
SCREENSHOTS = Path(os.environ.get("MHA_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
DEMO = ROOT / "demo" / "classroom.ipynb"
LAB_VIEWPORT = {"width": 1280, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: end-to-end tests in Chromium (JupyterLab and the Voila demo)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory):
    """A student's ``workbook/``: the practice edition as ``make lab`` builds it (blank
    notebooks, ``START.md``), and in ``solved/`` the same notebooks with every answer
    filled in from ``notebooks/`` (as a student who got everything right has them)."""
    import shutil

    from autograders.editions import editions
    from tests.conftest import NOTEBOOKS, answered_practice

    # Built from a copy of notebooks/ beside it (``lab_root.parent / "notebooks"``), so
    # that a rebuild in a test sees the same source while notebooks/ is being edited.
    source = shutil.copytree(NOTEBOOKS, tmp_path_factory.mktemp("lab") / "notebooks")
    root = source.parent / "workbook"
    editions.build_practice(root, source, say=lambda message: None)
    for path in editions.assignments(source):
        answered_practice(path, root / path.name, root / "solved")
    return root


@pytest.fixture(scope="session")
def lab(playwright_browser, lab_root, tmp_path_factory):
    server = servers.jupyterlab(lab_root, tmp_path_factory.mktemp("lab-home"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def voila(playwright_browser, tmp_path_factory):
    server = servers.voila(DEMO, tmp_path_factory.mktemp("voila-home"))
    yield server
    server.stop()


def _page(browser, viewport):
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    return context, page


@pytest.fixture
def lab_page(playwright_browser):
    context, page = _page(playwright_browser, LAB_VIEWPORT)
    yield page
    context.close()


@pytest.fixture
def projector_page(playwright_browser):
    """A 1280 x 720 window: the projector the classroom demo is made for."""
    context, page = _page(playwright_browser, PROJECTOR)
    yield page
    context.close()


@pytest.fixture(scope="session")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def path(name):
        return SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"

    return path
