"""The classroom demo (``demo/classroom.ipynb``) as a Voila dashboard, in Chromium at 1280 x 720.

The dashboard loads with no code visible and no error output; nothing is wider
than the projector's window; each of its five screens (one idea each) has its
controls and its figure; and every slider, moved from the keyboard, changes
what its screen shows (the image, or the shape table on the first screen).
"""

import re
import time

import pytest

from . import ui

SCREENS = ["1. Shapes", "2. Softmax", "3. Every head", "4. Cross-attention", "5. What"]
# What each screen's sliders change: "image" (its figure) or "text" (the shape table and readout).
SHOWS = {"1. Shapes": "text", "2. Softmax": "image", "3. Every head": "image", "4. Cross-attention": "image",
         "5. What": "image"}
# A screen's explorer: the k-th output holding a slider (one per screen, in order). Its state:
# the SHA-256 of each image shown in it, and the text of its HTML outputs.
SCREEN_STATE = """async ([k]) => {
    const screen = [...document.querySelectorAll('.jp-OutputArea-output')].filter(o => o.querySelector('.widget-slider'))[k];
    const images = [...screen.querySelectorAll('img')].filter(i => i.offsetParent !== null);
    const digests = [];
    for (const img of images) {
        const bytes = await (await fetch(img.src)).arrayBuffer();
        const d = await crypto.subtle.digest('SHA-256', bytes);
        digests.push([...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join(''));
    }
    const text = [...screen.querySelectorAll('.widget-html')].map(e => e.innerText).join('\\n');
    return {image: digests.join(','), text};
}"""


def load(page, voila):
    # not "load": no waiting on a CDN. Voila sends the page once the notebook has run: on a
    # fresh clone the first run (cold caches, every import) has taken more than 60 s in CI.
    page.goto(voila.base + "/", wait_until="domcontentloaded", timeout=180_000)
    # Voila shows the page once every cell has run: wait for the last screen's figures.
    page.locator(".jp-RenderedMarkdown h2", has_text="5. What").wait_for(timeout=180_000)
    page.wait_for_function(
        "() => document.querySelectorAll('.widget-slider').length >= 13"
        " && [...document.querySelectorAll('img')].filter(i => i.offsetParent).every(i => i.complete && i.naturalWidth)"
        " && [...document.querySelectorAll('.jp-OutputArea-output img')].length >= 4",  # screens 2-5: one figure each
        timeout=120_000,
    )


def screen(page, k):
    """The explorer of screen ``k`` (0-based)."""
    return page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-slider")).nth(k)


def state(page, k):
    return page.evaluate(SCREEN_STATE, [k])


def wait_changed(page, k, what, old, timeout=30):
    """Wait until screen ``k``'s ``what`` ("image" or "text") differs from ``old``; return it.
    (Polled from here: wait_for_function does not await an async predicate.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = state(page, k)[what]
        if now != old:
            return now
        page.wait_for_timeout(100)
    raise AssertionError(f"screen {SCREENS[k]!r}: its {what} did not change")


def test_dashboard_shows_no_code_and_fits_the_projector(voila, projector_page, screenshots):
    page = projector_page
    load(page, voila)
    assert page.locator(".jp-CodeCell .jp-InputArea, .cm-editor, .CodeMirror, .jp-InputPrompt").filter(visible=True).count() == 0
    assert "import mha_core" not in page.content(), "the demo's code reached the page"
    assert page.locator("[data-mime-type*='stderr'], .jp-OutputArea-output pre:has-text('Traceback')").count() == 0
    assert page.locator(".jp-RenderedMarkdown h2").all_text_contents() == [
        h for h in page.locator(".jp-RenderedMarkdown h2").all_text_contents() if any(h.startswith(s) for s in SCREENS)
    ] and page.locator(".jp-RenderedMarkdown h2").count() == len(SCREENS)
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the dashboard is {width[0]} px wide in a {width[1]} px window: it scrolls sideways"
    # Every output fits the width, and the type is large enough to read from the back.
    too_wide = page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output *')]"
        ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.className).slice(0, 5)"
    )
    assert not too_wide, f"outputs overflow the window: {too_wide}"
    sizes = page.evaluate(
        "() => [...document.querySelectorAll('.widget-slider label, .widget-readout, .widget-html div')]"
        ".map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    assert sizes and min(sizes) >= 18, f"controls' type is {min(sizes)} px; at least 18 px reads from the back"
    page.screenshot(path=screenshots("demo-full-page"), full_page=True)
    for k, heading in enumerate(SCREENS, 1):
        page.locator(".jp-RenderedMarkdown h2", has_text=heading).evaluate("h => h.scrollIntoView()")
        page.screenshot(path=screenshots(f"demo-screen-{k}"))


@pytest.mark.parametrize("heading", SCREENS)
def test_each_slider_updates_its_figure(voila, projector_page, heading):
    page = projector_page
    load(page, voila)
    assert page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-slider")).count() == len(SCREENS)
    k = SCREENS.index(heading)
    cell = screen(page, k)
    sliders = cell.locator(".widget-slider")
    assert sliders.count() >= 1, f"screen {heading!r} has no slider"
    what = SHOWS[heading]
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        label = slider.locator("label").text_content()
        slider.scroll_into_view_if_needed()
        before = state(page, k)
        handle = slider.locator(".noUi-handle")
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        ui.press(slider, "ArrowLeft" if at_max else "ArrowRight")
        assert wait_changed(page, k, what, before[what]) != before[what], f"{heading}: moving {label!r} changed nothing"
    if heading == "3. Every head":
        before = state(page, k)
        cell.get_by_role("radio", name="on", exact=True).check()  # the causal mask: radio buttons "off" / "on"
        wait_changed(page, k, "image", before["image"])
    if heading == "5. What":
        before = state(page, k)
        cell.get_by_text("parameters", exact=True).click()
        wait_changed(page, k, "image", before["image"])
    assert not page.js_errors, page.js_errors


def test_make_demo_serves_this_notebook():
    """``make demo`` starts Voila on demo/classroom.ipynb with the options the tests use."""
    from . import servers

    makefile = (servers.ROOT / "Makefile").read_text()
    rule = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert rule, "the Makefile has no demo target"
    assert "voila" in rule[1] and "classroom.ipynb" in rule[1]
    for arg in servers.VOILA_ARGS:
        assert arg in rule[1] or arg in makefile, f"make demo does not pass {arg}"
