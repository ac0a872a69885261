"""What a student does in the browser, as Playwright steps: open a notebook in JupyterLab,
Run All, find an explorer, move its sliders by keyboard or mouse, read what is shown.

Used by the browser tests and by ``benchmarks/bench_browser.py``. Waits are on
visible state (prompts, the kernel indicator, an image's ``src``), never sleeps.
"""

import re
import time

# The kernel is idle, no cell is queued or running ([*]) and at least one has run.
RUN_FINISHED = """() => {
    const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')]
        .map(e => e.textContent.trim());
    const idle = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator')]
        .every(e => e.dataset.status === 'idle');
    return idle && prompts.some(p => /\\d/.test(p)) && !prompts.some(p => p.includes('*'));
}"""

# SHA-256 of the bytes behind an <img> (ipywidgets 8 shows an Image widget's PNG as a blob: URL).
IMAGE_DIGEST = """async img => {
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    return [...new Uint8Array(digest)].map(b => b.toString(16).padStart(2, '0')).join('');
}"""


def open_notebook(page, server, path, workspace):
    """Open ``path`` in a fresh JupyterLab workspace; return when its kernel is idle."""
    page.goto(server.url(f"lab/workspaces/{workspace}/tree/{path}?reset"))
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for()
    # The toolbar's indicator says "idle" before there is a kernel: wait for the status bar's
    # "Python 3 (ipykernel) | Idle" (a Run All sent to no kernel runs nothing).
    page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\(ipykernel\) \| Idle$")).wait_for()


def menu(page, top, command):
    """Click the menu bar's ``top`` menu, then the item of ``command`` (its data-command)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{top}$")).click()
    page.locator(f"li.lm-Menu-item[data-command='{command}']").click()


def run_all(page, timeout=180_000):
    """Run > Run All Cells, and wait until the kernel is idle with nothing queued."""
    menu(page, "Run", "runmenu:run-all")
    page.wait_for_function(RUN_FINISHED, timeout=timeout, polling=200)


def save(page):
    """File > Save Notebook; wait until the tab is no longer marked as changed."""
    menu(page, "File", "docmanager:save")
    page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty')")


def prompts(page):
    return [p.strip() for p in page.locator(".jp-CodeCell .jp-InputPrompt").all_text_contents()]


def explorers(page):
    """The explorers shown: output areas holding a widget with an image (most also have sliders;
    some have only radio buttons and dropdowns)."""
    return page.locator(".jp-OutputArea-output").filter(has=page.locator("img.widget-image"))


def slider_labels(explorer):
    """The labels of an explorer's sliders, in order."""
    return [t.strip() for t in explorer.locator(".widget-slider label.widget-label").all_text_contents()]


def slider(container, label):
    """The slider whose description is exactly ``label``."""
    return container.locator(".widget-slider").filter(
        has=container.page.locator("label.widget-label", has_text=re.compile(f"^{re.escape(label)}$"))
    )


def slider_value(slider_):
    """The value as the slider's readout shows it (for a SelectionSlider, the option's label)."""
    return slider_.locator(".widget-readout").inner_text().strip()


def press(slider_, key="ArrowRight"):
    """Focus the slider's handle and press ``key`` (as a keyboard user does)."""
    handle = slider_.locator(".noUi-handle")
    handle.focus()
    handle.press(key)


def drag(slider_, dx):
    """Drag the slider's handle ``dx`` pixels with the mouse."""
    page = slider_.page
    handle = slider_.locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=8)
    page.mouse.up()


def image(container):
    return container.locator("img.widget-image").first


def image_digest(container):
    """(src, SHA-256 of the PNG) of the container's image."""
    img = image(container)
    for _ in range(20):  # the src may change (and the old blob be revoked) while it is read
        src = img.get_attribute("src")
        try:
            return src, img.evaluate(IMAGE_DIGEST)
        except Exception:  # noqa: BLE001 - a revoked blob: read the new one
            if img.get_attribute("src") == src:
                raise
    raise AssertionError("the image kept changing while it was read")


def texts(container):
    """The text of the container's HTML outputs (readouts, the shape table), as shown."""
    return "\n".join(container.locator(".widget-html").all_inner_texts())


def wait_for_new_image(container, old_src, timeout=30_000):
    """Wait until the image's ``src`` differs from ``old_src``; return (src, digest)."""
    image(container).element_handle().wait_for_element_state("visible")
    container.page.wait_for_function(
        "([img, old]) => img.getAttribute('src') !== old && img.complete",
        arg=[image(container).element_handle(), old_src], timeout=timeout, polling=50,
    )
    return image_digest(container)


def wait_for_text_change(container, old, timeout=30_000):
    deadline = time.monotonic() + timeout / 1000
    while time.monotonic() < deadline:
        now = texts(container)
        if now != old:
            return now
        container.page.wait_for_timeout(50)
    raise AssertionError(f"the explorer's text did not change from:\n{old}")
