"""The classroom demo (``demo/classroom.ipynb``) as a Voila dashboard, in Chromium at 1280 x 720.

The dashboard loads with no code visible and no error output; nothing is wider
than the projector's window; each of its five screens (one idea each) has its
controls and its figure; and every slider, moved from the keyboard, changes
what its screen shows (the image, or the shape table on the first screen).
At 1280 x 720 and 1920 x 1080, at the controls' extremes, every screen (the head
view too), shown alone as the presenter shows it, fits the window: its heading,
text, controls, figure and notes.
"""

import re
import time

import pytest

from . import ui

SCREENS = ["1. Shapes", "2. Softmax", "3. Every head", "4. Cross-attention", "5. What"]
# What each screen's sliders change: "image" (its figure) or "text" (the shape table and readout).
SHOWS = {"1. Shapes": "text", "2. Softmax": "image", "3. Every head": "image", "4. Cross-attention": "image",
         "5. What": "image"}
# A screen's explorer: the k-th output holding a slider, or the head view (screen 6 has no slider), one
# per screen, in order. Its state: the SHA-256 of each image shown in it, and the text of its HTML outputs.
EXPLORERS = ("[...document.querySelectorAll('.jp-OutputArea-output')]"
             ".filter(o => o.querySelector('.widget-slider, .mha-head-view'))")
