"""What the browser tests check on a page of the built site, as JavaScript run in the page and as check functions
for :func:`site_browser.sweep` (each ``check(page, name, record)`` stores its findings in the page's record; the
tests in ``test_browser*.py`` assert on them).

Reading checks come first and the controls last, since operating a control changes what is drawn.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from site_browser import AXE, AXE_TAGS, SITE

# Controls on the site: kernel-free twins of live controls (transformer_lib.book.controls: HTML menus and plotly
# sliders or menus), the pretrained appendix's explorer, and any other <select> or plotly control. A page whose HTML
# holds one of these marks must show at least one working control in the browser.
CONTROL_MARKS = re.compile(r'"(sliders|updatemenus)": \[\{|tl-precomputed|<select|createElement\("select"\)')


# ipywidgets controls are dead without a kernel: none may reach the site (their outputs are removed at build time).
IPYWIDGET_CONTROLS = """() => [...document.querySelectorAll('.jupyter-widgets, .widget-subarea, [class*="widget-"]')]
  .filter(el => el.matches('input, select, button, textarea, .widget-slider, .widget-hslider, .widget-vslider,'
                           + ' .widget-dropdown, .widget-text, .widget-toggle-buttons, .widget-checkbox, .widget-play')
                || el.querySelector('input, select, button, textarea'))
  .map(el => el.className)"""


PLOTLY_CONTROLLED = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].filter(d => d.layout &&"
    " ((d.layout.sliders || []).length || (d.layout.updatemenus || []).length))"
)


PRESS_EVERY_PLOTLY_CONTROL = f"""async () => {{
  // For each plotly figure with controls, and each of its sliders and menus: press a step other than the active
  // one, as plotly does when the reader moves it, and report whether what is drawn (traces shown, layout) changed.
  const drawn = gd => JSON.stringify([gd.data.map(t => t.visible), gd.layout],
      (k, v) => (k.startsWith('_') || k === 'sliders' || k === 'updatemenus') ? undefined : v);
  const results = [];
  for (const gd of ({PLOTLY_CONTROLLED})()) {{
    const controls = [...(gd.layout.sliders || []), ...(gd.layout.updatemenus || [])];
    for (let c = 0; c < controls.length; c++) {{
      const steps = controls[c].steps || controls[c].buttons;
      const active = controls[c].active || 0;
      const step = steps[active === steps.length - 1 ? 0 : steps.length - 1];
      const before = drawn(gd);
      await Plotly[step.method](gd, ...step.args);
      results.push({{figure: gd.id, control: c, changed: drawn(gd) !== before}});
    }}
  }}
  return results;
}}"""


OVERFLOW = """() => {
  const article = document.querySelector('article.bd-article');
  if (!article) { return []; }
  const right = article.getBoundingClientRect().right + 1;
  const scrolls = el => { for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) { return true; } } return false; };
  return [...article.querySelectorAll('*')].filter(el => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > right && !scrolls(el); })
    .map(el => `${el.tagName}.${el.className} +${Math.round(el.getBoundingClientRect().right - right)}px: `
               + (el.innerText || '').slice(0, 40));
}"""


PHONE_FIT = r"""() => {
  const problems = [];
  // a heatmap's plot (its panels, from the first one's left to the last one's right) uses most of the figure's
  // width, or has square cells of 36 px or more (a small grid); its colour bar goes under it (plotly-theme.js)
  document.querySelectorAll('.tl-plotly-figure.js-plotly-plot').forEach(gd => {
    const heat = (gd._fullData || []).filter(t => t.type === 'heatmap' && t.visible !== false);
    if (!heat.length) { return; }
    const axes = Object.keys(gd._fullLayout).filter(k => /^xaxis\d*$/.test(k)).map(k => gd._fullLayout[k]);
    const span = Math.max(...axes.map(a => a._offset + a._length)) - Math.min(...axes.map(a => a._offset));
    const cell = gd._fullLayout.xaxis._length / heat[0].z[0].length;
    if (span < 0.7 * gd.clientWidth && cell < 36) {
      problems.push(`${gd.id}: heatmap ${Math.round(span)} of ${gd.clientWidth} px`);
    }
  });
  // a displayed formula fits the column (scaled down by fit.js), unless it would need less than 60 % of its size
  document.querySelectorAll('article.bd-article mjx-container[display="true"]').forEach(m => {
    if (m.scrollWidth > m.parentElement.clientWidth + 1 && parseFloat(m.style.fontSize || '100') > 60) {
      problems.push(`formula ${m.scrollWidth} px in ${m.parentElement.clientWidth} px: ${m.textContent.slice(0, 30)}`);
    }
  });
  // printed text that is not a table of aligned columns wraps instead of scrolling
  document.querySelectorAll('.cell_output .output.stream pre, .cell_output .output.text_plain pre').forEach(pre => {
    if (!window.tlLooksTabular(pre.textContent) && pre.scrollWidth > pre.clientWidth + 1) {
      problems.push(`printed text scrolls: ${pre.textContent.slice(0, 40)}`);
    }
  });
  return problems;
}"""


RAW_MATH = r"""() => {
  const article = document.querySelector('article.bd-article');
  if (!article) { return []; }
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .tl-source, .cell_input')
      .forEach(el => el.remove());
  return (copy.textContent.match(/.{0,30}(\\\(|\\\[|\$).{0,30}/g) || []);
}"""


# Text in figures: every title, axis title, tick label, legend entry, annotation, colour bar label, menu and slider
# label of every plotly figure, as four corners on the screen (rotated labels too); two that intersect (by more
# than a pixel) or one that leaves its figure is a problem, and so is one smaller than min_px.
FIGURE_TEXT = r"""(minPx) => {
  // Every text of every plotly figure (titles, axis titles, tick labels, legend, annotations, colour bars, menus,
  // sliders): its four corners on the screen, from its own box and its transform (rotated tick labels too).
  const SELECTOR = 'text.gtitle, text.xtitle, text.ytitle, g[class$="tick"] > text, '
    + 'text.legendtext, g.annotation-text-g text, text.annotation-text, text.cbtitle, .cbaxis text, '
    + 'text.updatemenu-item-text, text.slider-label, .slider-labels text, text.legendtitletext';
  const problems = [];
  const corners = el => {
    const b = el.getBBox(), m = el.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const shrink = (poly, by) => { // a little inside, so that boxes that only touch do not count
    const cx = poly.reduce((s, p) => s + p[0], 0) / 4, cy = poly.reduce((s, p) => s + p[1], 0) / 4;
    return poly.map(([x, y]) => { const dx = x - cx, dy = y - cy, d = Math.hypot(dx, dy) || 1;
      return [x - by * dx / d, y - by * dy / d]; });
  };
  const separated = (a, b) => { // separating-axis test for two convex quadrilaterals
    for (const poly of [a, b]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
        const pa = a.map(p => p[0] * nx + p[1] * ny), pb = b.map(p => p[0] * nx + p[1] * ny);
        if (Math.max(...pa) < Math.min(...pb) || Math.max(...pb) < Math.min(...pa)) { return true; }
      }
    }
    return false;
  };
  document.querySelectorAll('.js-plotly-plot').forEach(gd => {
    const name = gd.id + ' ' + ((gd.layout.title && gd.layout.title.text) || '').slice(0, 40);
    const box = gd.getBoundingClientRect();
    const texts = [...gd.querySelectorAll(SELECTOR)].filter(el => {
      if (!el.textContent.trim()) { return false; }
      for (let p = el; p && p !== gd; p = p.parentElement) {
        const s = getComputedStyle(p);
        if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) { return false; }
      }
      const b = el.getBBox(); return b.width > 0 && b.height > 0;
    }).map(el => { const m = el.getScreenCTM();  // the font size as drawn: its CSS size times the SVG's scale
      return {el, text: el.textContent.trim().slice(0, 30), poly: corners(el),
              size: parseFloat(getComputedStyle(el).fontSize) * Math.hypot(m.a, m.b)}; });
    texts.forEach(t => {
      if (minPx && t.size < minPx - 0.01) { problems.push(`${name}: "${t.text}" at ${t.size.toFixed(1)} px`); }
      const xs = t.poly.map(p => p[0]), ys = t.poly.map(p => p[1]);
      if (Math.min(...xs) < box.left - 1 || Math.max(...xs) > box.right + 1 || Math.min(...ys) < box.top - 1
          || Math.max(...ys) > box.bottom + 1) { problems.push(`${name}: "${t.text}" leaves the figure`); }
    });
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = shrink(texts[i].poly, 1), b = shrink(texts[j].poly, 1);
        if (!separated(a, b)) { problems.push(`${name}: "${texts[i].text}" overlaps "${texts[j].text}"`); }
      }
    }
  });
  return problems;
}"""


MIN_PHONE_TEXT_PX = 9


# A figure's title, subplot titles and axis titles break into lines (plotly's <tspan class="line">) between words:
# never inside one of the figure's Chinese words (its line_words, found by jieba with the glossary's terms when the
# site was built: "解码 / 器" is a problem), and no line begins with a closing mark (，：）”).
WORD_BREAKS = r"""() => {
  const problems = [];
  document.querySelectorAll('.js-plotly-plot').forEach(gd => {
    const words = gd.tlLineWords || [];
    gd.querySelectorAll('text.gtitle, g.annotation-text-g text, text.xtitle, text.ytitle').forEach(el => {
      const lines = [...el.querySelectorAll('tspan.line')].map(t => t.textContent.trim()).filter(Boolean);
      for (let i = 1; i < lines.length; i++) {
        const before = lines[i - 1], after = lines[i];
        const inside = words.find(w => [...w].slice(1).some((_, k) =>
          before.endsWith(w.slice(0, k + 1)) && after.startsWith(w.slice(k + 1))));
        if (inside || /^[，。、；：！？）”》]/.test(after)) {
          const where = `${gd.id}: "…${before.slice(-6)} / ${after.slice(0, 6)}…"`;
          problems.push(inside ? `${where} breaks ${inside}` : `${where}: a line begins with a closing mark`);
        }
      }
    });
  });
  return problems;
}"""


DIAGRAMS = """() => {
  const article = document.querySelector('article.bd-article');
  if (!article) { return []; }
  const right = article.getBoundingClientRect().right + 1;
  const inside = (a, b) => a.left >= b.left - 1.5 && a.right <= b.right + 1.5 && a.top >= b.top - 1.5
                           && a.bottom <= b.bottom + 1.5;
  return [...document.querySelectorAll('.tl-plotly-figure')]
    .filter(gd => gd.layout && gd.layout.meta && gd.layout.meta.fit_text_width)
    .map(gd => {
      const problems = [], shapes = gd.layout.shapes || [], notes = gd.layout.annotations || [];
      if (!gd.querySelector('.main-svg') || !shapes.length || !notes.length) { problems.push('not drawn'); }
      const svg = gd.querySelector('.main-svg');
      if (Math.max(gd.getBoundingClientRect().right, svg ? svg.getBoundingClientRect().right : 0) > right) {
        problems.push('runs out of the column');
      }
      let measured = 0;
      notes.forEach((note, i) => {
        const s = shapes.findIndex(sh => sh.type === 'rect' && note.name && sh.name === note.name);
        const text = gd.querySelector(`g.annotation[data-index="${i}"] text`);
        const box = gd.querySelector(`.shapelayer path[data-index="${s}"]`);
        if (s < 0 || !text || !box || !note.text) { return; }
        measured += 1;
        if (!inside(text.getBoundingClientRect(), box.getBoundingClientRect())) {
          problems.push(`label "${note.text.slice(0, 30)}" spills out of its box`);
        }
      });
      return {title: (gd.layout.title && gd.layout.title.text) || '', measured, problems,
              height: Math.round(gd.getBoundingClientRect().height)};
    });
}"""


DRAWER_OPEN = """drawer => { const d = document.querySelector(drawer);
  return !!d && d.open && [...d.querySelectorAll('a')].some(a => a.getBoundingClientRect().width > 0); }"""


VISIBLE_MENUS_STATE = """gd => JSON.stringify([gd.data.map(t => t.visible), gd.layout.title && gd.layout.title.text])"""


CONTRAST = r"""() => {
  // WCAG contrast of each control's text against what is behind it: HTML buttons, menus and folds in the article,
  // and the buttons of plotly's own menus (text and button drawn in SVG)
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const opaque = c => { const v = rgb(c); return v.length === 3 || (v.length === 4 && v[3] > 0.5); };
  const behind = el => { for (let e = el; e; e = e.parentElement) { const b = getComputedStyle(e).backgroundColor;
    if (opaque(b)) { return b; } } return getComputedStyle(document.body).backgroundColor; };
  const low = [];
  document.querySelectorAll('article.bd-article button, article.bd-article select, article.bd-article summary')
    .forEach(el => { if (!el.getClientRects().length || !el.innerText.trim()) { return; }
      const r = ratio(getComputedStyle(el).color, behind(el));
      if (r < 4.5) { low.push(`${el.tagName} "${el.innerText.trim().slice(0, 30)}": ${r.toFixed(1)}`); } });
  document.querySelectorAll('.updatemenu-button').forEach(g => {
    const rect = g.querySelector('rect'), text = g.querySelector('text');
    if (!rect || !text || !text.textContent.trim()) { return; }
    const r = ratio(getComputedStyle(text).fill, getComputedStyle(rect).fill);
    if (r < 4.5) { low.push(`plotly menu "${text.textContent.trim()}": ${r.toFixed(1)}`); }
  });
  return low;
}"""


RUN_AXE = """async ([tags, contrastSelector]) => {
  // contrastSelector: the elements whose colour contrast is checked (null: axe's own, every element)
  // A block that waits until the reader comes near it (content-visibility: auto, the API page's entries: book.css) is
  // drawn first, as a reader who reaches it sees it: axe finds the colour behind a text by hit-testing, which passes
  // through what is not drawn yet (it measured the [source] links of far entries against the wrong background).
  document.querySelectorAll('.bd-article *').forEach(el => {
    if (getComputedStyle(el).contentVisibility === 'auto') { el.style.contentVisibility = 'visible'; } });
  axe.reset();  // a page axe already ran on (test_browser_a11y's planted faults) starts from axe's own rules
  if (contrastSelector) { axe.configure({rules: [{id: "color-contrast", selector: contrastSelector}]}); }
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, help: v.help, n: v.nodes.length,
                                      first: v.nodes.slice(0, 3).map(n => n.html.slice(0, 160))}));
}"""
# What the Chinese edition's reading checks read (test_browser_i18n.py): the prose, the page's own words (not
# the printed output of the code), the sidebar's part captions, the search fields, the code toggle's label, and
# each figure's text and text alternative.
ZH_READING = """() => {
  const prose = [...document.querySelectorAll('article p, article h1, article h2, article li')]
    .filter(e => !e.closest('.cell_output, .output, pre, code, .bibliography, .citation, .citation-list'))
    .map(e => e.innerText).join(' ');
  const a = document.querySelector('article').cloneNode(true);
  a.querySelectorAll('.cell_output, pre, code').forEach(e => e.remove());
  const toggle = document.querySelector('.tl-hide-code-label');
  return {prose, shown: a.textContent,
          has_code: !!document.querySelector('.cell .cell_input'), code_toggle: toggle ? toggle.innerText : null,
          captions: [...document.querySelectorAll('.caption-text')].map(e => e.textContent),
          search: [...document.querySelectorAll('input[name=q]')].map(e => e.placeholder),
          figure_text: [...document.querySelectorAll('.js-plotly-plot')].map(e => e.textContent),
          figure_labels: [...document.querySelectorAll('.tl-plotly-figure')].map(e => e.ariaLabel)};
}"""
TOOLBARS = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd._context.showSendToCloud"
    " || gd._context.displaylogo || gd._context.displayModeBar !== false"
    ' || gd.querySelector(\'.modebar-btn[data-title*="Share"], .modebar-btn[data-title*="Cloud"]\'))'
    ".map(gd => gd.id)"
)
PLOTLY_DROPDOWNS = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd =>"
    " (gd.layout.updatemenus || []).filter(m => m.type !== 'buttons').map(m => gd.id))"
)


def figures_drawn(page, name: str, record: dict[str, Any]) -> None:
    """How many plotly figures the page holds and how many drew their SVG; whether plotly.js failed to load."""
    record["figures"] = page.locator(".tl-plotly-figure, .plotly-graph-div").count()
    record["drawn"] = page.locator(".js-plotly-plot .main-svg").count()
    record["no_plotly"] = "plotly.js did not load" in page.inner_text("body")


def scans(scripts: dict[str, str]):
    """A check that runs each JavaScript scan (returning a list of problems) and keeps the first three."""

    def check(page, name: str, record: dict[str, Any]) -> None:
        record.setdefault("scans", {})
        for scan, script in scripts.items():
            record["scans"][scan] = page.evaluate(script)[:3]

    check.__name__ = "scans"
    return check


DESKTOP_SCANS = {
    "overflow": OVERFLOW,
    "raw_math": RAW_MATH,
    "figure_text": f"() => ({FIGURE_TEXT})(0)",
    "word_breaks": WORD_BREAKS,
}
PHONE_SCANS = {
    "overflow": OVERFLOW,
    "phone_fit": PHONE_FIT,
    "figure_text": f"() => ({FIGURE_TEXT})({MIN_PHONE_TEXT_PX})",
    "word_breaks": WORD_BREAKS,
}


def diagrams(page, name: str, record: dict[str, Any]) -> None:
    """The diagrams drawn from live modules on this page, each with its measured labels and problems."""
    record["diagrams"] = page.evaluate(DIAGRAMS)


# the icons are glyphs of the theme's Font Awesome web fonts (its fontawesome.js, which made them SVGs, is left out:
# issue 41, text first): axe reads the page once those fonts have loaded
ICONS_DRAWN = "() => document.fonts.status === 'loaded'"


def axe(page, name: str, record: dict[str, Any]) -> None:
    """axe-core's WCAG 2.0/2.1 A and AA violations on the page as it is now (injected here, never by the site), once
    the icon fonts have loaded: every rule on every element."""
    page.wait_for_function(ICONS_DRAWN, timeout=5000)
    page.add_script_tag(path=str(AXE))
    record["axe"] = page.evaluate(RUN_AXE, [AXE_TAGS, None])


def axe_but_code_contrast(code_checked_on: frozenset[str]):
    """:func:`axe`, except that the contrast of a plotly figure's text is not measured (axe cannot tell its
    background: always "incomplete", never a violation, test_browser_a11y proves it), and on a page outside
    ``code_checked_on`` (:func:`code_sample`) nor that of code (elements inside ``.highlight``): its colours are
    checked on the sample."""

    def check(page, name: str, record: dict[str, Any]) -> None:
        page.wait_for_function(ICONS_DRAWN, timeout=5000)
        page.add_script_tag(path=str(AXE))
        record["axe_code_contrast"] = name in code_checked_on
        record["axe"] = page.evaluate(RUN_AXE, [AXE_TAGS, NOT_FIGURES if name in code_checked_on else NOT_CODE])

    check.__name__ = "axe"
    return check


# Code's colours. axe's color-contrast rule spent most of its time in code: 1,039 of the 1,606 elements it measured on
# chapter 3 are inside a code block (.highlight: code cells, library source, printed output, tracebacks), each one
# costing a hit test. An element in a code block takes its colours from stylesheets that every page shares
# (pygments' token classes, myst-nb's ANSI classes, the theme's code panels), chosen by its tag and classes, those
# of its ancestors inside the block, and the classes around the block (a cell's input or output, a library-source
# panel, a doctest, an admonition). code_colour_keys lists those combinations from a page's HTML; code_sample picks
# pages that together hold every combination on the site (English and Chinese), and there axe measures the contrast
# of code too; on the other pages its color-contrast rule skips code (NOT_CODE) and checks everything else. A plotly
# figure's text (155 of the 619 elements left on chapter 4) is skipped everywhere: axe cannot tell what is behind SVG
# text, so it only ever reports it as "incomplete", which no test reads.
NOT_FIGURES = "*:not(.js-plotly-plot *)"
NOT_CODE = "*:not(.js-plotly-plot *):not(.highlight *)"
# classes that mark what a script or the build does with an element, never its colours
NOT_COLOURING = ("mathjax_ignore", "tex2jax_ignore", "notranslate")
_SCRIPTS = re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I)
_TAG = re.compile(r"""<(/?)([a-zA-Z][\w-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_CLASS = re.compile(r"""\bclass=(?:"([^"]*)"|'([^']*)')""")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def code_colour_keys(html: str) -> set[tuple[frozenset[str], tuple[str, ...]]]:
    """Each element inside a code block of the page's article, as what chooses its colours: (the classes around its
    block, less cell tags and NOT_COLOURING; the tag.classes path from the block down to it)."""
    html = _SCRIPTS.sub("", html)
    stack: list[tuple[str, tuple[str, ...]]] = []
    keys = set()
    for m in _TAG.finditer(html, max(html.find("<article"), 0)):
        closing, tag = m.group(1), m.group(2).lower()
        if tag in _VOID:
            continue
        if closing:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][0] == tag:
                    del stack[i:]
                    break
            continue
        found = _CLASS.search(m.group(3))
        stack.append((tag, tuple(sorted((found.group(1) or found.group(2) or "").split())) if found else ()))
        block = next((i for i, (_, classes) in enumerate(stack) if "highlight" in classes), None)
        if block is not None:
            around = frozenset(
                c
                for _, classes in stack[:block]
                for c in classes
                if not c.startswith("tag_") and c not in NOT_COLOURING
            )
            keys.add((around, tuple(f"{t}.{'.'.join(classes)}" for t, classes in stack[block:])))
    return keys


@functools.cache
def _page_code_keys(page: str) -> frozenset:
    return frozenset(code_colour_keys((SITE / page).read_text(encoding="utf-8")))


def code_sample(pages: tuple[str, ...]) -> list[str]:
    """Pages that together hold every code colour combination (code_colour_keys) of ``pages``, chosen greedily (the
    page with the most not yet held, first)."""
    left, chosen = set().union(*(_page_code_keys(p) for p in pages)), []
    while left:
        best = max(pages, key=lambda p: len(_page_code_keys(p) & left))
        chosen.append(best)
        left -= _page_code_keys(best)
    return chosen


def zh_reading(page, name: str, record: dict[str, Any]) -> None:
    record["zh"] = page.evaluate(ZH_READING)


# what a view shows, as a fingerprint of its HTML computed in the page (a view holding drawn figures serializes to
# hundreds of KB: sent to Python for every option of every menu, it cost more than operating the menu)
VIEW_FINGERPRINT = """v => { const html = v.innerHTML; let h = 0;
  for (let i = 0; i < html.length; i++) { h = (Math.imul(h, 31) + html.charCodeAt(i)) | 0; }
  return html.length + ':' + h; }"""


def controls(page, name: str, record: dict[str, Any]) -> None:
    """Operate every control with no kernel: each HTML menu (twins of live controls, the pretrained explorer) through
    every option, and each plotly slider or menu to another step; record those that change nothing."""
    html = (SITE / name).read_text(encoding="utf-8")
    record["promised"] = bool(CONTROL_MARKS.search(html))
    record["ipywidgets"] = page.evaluate(IPYWIDGET_CONTROLS)
    dead = []
    # the live translator's menus act when its Translate button is pressed: tests/test_browser_translator.py
    menus = page.locator("article.bd-article select:not(.tl-live-translator select)")
    for j in range(menus.count()):
        menu = menus.nth(j)
        # what the menu switches: its twin, or else the cell output (or element with an id) that holds it
        view = menu.locator(
            "xpath=ancestor::*[contains(@class, 'tl-precomputed') or contains(@class, 'cell_output') or @id][1]"
        )
        twin = view.evaluate("v => v.classList.contains('tl-precomputed')")
        before = view.evaluate(VIEW_FINGERPRINT)
        seen = set()
        for value in menu.evaluate("m => [...m.options].map(o => o.value)"):  # two settings may look alike
            menu.select_option(value)
            if twin and view.locator("[data-view]:not([hidden])").count() != 1:
                dead.append(f"menu {j}, {value}: not exactly one view shown")
            seen.add(view.evaluate(VIEW_FINGERPRINT))
        if not (len(seen) > 1 and before in seen):
            dead.append(f"menu {j} changes nothing")
    pressed = page.evaluate(PRESS_EVERY_PLOTLY_CONTROL)
    dead += [f"plotly control {p}" for p in pressed if not p["changed"]]
    record["dead_controls"] = dead
    record["controls_found"] = menus.count() + len(pressed)


def phone_touch(page, name: str, record: dict[str, Any]) -> None:
    """On a touch phone: tap ☰ and "On this page" and see their drawers open; list plotly dropdowns left (they
    ignore taps) and toolbars that show; tap each HTML menu over a figure, pick another entry, see the figure
    change."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    drawers, menus, tapped = [], [], []
    for toggle, drawer in (
        (".primary-toggle", "#pst-primary-sidebar-modal"),
        (".secondary-toggle", "#pst-secondary-sidebar-modal"),
    ):
        buttons = page.locator(f"{toggle}:visible")
        if not buttons.count():
            if toggle == ".primary-toggle" or page.locator(toggle).count():
                drawers.append(f"no visible {toggle}")
            continue
        buttons.first.tap()
        try:
            page.wait_for_function(DRAWER_OPEN, arg=drawer, timeout=5_000)
        except PlaywrightTimeout:
            drawers.append(f"tapping {toggle} did not open {drawer}")
            continue
        page.keyboard.press("Escape")
        page.wait_for_function(f"() => !document.querySelector('{drawer}').open", timeout=5_000)
    record["plotly_dropdowns"] = page.evaluate(PLOTLY_DROPDOWNS)
    record["toolbars"] = page.evaluate(TOOLBARS)
    selects = page.locator(".tl-plotly-menus select")
    for j in range(selects.count()):
        select = selects.nth(j)
        figure = select.locator(
            "xpath=ancestor::div[contains(@class, 'tl-plotly-menus')][1]"
            "/following-sibling::div[contains(@class, 'tl-plotly-figure')][1]"
        )
        before = figure.evaluate(VISIBLE_MENUS_STATE)
        select.scroll_into_view_if_needed()
        select.tap()
        values = select.evaluate("s => [...s.options].map(o => o.value)")
        current = select.evaluate("s => s.value")
        select.select_option([v for v in values if v != current][-1])
        try:
            page.wait_for_function(
                f"gd => ({VISIBLE_MENUS_STATE})(gd) !== {before!r}", arg=figure.element_handle(), timeout=5_000
            )
            tapped.append(j)
        except PlaywrightTimeout:
            menus.append(f"menu {j}: the figure did not change")
    record["drawers"], record["dead_menus"], record["tapped_menus"] = drawers, menus, tapped


# ---------------------------------------------------------------------------------------------------------------------
# The sweeps the tests share (conftest.py's ``sweeps`` fixture): each is made once, when a test first asks for it

# Kinds of control, by what a page's HTML holds: the dark phone view of axe runs on the first page with each kind
# (and on the introduction and the glossary), so that every kind is checked dark without sweeping every page.
CONTROL_KINDS = {
    "plotly slider": '"sliders": [{',
    "plotly menu": '"updatemenus": [{',
    "twin of a live control": "tl-precomputed",
    "HTML menu": "<select",
    "live translator": "live-translator",
    "hint or solution fold": "<details",
}


def dark_sample(pages: list[str]) -> list[str]:
    """The introduction, the glossary and the first page holding each kind of control in :data:`CONTROL_KINDS`."""
    chosen = [p for p in pages if p.endswith(("book/intro.html", "book/glossary.html"))]
    for mark in CONTROL_KINDS.values():
        first = next((p for p in pages if mark in (SITE / p).read_text(encoding="utf-8")), None)
        if first and first not in chosen:
            chosen.append(first)
    return chosen


class Sweeps:
    """The site swept once per language and view, on demand: ``desktop("en")``, ``phone("zh")``, ``dark_axe()``."""

    def __init__(self, browser, site_url: str, only: set[str] | None = None) -> None:
        self.browser, self.site_url, self.only = browser, site_url, only
        self._done: dict[str, dict[str, dict]] = {}

    def _pages(self, lang: str) -> list[str]:
        """The pages of that language, or those of them that the selected tests ask about (conftest.py)."""
        from site_browser import content_pages, zh_checked

        pages = content_pages() if lang == "en" else [p for p in zh_checked() if p != "zh/index.html"]
        return [p for p in pages if self.only is None or p in self.only]

    def _sweep(
        self, key: str, pages: list[str], options: dict, checks: list, settle_ms: int = 100, withheld: tuple = ()
    ) -> dict:
        from site_browser import sweep

        if key not in self._done:
            self._done[key] = sweep(self.browser, self.site_url, key, pages, options, checks, settle_ms, withheld)
        return self._done[key]

    def code_checked_on(self) -> list[str]:
        """The pages on which axe measures the contrast of code: :func:`code_sample` of every page the desktop
        sweeps visit (English and Chinese), whichever of them a run selects."""
        from site_browser import content_pages, zh_checked

        return code_sample(tuple(content_pages() + [p for p in zh_checked() if p != "zh/index.html"]))

    def axe_check(self):
        return axe_but_code_contrast(frozenset(self.code_checked_on()))

    def desktop(self, lang: str = "en") -> dict[str, dict]:
        """Every page at 1280 x 900, light: drawn, scanned, its diagrams measured, axe, then its controls operated."""
        from site_browser import DESKTOP

        reading = [zh_reading] if lang == "zh" else []
        checks = [figures_drawn, scans(DESKTOP_SCANS), diagrams, *reading, self.axe_check(), controls]
        return self._sweep(f"desktop-{lang}", self._pages(lang), DESKTOP, checks)

    def phone(self, lang: str = "en") -> dict[str, dict]:
        """Every page on a 390 x 844 touch phone: scanned, its diagrams measured, then its drawers and menus tapped
        (the phone relayout follows the first drawing: a longer settle)."""
        from site_browser import PHONE

        checks = [scans(PHONE_SCANS), diagrams, phone_touch]
        return self._sweep(f"phone-{lang}", self._pages(lang), PHONE, checks, settle_ms=200)

    def dark_pages(self) -> list[str]:
        """:func:`dark_sample` of the English pages and their Chinese twins (all of them, whichever a run selects)."""
        from site_browser import content_pages, zh_pages

        english = dark_sample(content_pages())
        return english + [p for p in zh_pages() if p.removeprefix("zh/") in english]

    def dark_code_checked_on(self) -> list[str]:
        """The dark pages on which axe measures the contrast of code: :func:`code_sample` of :meth:`dark_pages` (code's
        dark colours, every combination the dark pages hold, measured once each)."""
        return code_sample(tuple(self.dark_pages()))

    def dark_axe(self) -> dict[str, dict]:
        """axe on a dark touch phone with ``reader.js`` withheld (the HTML the build writes must be right before any of
        our scripts names a control), on :meth:`dark_pages`; the contrast of code on :meth:`dark_code_checked_on`."""
        from site_browser import PHONE

        pages = [p for p in self.dark_pages() if self.only is None or p in self.only]
        options = {**PHONE, "color_scheme": "dark"}
        check = axe_but_code_contrast(frozenset(self.dark_code_checked_on()))
        return self._sweep("phone-dark-axe", pages, options, [check], settle_ms=200, withheld=("reader.js",))
