"""In Chromium: a control changed -> its screen updated, in JupyterLab (the per-head grid at
d_model = 512, h = 8, n = 16) and on every screen of the Voila classroom demo at 1280 x 720.

One change is a key on the control (ArrowRight/ArrowLeft on a slider's handle,
ArrowUp/ArrowDown on a dropdown), alternating, so the value goes back and forth. The
time runs in the page, from the keydown event to the first animation frame after the
screen changed: its figure's <img> loaded and decoded its new PNG (the kernel computed,
drew and encoded it, the bytes crossed the websocket), or, on screen 1, its shape table
was rewritten. Targets (medians): a data change (``seed``) <= 150 ms; a change of
layout (n, h, n_q, n_k, d_model, the head view's sentence: new tokens, panels or bars, the same figure
re-used) <= 400 ms.
In JupyterLab a change of n keeps the head grid's layout: its token labels are pasted, not drawn.

Needs Chromium at /usr/bin/chromium (MHA_CHROMIUM). The load average is printed:
the machine may be shared.

    python -m benchmarks browser
"""

import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser import servers, ui  # noqa: E402

TARGET_MS = 150.0  # a data change
LAYOUT_TARGET_MS = 400.0  # a change of layout
CHANGES = 24  # per control and front end (at least 20)
FRONT_ENDS = os.environ.get("MHA_BENCH_FRONT_ENDS", "jupyterlab,voila").split(",")  # voila: the demo alone
# The demo's rows: (screen, 0-based, as the browser tests count them; control label; what it changes).
DEMO_ROWS = [
    (0, "n", "layout"), (0, "h (heads)", "layout"),
    (1, "temperature T", "data"),
    (2, "seed", "data"), (2, "n", "layout"), (2, "h (heads)", "layout"),
    (3, "n_q (decoder)", "layout"), (3, "n_k (encoder)", "layout"),
    (4, "n", "layout"), (4, "d_model", "layout"),
    (5, "query word", "data"), (5, "sentence", "layout"),
]
D_MODEL, H, N = 512, 8, 16
CELL = (f"import mha_core as mha\nfrom autograders.student.sentences import TOKENS\n"
        f"mha.widgets.shape_explorer(d_model={D_MODEL}, h={H}, n={N}, tokens=TOKENS)\n")

# Installed in the page: on the control's keydown, note the time; when the image's src changes
# and the new picture is decoded (or, with no image, when the shape table is rewritten), wait
# one frame and record the elapsed time. Observers of an earlier row are disconnected.
ARM = """([target, control]) => {
    (window.__observers || []).forEach(o => o.disconnect());
    window.__lat = []; let start = null;
    const onKey = e => { start = e.timeStamp; };
    control.addEventListener('keydown', onKey, true);
    const observer = new MutationObserver(() => {
        const t0 = start; if (t0 === null) return; start = null;
        const done = () => requestAnimationFrame(() => window.__lat.push(performance.now() - t0));
        if (target.tagName !== 'IMG') { done(); return; }
        if (target.complete && target.naturalWidth) { target.decode().then(done, done); }
        else { target.addEventListener('load', done, {once: true}); }
    });
    if (target.tagName === 'IMG') observer.observe(target, {attributes: true, attributeFilter: ['src']});
    else observer.observe(target, {childList: true, subtree: true, characterData: true});
    window.__observers = [observer, {disconnect: () => control.removeEventListener('keydown', onKey, true)}];
}"""


def control_of(explorer, label):
    """(the element whose keys are timed, the element to focus, the two keys) of the control ``label``: a
    slider's handle, a dropdown's <select>, or a radio group (keys on its checked button move the choice)."""
    named = explorer.page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))
    sliders = ui.slider(explorer, label)
    if sliders.count():
        handle = sliders.locator(".noUi-handle")
        return handle, handle, ("ArrowRight", "ArrowLeft")
    radios = explorer.locator(".widget-radio").filter(has=named)
    if radios.count():
        return radios.first, radios.first.locator("input:checked"), ("ArrowRight", "ArrowLeft")
    select = explorer.locator(".widget-dropdown").filter(has=named).locator("select")
    keys = ("ArrowUp", "ArrowDown")  # 8 -> 4 -> 8 heads: from 6 panels to 4 and back
    return select, select, keys[::-1] if select.evaluate("s => s.selectedIndex") == 0 else keys


