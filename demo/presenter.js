// The classroom demo's presenter flow: one screen per idea (a "## k. ..." heading and the cells up to
// the next one), paged with PageDown / PageUp or the left and right arrow keys, Home and End; a visible
// "k / N"; and a URL per screen: #screen-k opens screen k, paging updates it, #all (or Escape) shows
// every screen on one scrolling page. Keys typed into a control (a slider's handle, a menu, radio
// buttons, a text box) stay with the control: arrow keys move a focused slider, not the page.
(() => {
  if (window.mhaPresenter) return;
  const KEYS = {PageDown: 1, ArrowRight: 1, PageUp: -1, ArrowLeft: -1};
  // Controls that use every key (a slider's handle takes PageUp / PageDown too), and those that use
  // only the arrow keys (radio buttons move between their options).
  const ALL_KEYS = 'select, textarea, [contenteditable], [role="slider"], .noUi-handle, [role="listbox"], ' +
                   '[role="combobox"], input:not([type="radio"]):not([type="checkbox"]):not([type="button"])';
  const ARROW_KEYS = 'input[type="radio"], [role="radio"], [role="radiogroup"]';
  let current = 0;       // 0-based screen shown (or in view)
  let presenting = false;

  const headings = () => [...document.querySelectorAll('.jp-RenderedMarkdown h2')];
  // The cells of the page: the children of the element that holds every heading's cell.
  function screens() {
    const hs = headings();
    if (!hs.length) return [];
    let box = hs[0].parentElement;
    while (box && !hs.every(h => box.contains(h))) box = box.parentElement;
    if (hs.length === 1) while (box && box.parentElement && box.children.length < 2) box = box.parentElement;
    const units = [...box.children];
    const starts = hs.map(h => units.findIndex(u => u.contains(h)));
    return starts.map((s, k) => ({
      heading: hs[k],
      units: units.slice(k === 0 ? 0 : s, k + 1 < starts.length ? starts[k + 1] : units.length),
      all: units,
    }));
  }

  const nav = document.createElement('nav');
  nav.className = 'mha-presenter';
  nav.setAttribute('aria-label', 'screens');
  nav.innerHTML =
    '<button type="button" class="mha-prev" aria-label="previous screen (Page Up)">◀</button>' +
    '<span class="mha-position" role="status" aria-live="polite"></span>' +
    '<button type="button" class="mha-next" aria-label="next screen (Page Down)">▶</button>' +
    '<button type="button" class="mha-mode"></button>';
  document.body.appendChild(nav);
  const position = nav.querySelector('.mha-position');
  const mode = nav.querySelector('.mha-mode');

  function label(all) {
    const n = all.length;
    position.textContent = n ? `${current + 1} / ${n}` : '';
    position.title = n ? all[current].heading.textContent.trim() : '';
    mode.textContent = presenting ? 'all screens' : 'one screen';
    mode.setAttribute('aria-label', presenting ? 'show all screens on one page (Escape)'
                                               : 'show one screen at a time');
    document.body.classList.toggle('mha-presenting', presenting);
  }

  function show(k, {focus = true, push = true} = {}) {
    const all = screens();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, k));
    presenting = true;
    const on = new Set(all[current].units);
    for (const unit of all[0].all) unit.classList.toggle('mha-off', !on.has(unit));
    if (push) history.replaceState(null, '', `#screen-${current + 1}`);
    window.scrollTo(0, 0);
    // Voila scrolls a panel of its own, not the window: every scrolled ancestor back to its top.
    for (let e = all[current].heading.parentElement; e; e = e.parentElement) if (e.scrollTop) e.scrollTop = 0;
    label(all);
    window.dispatchEvent(new Event('resize'));  // widgets that were hidden measure themselves again
    if (focus) {
      const h = all[current].heading;
      h.setAttribute('tabindex', '-1');
      h.focus({preventScroll: true});
    }
  }

  function showAll({push = true} = {}) {
    const all = screens();
    presenting = false;
    for (const unit of (all[0] ? all[0].all : [])) unit.classList.remove('mha-off');
    if (push) history.replaceState(null, '', '#all');
    label(all);
    window.dispatchEvent(new Event('resize'));
    if (all[current]) all[current].heading.scrollIntoView();
  }

  function fromHash() {
    const m = /^#screen-(\d+)$/.exec(location.hash);
    if (m) show(Number(m[1]) - 1, {focus: false, push: false});
    else if (location.hash === '#all' && presenting) showAll({push: false});
  }

  function step(delta) {
    show((presenting ? current : inView()) + delta);
  }

  // On the scrolling page: the last screen whose heading is above the upper third of the window.
  function inView() {
    const hs = headings();
    let k = 0;
    hs.forEach((h, i) => { if (h.getBoundingClientRect().top < window.innerHeight / 3) k = i; });
    return k;
  }

  document.addEventListener('keydown', event => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target instanceof Element ? event.target : null;
    if (target && target.closest(ALL_KEYS)) return;  // the control's own keys
    if (target && target.closest(ARROW_KEYS) && event.key.startsWith('Arrow')) return;
    if (event.key in KEYS) step(KEYS[event.key]);
    else if (presenting && event.key === 'Home') show(0);
    else if (presenting && event.key === 'End') show(screens().length - 1);
    else if (presenting && event.key === 'Escape') showAll();
    else return;
    event.preventDefault();
  });
  nav.querySelector('.mha-prev').addEventListener('click', () => step(-1));
  nav.querySelector('.mha-next').addEventListener('click', () => step(1));
  mode.addEventListener('click', () => (presenting ? showAll() : show(inView())));
  window.addEventListener('hashchange', fromHash);
  // Scroll events do not bubble: caught on their way down, from the window or from Voila's own panel.
  document.addEventListener('scroll', () => { if (!presenting) { current = inView(); label(screens()); } },
                            {passive: true, capture: true});

  // Headings may be rendered after this script runs: wait for them, then open the URL's screen.
  let tries = 0;
  const start = () => {
    if (!headings().length && tries++ < 600) { setTimeout(start, 100); return; }
    label(screens());
    fromHash();
  };
  start();
  window.mhaPresenter = {show, showAll, screens, get current() { return current; },
                         get presenting() { return presenting; }};
})();
