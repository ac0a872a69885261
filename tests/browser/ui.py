"""What a student does in the browser, as Playwright steps: open a notebook in JupyterLab,
Run All, find an explorer, move its sliders by keyboard or mouse, read what is shown.

Used by the browser tests and by ``benchmarks/bench_browser.py``. Waits are on
visible state (prompts, the kernel indicator, an image's ``src``), never sleeps.
"""

import re
import time
import urllib.request

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
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\(ipykernel\) \| Idle$"))
    try:
        idle.wait_for()
    except Exception as error:  # say what the page and the server showed instead
        raise AssertionError(f"{path}: the kernel never said Idle\n{what_is_shown(page, server)}") from error


def what_is_shown(page, server):
    """The status bar, any dialog, the server's kernels and the end of its log: why a wait failed."""
    status = page.locator(".jp-StatusBar-TextItem").all_inner_texts()
    dialogs = page.locator(".jp-Dialog").all_inner_texts()
    try:
        with urllib.request.urlopen(server.url("api/kernels"), timeout=10) as response:
            kernels = response.read().decode()
    except OSError as error:
        kernels = f"(no answer: {error})"
    return (f"status bar: {status}\ndialogs: {dialogs}\nkernels: {kernels}\n"
            f"server log (end):\n{server.log()[-2500:]}")


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


def locked_predictions(page):
    """The prediction moments still locked: output areas holding only the line asking for a prediction."""
    return page.locator(".jp-OutputArea-output").filter(has_text="Predict first").filter(
        has_not=page.locator("img.widget-image"))


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


# --- accessibility: axe-core and what a screen reader is given ----------------------------

# The project's own output: output areas (figures, explorers, the checks' messages), not the
# JupyterLab or Voila around them.
OWN_OUTPUT = ".jp-OutputArea-output"
AXE_FAILS = ("critical", "serious")

# What a screen reader gets from the project's output, read from the DOM: each image's alt,
# each slider handle's name, announced value and shown readout, the polite live region around
# each readout, and each toggle's exposed state.
ACCESSIBILITY = """(scope) => {
    const outputs = [...document.querySelectorAll(scope)];
    const all = sel => outputs.flatMap(o => [...o.querySelectorAll(sel)]);
    const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
    return {
        images: all('img').filter(visible).map(i => ({alt: i.getAttribute('alt'), title: i.getAttribute('title'),
                                                      widget: i.classList.contains('widget-image')})),
        sliders: all('.widget-slider').filter(visible).map(s => {
            const handle = s.querySelector('[role=slider]');
            const readout = s.querySelector('.widget-readout');
            return {label: (s.querySelector('label.widget-label') || {}).textContent,
                    name: handle && handle.getAttribute('aria-label'),
                    valuetext: handle && handle.getAttribute('aria-valuetext'),
                    shown: readout && readout.textContent.trim()};
        }),
        readouts: all('.mha-live').filter(visible).map(r => ({
            text: r.innerText.slice(0, 80),
            live: (r.closest('[aria-live]') || {getAttribute: () => null}).getAttribute('aria-live')})),
        toggles: all('.widget-toggle-buttons button, .widget-toggle-button').map(b => ({
            text: b.textContent, pressed: b.getAttribute('aria-pressed'),
            active: b.classList.contains('mod-active')})),
        radios: all('.widget-radio-box input[type=radio]').map(r => ({
            name: (r.closest('label') || {}).textContent, checked: r.checked})),
    };
}"""


def axe_violations(page, include=OWN_OUTPUT, impacts=AXE_FAILS):
    """axe-core (as axe-playwright-python bundles it) run on ``include``: its violations of
    the given impacts, one readable line per element (rule, impact, target, what to fix)."""
    from axe_playwright_python.sync_playwright import Axe

    page.evaluate(Axe().axe_script)
    results = page.evaluate("([context, options]) => axe.run(context, options)",
                            [{"include": [[include]]}, {"resultTypes": ["violations"]}])
    lines = []
    for violation in results["violations"]:
        if violation["impact"] not in impacts:
            continue
        for node in violation["nodes"]:
            summary = " ".join(node.get("failureSummary", "").split())[:300]
            lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at "
                         f"{' '.join(map(str, node['target']))[-160:]}: {node['html'][:160]}; {summary}")
    return lines


def accessibility(page, scope=OWN_OUTPUT):
    """What :data:`ACCESSIBILITY` reads from the outputs (dicts of lists)."""
    return page.evaluate(ACCESSIBILITY, scope)


def accessibility_problems(page, scope=OWN_OUTPUT):
    """What a screen reader would miss in the outputs, one line each (empty when nothing):
    an image with no alt text or none with a number in it; a slider without a name, or
    announcing another value than its readout shows; a readout outside a polite live region;
    a toggle that does not expose its state."""
    found, problems = accessibility(page, scope), []
    for image in found["images"]:
        if not (image["alt"] or "").strip():
            problems.append(f"an image without alt text (title {image['title']!r})")
        elif not re.search(r"\d", image["alt"]):
            problems.append(f"an image whose alt text states no number from its data: {image['alt'][:120]!r}")
    for slider in found["sliders"]:
        if not (slider["name"] or "").strip():
            problems.append(f"the slider {slider['label']!r} has no accessible name")
        if slider["shown"] and slider["valuetext"] != slider["shown"]:
            problems.append(f"the slider {slider['label']!r} shows {slider['shown']!r} but announces "
                            f"{slider['valuetext']!r}")
    problems += [f"a readout outside a polite live region: {r['text']!r}" for r in found["readouts"]
                 if r["live"] != "polite"]
    problems += [f"the toggle {t['text']!r} does not expose its state" for t in found["toggles"]
                 if t["pressed"] != ("true" if t["active"] else "false")]
    return problems


def audit(page, screenshot=None):
    """axe-core's critical and serious violations in the project's output, then what
    :func:`accessibility_problems` finds; a screenshot to ``screenshot`` when there are any."""
    problems = axe_violations(page) + accessibility_problems(page)
    if problems and screenshot:
        page.screenshot(path=screenshot)
    return problems
