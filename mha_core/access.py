"""What a screen reader needs from the explorers that ipywidgets 8 does not give by itself.

- :class:`AltImage`: an ``ipywidgets.Image`` with alt text. The text is the
  widget's ``tooltip``, which the view writes as the ``<img>``'s ``title`` (an
  accessible name). ipywidgets' Image model has no ``description``, and the
  view's tooltip code reads one (a TypeError in JupyterLab 4): this class syncs
  an empty one.
- :func:`aria_script`: a hidden ``Output`` holding a short script that the page
  runs once (JupyterLab and Voila run an Output widget's JavaScript: its outputs
  are trusted). It keeps, for every ipywidgets control on the page:

  * a slider's handle (noUiSlider's ``<div role="slider">``) named by the
    slider's description (``aria-label``), and announcing the value its readout
    shows (``aria-valuetext``: "8" for h = 8, not the option's position; "1.00",
    not 1.0000000000000002);
  * an image's ``alt`` equal to its title (:class:`AltImage`);
  * toggle buttons' state as ``aria-pressed``;
  * outputs given the class :data:`LIVE` as polite live regions, set on the
    element that stays while its HTML is replaced (a live region created with
    its new text is not announced).

Under nbgrader (no one sees a frame) none of this matters, and it costs nothing.
"""

import ipywidgets as widgets
from IPython.display import Javascript
from traitlets import Unicode

LIVE = "mha-live"  # the class of a readout whose changes are announced

SCRIPT = """
(() => {
  if (window.mhaAria) { window.mhaAria(); return; }
  const set = (el, name, value) => {
    if (value && el.getAttribute(name) !== value) el.setAttribute(name, value);
  };
  const fix = () => {
    for (const slider of document.querySelectorAll('.widget-slider')) {
      const handle = slider.querySelector('.noUi-handle[role="slider"]');
      if (!handle) continue;
      const label = slider.querySelector('label.widget-label');
      const readout = slider.querySelector('.widget-readout');
      set(handle, 'aria-label', label && label.textContent.trim());
      if (readout && readout.style.display !== 'none') set(handle, 'aria-valuetext', readout.textContent.trim());
    }
    for (const img of document.querySelectorAll('img.widget-image[title]')) set(img, 'alt', img.getAttribute('title'));
    for (const button of document.querySelectorAll('.widget-toggle-buttons button')) {
      set(button, 'aria-pressed', button.classList.contains('mod-active') ? 'true' : 'false');
    }
    for (const live of document.querySelectorAll('.%(live)s')) set(live, 'aria-live', 'polite');
  };
  window.mhaAria = fix;
  // One pass per frame at most: JupyterLab changes classes and styles on every keystroke.
  let queued = false;
  const later = () => {
    if (queued) return;
    queued = true;
    (window.requestAnimationFrame || setTimeout)(() => { queued = false; fix(); });
  };
  new MutationObserver(later).observe(document.body, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['aria-valuetext', 'title', 'class', 'style'],
  });
  fix();
})();
""" % {"live": LIVE}


class AltImage(widgets.Image):
    """An Image whose ``tooltip`` is its alt text (the ``<img>``'s title; alt too with :func:`aria_script`)."""

    description = Unicode("").tag(sync=True)  # read by the view's tooltip code; never shown


def aria_script():
    """A hidden Output whose script names the page's sliders and keeps their announced values right."""
    out = widgets.Output(layout=widgets.Layout(display="none"))
    out.append_display_data(Javascript(SCRIPT))
    return out


def live(widget):
    """``widget`` (an HTML readout), marked as a polite live region."""
    widget.add_class(LIVE)
    return widget