def measure(page, explorer, label, target=None):
    """Median, min and max milliseconds over CHANGES keyboard changes of the control ``label``;
    ``target`` is what changes (default: the explorer's image)."""
    control, focus, keys = control_of(explorer, label)
    control.scroll_into_view_if_needed()
    target = target if target is not None else ui.image(explorer)
    page.evaluate(ARM, [target.element_handle(), control.element_handle()])
    focus.focus()
    for k in range(CHANGES):
        page.keyboard.press(keys[k % 2])
        page.wait_for_function("n => window.__lat.length >= n", arg=k + 1, timeout=60_000, polling="raf")
    times = page.evaluate("() => window.__lat")
    return statistics.median(times), min(times), max(times)


def lab_explorer(page, playwright_browser, home):
    root = home / "root"
    root.mkdir()
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(root / "grid.ipynb"))
    server = servers.jupyterlab(root, home)
    ui.open_notebook(page, server, "grid.ipynb", "bench")
    ui.run_all(page)
    explorer = ui.explorers(page).first
    explorer.wait_for()
    return server, explorer


def voila_demo(page, home):
    """The demo served and loaded (as the browser tests load it)."""
    from tests.browser.test_demo import load

    server = servers.voila(ROOT / "demo" / "classroom.ipynb", home)
    load(page, server)
    return server


def demo_screen(page, k):
    """Screen ``k``'s explorer (the k-th output holding a slider or the head view) and what its controls
    change: its figure, or on screen 1 (no figure) its shape table."""
    from tests.browser.test_demo import screen

    explorer = screen(page, k)
    images = explorer.locator("img.widget-image")
    table = explorer.locator(".widget-html-content").filter(has=page.locator("table"))  # its content is replaced
    return explorer, (images.first if images.count() else table.first)


def main():
    missing = servers.browser_missing()
    if missing:
        print(missing)
        return
    from playwright.sync_api import sync_playwright

    print(f"load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); {CHANGES} changes per row; "
          f"JupyterLab: the per-head grid at d_model={D_MODEL}, h={H}, n={N}; Voila: the demo at 1280 x 720")
    print(f"{'front end':<11}{'screen':<8}{'control':<15}{'change':<8}{'median ms':>10}{'min':>8}{'max':>8}")
    rows = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
        browser = servers.launch(playwright)
        for name in FRONT_ENDS:
            page = browser.new_page(viewport={"width": 1280, "height": 900 if name == "jupyterlab" else 720})
            home = Path(tmp) / name
            home.mkdir()
            try:
                if name == "jupyterlab":
                    server, explorer = lab_explorer(page, browser, home)
                    plan = [(None, explorer, None, "seed", "data"), (None, explorer, None, "n", "layout")]
                else:
                    server = voila_demo(page, home)
                    plan = [(k, *demo_screen(page, k), label, kind) for k, label, kind in DEMO_ROWS]
                for k, explorer, target, label, kind in plan:
                    median, low, high = measure(page, explorer, label, target)
                    rows.append((name, k, label, kind, median))
                    where = "-" if k is None else str(k + 1)
                    print(f"{name:<11}{where:<8}{label:<15}{kind:<8}{median:>10.0f}{low:>8.0f}{high:>8.0f}", flush=True)
            finally:
                page.close()
                server.stop()
        browser.close()
    for name, k, label, kind, median in rows:
        target = TARGET_MS if kind == "data" else LAYOUT_TARGET_MS
        where = "" if k is None else f" screen {k + 1}"
        print(f"{name}{where}: {label} ({kind} change) median {median:.0f} ms "
              f"{'meets' if median <= target else 'misses'} the {target:.0f} ms target")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
