"""The README's picture: Level 2's softmax playground in JupyterLab, in Chromium at 1280 x 720.

    python -m tests.browser.readme_picture [docs/images/level2-softmax-playground.png]

Builds the practice edition with every answer and prediction filled in (as the browser tests'
"solved" notebooks), serves it with the students' JupyterLab configuration (``lab/``), runs
Level 2 and photographs the playground at T = 2 (the problem's start).
"""

import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from autograders.editions import editions
from tests.browser import servers, ui
from tests.conftest import NOTEBOOKS, answered_practice

OUT = servers.ROOT / "docs" / "images" / "level2-softmax-playground.png"


def main(out=OUT):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = shutil.copytree(NOTEBOOKS, tmp / "notebooks")
        root = tmp / "workbook"
        editions.build_practice(root, source, say=lambda message: None)
        level2 = source / "level2_application.ipynb"
        answered_practice(level2, root / level2.name, root / "solved")
        (tmp / "home").mkdir()
        server = servers.jupyterlab(root, tmp / "home")
        try:
            with sync_playwright() as playwright:
                browser = servers.launch(playwright)
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.set_default_timeout(120_000)
                ui.open_notebook(page, server, "solved/level2_application.ipynb", "picture")
                ui.run_all(page)
                playground = ui.explorers(page).filter(has_text="temperature T").first
                playground.scroll_into_view_if_needed()
                page.locator(".jp-NotebookPanel .jp-Notebook").first.evaluate(
                    "(nb, el) => { nb.scrollTop += el.getBoundingClientRect().top - 120; }",
                    playground.element_handle())
                page.wait_for_timeout(1000)
                Path(out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out))
                browser.close()
        finally:
            server.stop()
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
