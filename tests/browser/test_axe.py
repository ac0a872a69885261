"""Accessibility of what the project shows, checked with axe-core in Chromium.

axe-core (the copy axe-playwright-python bundles) runs on the project's own output only,
the output areas (figures, explorers, the checks' messages), not the JupyterLab or Voila
around them; a critical or serious violation fails, listed as rule, target and what to fix.
Then, from the DOM, what a screen reader is given (``ui.accessibility_problems``): every
image has alt text stating numbers from its data; every slider is named and announces the
value its readout shows; every readout sits in a polite live region; toggles expose their
state (or are radio buttons).

Here: the classroom demo in Voila, at the projector's 1280 x 720 and at 1920 x 1080, and
its controls moved from the keyboard. The practice notebooks are audited inside the lab
tests' own sessions (``test_lab.py`` calls ``ui.audit`` after Run All of every level,
solved and blank), so no level is run twice.
"""

import pytest

from . import ui
from .conftest import PROJECTOR, _page
from .test_demo import load

FULL_HD = {"width": 1920, "height": 1080}
# Readouts' live regions keep their element while their HTML is replaced: a live region
# created with its new text is not announced.
LIVE_REGION = """([k]) => {
    const screen = [...document.querySelectorAll('.jp-OutputArea-output')].filter(o => o.querySelector('.widget-slider'))[k];
    return screen.querySelector('.mha-live[aria-live=polite]');
}"""


@pytest.fixture(params=[PROJECTOR, FULL_HD], ids=lambda v: f"{v['width']}x{v['height']}")
def demo_page(request, playwright_browser):
    context, page = _page(playwright_browser, request.param)
    yield page
    context.close()


def test_demo_has_no_serious_violation_and_says_what_it_shows(voila, demo_page, screenshots):
    page = demo_page
    load(page, voila)
    size = page.viewport_size
    problems = ui.audit(page, screenshots(f"demo-accessibility-{size['width']}x{size['height']}"))
    assert not problems, "the demo's output, for a screen reader:\n" + "\n".join(problems)
    found = ui.accessibility(page)
    assert len(found["images"]) >= 4 and len(found["sliders"]) >= 13 and found["readouts"], found
    assert not page.js_errors, page.js_errors


def test_demo_controls_announce_their_new_values(voila, projector_page):
    page = projector_page
    load(page, voila)
    # The softmax screen: the temperature reads "1.00" (not 1.0000000000000002) and, moved
    # from the keyboard, announces its new readout; the weights' readout is announced.
    softmax = page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-slider")).nth(1)
    temperature = ui.slider(softmax, "temperature T")
    handle = temperature.locator("[role=slider]")
    assert handle.get_attribute("aria-label") == "temperature T"
    assert handle.get_attribute("aria-valuetext") == ui.slider_value(temperature) == "1.00"
    live = page.evaluate_handle(LIVE_REGION, [1])
    before = live.evaluate("e => e.innerText")
    ui.press(temperature, "ArrowRight")
    page.wait_for_function("h => h.getAttribute('aria-valuetext') === '1.19'", arg=handle.element_handle())
    assert ui.slider_value(temperature) == "1.19"
    page.wait_for_function("([e, old]) => e.isConnected && e.innerText !== old", arg=[live, before])
    # The figure's alt text follows it: the weights at T = 1.19 (the log slider's next stop, 2^0.25).
    img = softmax.locator("img.widget-image")
    page.wait_for_function("i => (i.alt || '').includes('T = 1.19')", arg=img.element_handle())

    # The count screen's d_model is a selection slider: it announces 512 (shown), not its position.
    counts = page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-slider")).nth(4)
    d_model = ui.slider(counts, "d_model")
    handle = d_model.locator("[role=slider]")
    assert handle.get_attribute("aria-valuenow") != "512"  # the option's position, which is not what is said
    assert handle.get_attribute("aria-valuetext") == ui.slider_value(d_model) == "512"
    ui.press(d_model, "ArrowRight")
    page.wait_for_function("h => h.getAttribute('aria-valuetext') === '768'", arg=handle.element_handle())
    # Its FLOPs/parameters choice exposes its state.
    toggles = ui.accessibility(page)["toggles"]
    assert all(t["pressed"] == ("true" if t["active"] else "false") for t in toggles), toggles
    assert not page.js_errors, page.js_errors