SCREEN_STATE = """async ([k]) => {
    const screen = """ + EXPLORERS + """[k];
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
    """The explorer of screen ``k`` (0-based): the k-th output holding a slider or the head view (EXPLORERS)."""
    return page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-slider, .mha-head-view")).nth(k)


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
    headings = page.locator(".jp-RenderedMarkdown h2").all_text_contents()
    # screens 1 to 5 first, in order (later screens are tested in test_demo_flow.py)
    assert [h for h, s in zip(headings, SCREENS) if h.startswith(s)] == headings[:len(SCREENS)], headings
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the dashboard is {width[0]} px wide in a {width[1]} px window: it scrolls sideways"
    # Every output fits the width (but the figures' alt captions, clipped to 1 px for screen readers
    # only), and the type is large enough to read from the back.
    too_wide = page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output *')].filter(e => !e.closest('.mha-alt'))"
        ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.className).slice(0, 5)"
    )
    clipped = page.evaluate("() => [...document.querySelectorAll('.mha-alt')].map(e => e.getBoundingClientRect().width)")
    assert clipped and max(clipped) <= 1, f"the alt captions are shown ({clipped} px wide): only screen readers read them"
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
    if heading == "3. Every head":  # the seed draws new random projections: constructed heads do not have any
        before = state(page, k)
        cell.get_by_role("radio", name="random (untrained)", exact=True).check()
        wait_changed(page, k, "image", before["image"])
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


# --- on a projector: every screen fits, reads from the back, at the sliders' extremes --------------

SIZES = {"1280x720": {"width": 1280, "height": 720}, "1920x1080": {"width": 1920, "height": 1080}}
# The extremes: h = 1, or the largest h; both with the largest n, n_q, n_k and d_model; screen 3's causal
# mask off at h = 1, on at the largest h (its note is then the longest). Screen 6 (the head view): its
# longest prepared sentence, with constructed heads ("first") or random weights ("last").
EXTREMES = {"h=1": "first", "largest h": "last"}
HEAD_VIEW = "6. Where does this word look?"
FIT_SCREENS = [*SCREENS, HEAD_VIEW]
HEAD_VIEW_SOURCE = {"first": ("constructed heads", "Constructed heads."),
                    "last": ("random (untrained)", "Random (untrained) weights.")}
MIN_FIGURE_PX = 14  # a figure's smallest text as displayed, in CSS pixels
# What a screen shows once the kernel has caught up (screens 1 to 6, 0-based), from the values chosen.
SETTLED = {
    0: lambda v: [f"= {v['d_model']} / {v['h']} ="],
    2: lambda v: [f"= {v['d_model']} / {v['h']} ="] + (["hatched cells are masked"] if v["causal"] == "on" else []),
    3: lambda v: [f"n_q × n_k = {v['n_q']} × {v['n_k']}"],
    4: lambda v: [f"d_model = {v['d_model']}, n = {v['n']}"],  # the figure's alt text
    5: lambda v: [HEAD_VIEW_SOURCE[v["end"]][1], f"Lines from “{v['word']}”"],  # the alt text
}

# Everything a projector shows badly, read from the page (the figures' own alt captions, shown to
# screen readers only, are left out: they are clipped on purpose):
# - an element that scrolls or clips sideways (overflow other than visible, content wider than it),
# - an element whose box reaches past the window's left or right edge,
# - a shape in a table on more than one line.
LAYOUT_PROBLEMS = """() => {
    const problems = [];
    const name = e => e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined
        ? '.' + String(e.className).trim().split(/\\s+/).slice(0, 3).join('.') : '') + ` "${(e.innerText || '').trim().slice(0, 30)}"`;
    for (const e of document.querySelectorAll('body *')) {
        if (e.closest('.mha-alt')) continue;
        const style = getComputedStyle(e);
        if (style.display === 'none' || style.visibility === 'hidden') continue;
        if (style.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1)
            problems.push(`${name(e)} scrolls sideways: ${e.scrollWidth} px of content in ${e.clientWidth} px`);
        const box = e.getBoundingClientRect();
        if (box.width && (box.right > window.innerWidth + 1 || box.left < -1))
            problems.push(`${name(e)} reaches past the window: ${Math.round(box.left)} to ${Math.round(box.right)} px`);
    }
    for (const td of document.querySelectorAll('.widget-html table td:nth-child(2)')) {
        const range = document.createRange();
        range.selectNodeContents(td);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) problems.push(`the shape "${td.innerText}" wraps onto ${lines.size} lines`);
    }
    if (document.documentElement.scrollWidth > window.innerWidth)
        problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${window.innerWidth} px window`);
    return problems.slice(0, 12);
}"""

# The screen shown (presenter.js shows one at a time), from its top (Voila scrolls #rendered_cells, not the
# window: both go back to 0): the lowest thing a viewer sees - a line of text, an image or a control
# (inputs, sliders, menus) - of everything but the "k / N" bar and the alt captions (clipped for screen
# readers); boxes around them (a cell's padding) do not count.
SCREEN_EXTENT = """() => {
    window.scrollTo(0, 0);
    for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0;
    const skip = e => !e || e.closest('.mha-alt, nav.mha-presenter, script, style')
        || getComputedStyle(e).visibility === 'hidden';
    const shown = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent.trim() || skip(node.parentElement)) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) shown.push([r, node.parentElement, node.textContent.trim()]);
    }
    for (const e of document.querySelectorAll('img, input, select, button, textarea, svg, canvas, .noUi-target')) {
        if (skip(e)) continue;
        shown.push([e.getBoundingClientRect(), e, e.getAttribute('aria-label') || e.tagName.toLowerCase()]);
    }
    let lowest = {bottom: 0, name: ''};
    for (const [r, e, what] of shown) {
        if (!r.width || !r.height || r.bottom <= lowest.bottom) continue;
        const where = e.tagName.toLowerCase() + '.' + String(e.className).trim().split(/\\s+/)[0];
        lowest = {bottom: r.bottom, name: `"${what.slice(0, 50)}" in ${where}`};
    }
    return lowest;
}"""

# Screen k's explorer: its height, and each figure's smallest text as displayed (the image's class
# mha-text-<px>px names it at the figure's own size; the displayed width over the natural width scales it).
SCREEN_BOX = """([k]) => {
    const screen = """ + EXPLORERS + """[k];
    const box = screen.getBoundingClientRect();
    const figures = [...screen.querySelectorAll('img')].filter(i => i.offsetParent).map(i => {
        const named = [...i.classList].map(c => /^mha-text-(\\d+)px$/.exec(c)).find(m => m);
        const scale = i.getBoundingClientRect().width / i.naturalWidth;
        return {text: named ? Number(named[1]) * scale : null, scale, width: i.naturalWidth, height: i.naturalHeight};
    });
    return {height: box.height, figures};
}"""


def choose(cell, label, end):
    """Move the slider or dropdown whose label matches ``label`` to its first or last value (by keyboard
    for a slider: Home or End); return the value it shows."""
    sliders = cell.locator(".widget-slider").filter(has=cell.page.locator("label", has_text=label))
    if sliders.count():
        ui.press(sliders.first, "Home" if end == "first" else "End")
        return ui.slider_value(sliders.first)
    select = cell.locator(".widget-dropdown").filter(has=cell.page.locator("label", has_text=label)).locator("select")
    options = select.locator("option").all_text_contents()
    select.select_option(label=options[0 if end == "first" else -1])
    return options[0 if end == "first" else -1]


def set_extreme(page, end):
    """Screens 1 and 3: h at ``end``, the largest n and d_model (screen 3: the causal mask on at the last
    end); screen 4: the largest n_q and n_k, the last head; screen 5: the largest d_model and n; screen 6:
    its longest sentence, the weights at ``end``. Return the values chosen, per screen."""
    chosen = {}
    for k in (0, 2):
        cell = screen(page, k)
        v = {"d_model": choose(cell, re.compile("^d_model"), "last"), "n": choose(cell, re.compile("^n$"), "last")}
        # h's choices are d_model's divisors: wait until they are the new d_model's
        cell.locator(".widget-dropdown select option", has_text=re.compile(f"^{v['d_model']}$")).first.wait_for(
            state="attached")
        v["h"] = choose(cell, re.compile(r"^h \(heads\)"), end)
        chosen[k] = v
    chosen[2]["causal"] = "off" if end == "first" else "on"
    screen(page, 2).get_by_role("radio", name=chosen[2]["causal"], exact=True).check()
    cell = screen(page, 3)
    chosen[3] = {"n_q": choose(cell, re.compile("^n_q"), "last"), "n_k": choose(cell, re.compile("^n_k"), "last"),
                 "head": choose(cell, re.compile("^head"), "last")}
    cell = screen(page, 4)
    chosen[4] = {"d_model": choose(cell, re.compile("^d_model"), "last"), "n": choose(cell, re.compile("^n$"), "last")}
    chosen[5] = choose_head_view(page, end)
    return chosen


def texts_of(locator):
    """Each element's text, with ipywidgets' no-break spaces as spaces."""
    return [t.replace("\xa0", " ").strip() for t in locator.all_text_contents()]


def head_view_words(view):
    return texts_of(view.locator(".mha-query-words .widget-radio-box label"))


def choose_head_view(page, end):
    """Screen 6: the prepared sentence whose word buttons take the most lines (each tried in turn, its
    words awaited as the library labels them), its prepared word, and the weights at ``end``."""
    from autograders.student.sentences import HEAD_VIEW_SENTENCES
    from mha_core.explore.head_view import word_labels

    view = page.locator(".mha-head-view")
    select = view.get_by_role("combobox", name="sentence")
    labels = texts_of(select.locator("option"))
    assert labels == [entry[0] for entry in HEAD_VIEW_SENTENCES], f"screen 6 offers other sentences: {labels}"

    def pick(k):
        select.select_option(index=k)
        words = word_labels(HEAD_VIEW_SENTENCES[k][1])
        deadline = time.monotonic() + 30
        while head_view_words(view) != words:
            assert time.monotonic() < deadline, f"screen 6 never showed the words {words}: {head_view_words(view)}"
            page.wait_for_timeout(100)
        return view.locator(".mha-query-words").evaluate("e => e.getBoundingClientRect().height")

    heights = [pick(k) for k in range(len(labels))]
    longest = max(range(len(labels)), key=lambda k: (heights[k], len(HEAD_VIEW_SENTENCES[k][1])))
    if longest != len(labels) - 1:
        pick(longest)
    _, tokens, _, prepared = HEAD_VIEW_SENTENCES[longest]
    word = word_labels(tokens)[tokens.index(prepared)]
    view.get_by_role("radio", name=HEAD_VIEW_SOURCE[end][0], exact=True).check()
    return {"sentence": labels[longest], "word": word, "end": end}


def settle(page, chosen, timeout=120):
    """Wait until the screens show what was chosen, then until no figure changes for a second."""
    deadline = time.monotonic() + timeout
    for k, expected in SETTLED.items():
        texts = expected(chosen[k])
        while not all(text in state(page, k)["text"] for text in texts):
            assert time.monotonic() < deadline, f"screen {FIT_SCREENS[k]!r} never showed {texts!r}"
            page.wait_for_timeout(200)
    last, since = None, time.monotonic()
    while time.monotonic() - since < 1.0:
        now = page.evaluate("() => [...document.querySelectorAll('img.widget-image')].map(i => i.src + i.complete).join()")
        if now != last:
            last, since = now, time.monotonic()
        assert time.monotonic() < deadline, "the figures kept changing"
        page.wait_for_timeout(100)


@pytest.fixture(scope="module")
def sized_pages(playwright_browser, voila):
    """One loaded dashboard per window size, shared by the extremes (a load runs the whole notebook)."""
    pages, contexts = {}, []

    def get(size):
        if size not in pages:
            context = playwright_browser.new_context(viewport=SIZES[size])
            context.set_default_timeout(60_000)
            contexts.append(context)
            page = pages[size] = context.new_page()
            page.js_errors = []
            page.on("pageerror", lambda error: page.js_errors.append(str(error)))
            load(page, voila)
        return pages[size]

    yield get
    for context in contexts:
        context.close()


@pytest.mark.parametrize("extreme", list(EXTREMES))
@pytest.mark.parametrize("size", list(SIZES))
def test_every_screen_fits_and_reads_from_the_back_at_the_extremes(sized_pages, size, extreme, screenshots):
    page = sized_pages(size)
    chosen = set_extreme(page, EXTREMES[extreme])
    settle(page, chosen)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    problems = page.evaluate(LAYOUT_PROBLEMS)
    window = SIZES[size]
    try:
        for k, heading in enumerate(FIT_SCREENS):
            # One screen at a time, as presented: its heading, text, controls, figure and notes all in the window.
            page.evaluate("([k]) => window.mhaPresenter.show(k, {focus: false, push: false})", [k])
            page.wait_for_timeout(300)  # the widgets measure themselves again once their screen is shown
            lowest = page.evaluate(SCREEN_EXTENT)
            page.screenshot(path=screenshots(f"demo-{size}-{extreme}-screen-{k + 1}"))
            if lowest["bottom"] > window["height"] + 0.5:
                problems.append(f"{heading}: shown alone, it reaches {lowest['bottom']:.0f} px in a "
                                f"{window['height']} px window; the lowest: {lowest['name']}")
            box = page.evaluate(SCREEN_BOX, [k])
            for figure in box["figures"]:
                if figure["text"] is None:
                    problems.append(f"{heading}: a figure ({figure['width']} x {figure['height']} px) does not "
                                    f"name its smallest text")
                elif figure["text"] < MIN_FIGURE_PX:
                    problems.append(f"{heading}: a figure's smallest text is {figure['text']:.1f} px as shown "
                                    f"(scale {figure['scale']:.2f}); at least {MIN_FIGURE_PX} px reads from the back")
    finally:
        page.evaluate("() => window.mhaPresenter.showAll({push: false})")  # every screen again, for the next case
    assert not problems, f"at {size}, {extreme} ({chosen}):\n" + "\n".join(problems)
    assert not page.js_errors, page.js_errors


# Screen 2's readout column: how wide its readout is drawn against the column it sits in.
READOUT_WIDTH = """([k]) => {
    const screen = """ + EXPLORERS + """[k];
    const column = screen.querySelector('.widget-hbox > .widget-vbox:first-child');
    const readouts = [...column.querySelectorAll('.widget-html-content')].filter(e => e.offsetParent);
    const box = column.getBoundingClientRect();
    const widest = Math.max(...readouts.map(e => e.scrollWidth), ...readouts.map(e => e.getBoundingClientRect().right - box.left));
    const caption = screen.querySelector('.mha-alt');
    return {column: box.width, widest, alt: caption ? caption.textContent : ''};
}"""


def test_the_softmax_readout_fits_its_column_at_every_reachable_temperature(voila, projector_page, screenshots):
    """Every value the temperature slider reaches, a stop (a quarter of a power of two) at a time from its smallest (0.0625), with the scores at
    their largest and smallest: the readout stays inside its 440 px column (at T = 0.05 the sum of e^(s/T) was
    written out in 87 digits, 726 px past it)."""
    page = projector_page
    load(page, voila)
    k = SCREENS.index("2. Softmax")
    cell = screen(page, k)
    temperature = ui.slider(cell, "temperature T")
    scores = cell.locator(".widget-slider").filter(has=page.locator("label", has_text=re.compile(r"^s\d")))
    problems = []
    for end in ("End", "Home"):  # every score at +10, then at -10
        for i in range(scores.count()):
            ui.press(scores.nth(i), end)
        ui.press(temperature, "Home")
        values = []
        value = ui.slider_value(temperature)
        while True:
            deadline = time.monotonic() + 30
            while f"at T = {value}:" not in page.evaluate(READOUT_WIDTH, [k])["alt"]:
                assert time.monotonic() < deadline, f"screen 2 never showed T = {value}"
                page.wait_for_timeout(20)
            width = page.evaluate(READOUT_WIDTH, [k])
            values.append(value)
            if width["widest"] > width["column"] + 1:
                problems.append(f"scores at {end}, T = {value}: the readout is {width['widest']:.0f} px wide in a "
                                f"{width['column']:.0f} px column")
                page.screenshot(path=screenshots(f"demo-softmax-T-{value}"))
            if value == "16.00":
                break
            temperature.locator(".noUi-handle").press("ArrowRight")
            before, value = value, ui.slider_value(temperature)
            assert value != before, f"the temperature did not move past {before}"
        assert len(values) == 33, f"the temperature reached {len(values)} values, not 2^-4 to 2^4 by 2^0.25"
    assert not problems, "\n".join(problems[:12])
    assert not page.js_errors, page.js_errors
