// Plotly figures on the site: they follow the light/dark theme, and diagrams fit their text to narrow screens.
// Theme: plotly figures follow the site's light/dark theme (pydata-sphinx-theme sets <html data-theme="dark">).
// Figures are drawn with a white template; in dark mode their backgrounds become transparent and their text and
// grid lines light, and they switch back when the reader toggles the theme. Loaded on the pages that hold a figure, in
// place of plotly.min.js: it fetches plotly.js itself when the first figure is about to be drawn (see "Text first").
(function () {
  // Text first. plotly.min.js (4.8 MB) is not in any page's head, where parsing it held every chapter's text back
  // 2-3 s (issue 41): it is fetched once, after the page's load event, when the first figure comes near the
  // viewport (or the page is printed, or a test asks for every figure), and plotly's locale for the page's language
  // with it (transformer_lib.site.figures.PLOTLY_LOCALES: the toolbar's tooltips in Chinese on the Chinese pages).
  // Both come from the _static folder this script was loaded from (the Chinese pages use the English site's).
  var here = document.currentScript && document.currentScript.src;
  var STATIC = here ? here.replace(/[^/]*$/, "") : "_static/";
  var loaded = {};  // url -> the promise of its script
  function script(url) {
    if (!loaded[url]) {
      loaded[url] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = url;
        s.onload = resolve;
        s.onerror = function () { reject(new Error("could not load " + url)); };
        document.head.appendChild(s);
      });
    }
    return loaded[url];
  }
  var pageLoaded = new Promise(function (resolve) {  // not before the load event, which it would hold back
    if (document.readyState === "complete") { resolve(); } else { window.addEventListener("load", resolve); }
  });
  window.tlLoadPlotly = function (locale, now) {  // resolves with window.Plotly (and `locale` registered)
    var ready = now ? Promise.resolve() : pageLoaded;
    return ready.then(function () { return window.Plotly || script(STATIC + "plotly.min.js"); }).then(function () {
      // a locale file registers itself with Plotly (plotly.js's dist/plotly-locale-*.js)
      return locale ? script(STATIC + "vendor/plotly/plotly-locale-" + locale.toLowerCase() + ".js") : null;
    }).then(function () { return window.Plotly; });
  };
  var DARK = {"paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "font.color": "#ced6dd",
              "title.font.color": "#ced6dd"};
  var LIGHT = {"paper_bgcolor": "white", "plot_bgcolor": "white", "font.color": "#2a3f5f",
               "title.font.color": "#2a3f5f"};
  function axes(gd, dark) {
    var update = {};
    Object.keys(gd.layout || {}).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        update[key + ".gridcolor"] = dark ? "#3a4450" : "#EBF0F8";
        update[key + ".zerolinecolor"] = dark ? "#5a6470" : "#EBF0F8";
      }
    });
    return update;
  }
  // plotly's menus and sliders keep light buttons whatever the text colour: in dark mode their text (light) would
  // stand on them at a contrast of 1.4. plotly.js fixes the active button's colour (a near-white, not an attribute),
  // so in dark mode menus keep light buttons with dark text; sliders get light text on the dark page.
  function controls(gd, dark) {
    var update = {};
    if ((gd.layout.updatemenus || []).length) {  // whole menus, so that light mode drops them again
      update.updatemenus = gd.layout.updatemenus.map(function (m) {
        var copy = Object.assign({}, m, {font: Object.assign({}, m.font, {color: dark ? "#1f2328" : undefined})});
        ["bgcolor", "bordercolor"].forEach(function (k) { delete copy[k]; });
        return dark ? Object.assign(copy, {bgcolor: "#dfe3e8", bordercolor: "#8a939c"}) : copy;
      });
    }
    (gd.layout.sliders || []).forEach(function (s, i) {
      var key = "sliders[" + i + "].";
      update[key + "bgcolor"] = dark ? "#5a6470" : null;
      update[key + "activebgcolor"] = dark ? "#8ab4f8" : null;
      update[key + "bordercolor"] = dark ? "#8a939c" : null;
      update[key + "font.color"] = dark ? "#e9ecef" : null;
      update[key + "currentvalue.font.color"] = dark ? "#e9ecef" : null;
    });
    return update;
  }
  function isDark() {  // "auto" (the reader's system setting) until the theme's script has resolved it
    var theme = document.documentElement.dataset.theme;
    return theme === "dark" || (theme === "auto" && !!window.matchMedia &&
                                window.matchMedia("(prefers-color-scheme: dark)").matches);
  }
  function apply(gd) {
    if (!window.Plotly || !gd || !gd.layout) { return; }
    var dark = isDark();
    if (dark === (gd.tlDark === true)) { return; }  // drawn light, and still light: nothing to do
    gd.tlDark = dark;
    window.Plotly.relayout(gd, Object.assign({}, dark ? DARK : LIGHT, axes(gd, dark), controls(gd, dark)));
  }
  // Phones. The figures are laid out for the desktop column (about 690 px); at 360 px their margins, a colour bar
  // beside the plot and a legend on the right would leave the plot a third of the width. So, before the figure is
  // first drawn (window.tlPlotlyPrepare, called by transformer_lib.site.figures): thin margins, small tick labels, the
  // colour bar and the legend under the plot, the controls under them; after it is drawn: square heatmap cells
  // as large as the width allows, with no empty band.
  var BELOW = 44;  // px the horizontal colour bar takes under a heatmap: bar, tick labels and a gap
  function set(obj, key, values) { obj[key] = Object.assign({}, obj[key] || {}, values); return obj[key]; }
  function isDiagram(layout) { return !!(layout.meta && layout.meta.fit_text_width); }
  function phoneSlider(slider, below) {  // a slider beside a menu (attention grids) goes under it, full width
    return Object.assign({}, slider, {x: 0, len: 1, pad: Object.assign({}, slider.pad, {t: ((slider.pad && slider.pad.t) || 0) + 65 + Math.max(0, below - 10)})});
  }
  function wrapTitle(text, room, words) {  // a title longer than the width breaks at the break nearest its middle
    if (typeof text !== "string" || width(text) * 6.6 < room || text.indexOf("<br>") >= 0) { return text; }
    var units = pieces(text, words), half = width(text) / 2, at = 0, best = -1, bestGap = Infinity;
    units.forEach(function (u, i) {  // `at`: the width before unit i
      if (i > 0 && Math.abs(at - half) < bestGap) { best = i; bestGap = Math.abs(at - half); }
      at += width(u.text) + (u.space ? 1 : 0);
    });
    if (best < 0) { return text; }
    var join = function (us) { return us.map(function (u, i) { return (i && u.space ? " " : "") + u.text; }).join(""); };
    return join(units.slice(0, best)) + "<br>" + join(units.slice(best));
  }
  function wrapStepTitles(control, room, words) {  // the titles that a slider's steps or a menu's entries put up
    (control.steps || control.buttons || []).forEach(function (step) {
      var args = step.args && step.args[1];
      if (args && typeof args["title.text"] === "string") {
        args["title.text"] = wrapTitle(args["title.text"], room, words);
      }
    });
  }
  // Menus. A plotly dropdown ignores taps on a touch screen, and a long one must be scrolled open on a desktop.
  // Before a figure is first drawn, each of its dropdown menus becomes HTML <select>s over the figure, as the
  // kernel-free twins of transformer_lib.book.controls.precomputed_html have: one per argument when the entries
  // read "name=value, name=value" for every combination (controls.precomputed), else one listing the entries.
  // Choosing an option does what the plotly entry would (Plotly.update with its arguments).
  function parseEntry(label) {  // "kind=lstm, seq_len=16" -> [["kind", "lstm"], ["seq_len", "16"]], or null
    if (typeof label !== "string") { return null; }
    var pairs = label.split(/, (?=[A-Za-z_][\w ]*=)/).map(function (part) {
      var at = part.indexOf("=");
      return at > 0 ? [part.slice(0, at), part.slice(at + 1)] : null;
    });
    return pairs.every(Boolean) ? pairs : null;
  }
  function argumentMenus(buttons) {  // [{name, values}] when the entries are every combination of named values
    var parsed = buttons.map(function (b) { return parseEntry(b.label); });
    if (!parsed.every(Boolean)) { return null; }
    var names = parsed[0].map(function (p) { return p[0]; }), count = 1;
    var same = parsed.every(function (p) {
      return p.length === names.length && p.every(function (pair, i) { return pair[0] === names[i]; });
    });
    if (!same) { return null; }
    var menus = names.map(function (name, i) {
      var values = [];
      parsed.forEach(function (p) { if (values.indexOf(p[i][1]) < 0) { values.push(p[i][1]); } });
      count *= values.length;
      return {name: name, values: values};
    });
    return count === buttons.length ? menus : null;
  }
  // The words of menus built from "name=value" entries in the page's language: fig.words, which the site's build
  // takes from the figures' catalog (transformer_lib.book.labels.menu_words); the entries themselves stay as the
  // code wrote them: they are how a choice finds its button
  function option(text, selected, shown) {
    var o = document.createElement("option");
    o.textContent = shown(text);
    o.value = text;
    o.selected = selected;
    return o;
  }
  window.tlPlotlyMenus = function (fig, el) {
    var layout = fig.layout || {}, kept = [], bar = null, words = fig.words || {};
    function shown(text) { return words[text] || text; }
    (layout.updatemenus || []).forEach(function (menu) {
      var buttons = (menu.buttons || []).filter(function (b) { return b.method && b.method !== "skip"; });
      if (menu.type === "buttons" || buttons.length < 2) { kept.push(menu); return; }
      if (!bar) {
        bar = document.createElement("div");
        bar.className = "tl-plotly-menus";
        el.parentNode.insertBefore(bar, el);
      }
      var active = buttons[menu.active || 0] || buttons[0], selects = [];
      var named = argumentMenus(buttons), current = named ? parseEntry(active.label) : null;
      (named || [{name: "view", values: buttons.map(function (b, i) { return b.label || String(i + 1); })}])
        .forEach(function (m, i) {
          var label = document.createElement("label"), select = document.createElement("select");
          label.appendChild(document.createTextNode(shown(m.name) + " "));
          m.values.forEach(function (v, j) {
            select.appendChild(option(v, current ? current[i][1] === v : buttons[j] === active, shown));
          });
          label.appendChild(select);
          bar.appendChild(label);
          selects.push(select);
        });
      function choose() {
        var values = selects.map(function (s) { return s.value; }), chosen = buttons.filter(function (b, j) {
          return named ? parseEntry(b.label).every(function (p, i) { return p[1] === values[i]; })
                       : selects[0].selectedIndex === j;
        })[0];
        if (!chosen || !window.Plotly) { return; }
        var args = chosen.args || [];
        if (chosen.method === "update" && el.tlNarrow) {
          // on a phone, plotly.js 3 throws inside one update that both restyles an attention grid's traces and
          // replaces its head slider: the same change as two calls
          window.Plotly.restyle(el, args[0] || {}).then(function () { return window.Plotly.relayout(el, args[1] || {}); });
        } else {
          window.Plotly[chosen.method].apply(null, [el].concat(args));
        }
      }
      selects.forEach(function (s) { s.addEventListener("change", choose); });
      el.tlMenus = (el.tlMenus || []).concat([menu]);  // their titles are wrapped on a phone like the others
      if ((menu.y === undefined ? 1 : menu.y) <= 0 && layout.margin && layout.margin.b > 60) {
        var freed = Math.min(layout.margin.b - 60, 60);  // the room the menu had under the plot
        layout.margin.b -= freed;
        if (layout.height) { layout.height -= freed; }
      }
    });
    if (bar) { layout.updatemenus = kept; }
  };
  window.tlPlotlyPrepare = function (fig, el) {
    var layout = fig.layout = fig.layout || {}, data = fig.data || [];
    el.tlLineWords = fig.line_words || [];  // the Chinese words a line may not break inside (see pieces)
    if (el.clientWidth >= 500 || isDiagram(layout)) { return; }
    el.tlNarrow = true;
    if (typeof layout.title === "string") { layout.title = {text: layout.title}; }
    set(set(layout, "title", {}), "font", {size: 12});
    var room = el.clientWidth - 20;  // plotly does not wrap titles: break the long ones in two lines
    layout.title.text = wrapTitle(layout.title.text, room, el.tlLineWords);
    (layout.sliders || []).concat(layout.updatemenus || [], el.tlMenus || []).forEach(function (c) {
      wrapStepTitles(c, room, el.tlLineWords);
    });
    var margin = set(layout, "margin", {});
    margin.l = Math.min(margin.l === undefined ? 60 : margin.l, 10);  // axis labels add their own room
    margin.r = Math.min(margin.r === undefined ? 20 : margin.r, 10);
    var axisBelow = 0;  // px an x axis at the bottom takes under the plot (tick labels, title)
    Object.keys(layout).forEach(function (key) {
      var axis = layout[key];
      if (!/^[xy]axis\d*$/.test(key) || !axis) { return; }
      // a log axis keeps 12 px labels: plotly draws the 2s and 5s between powers of ten at 3/4 of the size (9 px)
      set(axis, "tickfont", {size: axis.type === "log" ? 12 : 10});
      var titled = axis.title && (typeof axis.title === "string" || axis.title.text);
      if (axis.title && typeof axis.title === "object") {
        set(axis.title, "font", {size: 12});
        if (typeof axis.title.text === "string") {  // "key (attended to) · ␣ = ▁, ...": the legend on its own line
          axis.title.text = axis.title.text.replace(" · ", "<br>");
        }
      }
      if (key[0] === "x" && axis.side !== "top" && axis.visible !== false) {
        axisBelow = Math.max(axisBelow, 22 + (titled ? 20 : 0));
      }
      if (Array.isArray(axis.ticktext)) {  // long labels (whole sentences) would take half the width: cut them
        axis.ticktext = axis.ticktext.map(function (t) {
          return typeof t === "string" && t.length > 14 ? t.slice(0, 13) + "…" : t;
        });
      }
    });
    (layout.annotations || []).forEach(function (a) {  // subplot titles side by side would run into each other
      set(a, "font", {size: Math.min((a.font && a.font.size) || 12, 11)});
    });
    var below = 0;
    data.forEach(function (trace) {
      if (trace.type === "heatmap" && trace.showscale !== false) {
        set(trace, "colorbar", {orientation: "h", x: 0.5, xanchor: "center", y: 0, yanchor: "top",
                                ypad: 8 + axisBelow, thickness: 10, len: 1, lenmode: "fraction",
                                tickfont: {size: 10}});
        below = BELOW;  // margins grow by this (an x axis under the plot had its room); controls move by less
      }
    });
    // token labels under a bar chart stand upright on a phone (plotly turns them): controls under the plot move down
    var turned = 0;
    if (!layout.xaxis || layout.xaxis.side !== "top") {
      data.forEach(function (t) {
        if (t.type !== "bar" || !Array.isArray(t.x) || typeof t.x[0] !== "string") { return; }
        var longest = Math.max.apply(null, t.x.map(function (v) { return String(v).length; }));
        if (t.x.length * (longest + 1) * 6.5 > el.clientWidth - 60) { turned = Math.max(turned, Math.round(longest * 6.2)); }
      });
    }
    var sliders = layout.sliders || [], menus = layout.updatemenus || [], extra = below + turned;
    var shift = (below ? below - 10 : 0) + turned;  // how far controls under the plot move down
    if (layout.showlegend !== false && data.filter(function (t) { return t.showlegend !== false; }).length > 1) {
      // in rows under the plot, or over it when controls sit under it
      var over = sliders.length || menus.some(function (m) { return (m.y === undefined ? 1 : m.y) <= 0; });
      Object.assign(set(layout, "legend", {}), {orientation: "h", x: 0, xanchor: "left", y: over ? 1.02 : -0.2,
                                                yanchor: over ? "bottom" : "top"});
      set(layout.legend, "font", {size: 10});
    }
    menus.forEach(function (m) { set(m, "font", {size: 10}); });  // a menu's width follows its longest entry
    if (menus.some(function (m) { return m.y > 1; })) {  // buttons over the plot: the title goes above them
      margin.t = (margin.t === undefined ? 60 : margin.t) + 30;
      layout.height = (layout.height || 450) + 30;
      Object.assign(layout.title, {y: 0.99, yanchor: "top", yref: "container"});
    }
    if (sliders.length && menus.length) {
      layout.sliders = [phoneSlider(sliders[0], below)].concat(sliders.slice(1));
      menus.forEach(function (m) {  // a menu that replaces the slider (a new layer, a new set of heads) does too
        (m.buttons || []).forEach(function (b) {
          var args = b.args && b.args[1];
          if (args && args.sliders) { args.sliders = [phoneSlider(args.sliders[0], below)]; }
        });
      });
      extra += 60;
    } else if (sliders.length && shift) {
      sliders[0].pad = Object.assign({}, sliders[0].pad, {t: ((sliders[0].pad && sliders[0].pad.t) || 0) + shift});
    }
    menus.forEach(function (m) {  // menus under the plot make room for the colour bar and upright labels
      if (shift && (m.y === undefined ? 1 : m.y) <= 0) { m.pad = Object.assign({}, m.pad, {t: ((m.pad && m.pad.t) || 0) + shift}); }
    });
    if (extra) {
      margin.b = (margin.b === undefined ? 80 : margin.b) + extra;
      layout.height = (layout.height || 450) + extra;
    }
  };
  function heatmapCells(gd) {  // rows and columns of the first heatmap (its z as drawn, decoded), or null
    var t = (gd._fullData || []).filter(function (d) { return d.type === "heatmap" && d.visible === true; })[0];
    return t && t.z && t.z.length && t.z[0].length ? {rows: t.z.length, cols: t.z[0].length} : null;
  }
  function menusFromTheEdge(gd) {  // a menu under the plot starts at the figure's left edge, not the plot's
    var size = gd._fullLayout && gd._fullLayout._size, update = {};
    (gd.layout.updatemenus || []).forEach(function (m, i) {
      if (size && size.w > 0 && (m.y === undefined ? 1 : m.y) <= 0 && (m.x || 0) <= 0.01) {
        update["updatemenus[" + i + "].x"] = -(size.l - 4) / size.w;
        update["updatemenus[" + i + "].xanchor"] = "left";
      }
    });
    return Object.keys(update).length ? window.Plotly.relayout(gd, update) : Promise.resolve();
  }
  function squareCells(gd) {
    var size = gd._fullLayout && gd._fullLayout._size, cells = heatmapCells(gd), update = {};
    var squares = Object.keys(gd.layout).filter(function (key) {
      return /^yaxis\d*$/.test(key) && gd.layout[key].scaleanchor;
    });
    if (!cells || !squares.length || !size || !(size.w > 0)) { return; }
    // square cells as wide as the plot allows, rows at least 16 px (a label's height), no empty band below
    var cell = Math.max(16, Math.min(40, size.w / cells.cols));
    if (cell * cells.cols > size.w + 1) {  // too many columns for square cells: the rows keep their height
      squares.forEach(function (key) { update[key + ".scaleanchor"] = null; });
    }
    update.height = Math.round(gd.layout.height - size.h + cell * cells.rows);
    return window.Plotly.relayout(gd, update).then(function () {
      // the new height may move the automatic margins (titles, labels): correct the plot's height once more
      var after = gd._fullLayout._size, short = Math.round(cell * cells.rows - after.h);
      if (Math.abs(short) > 1) { return window.Plotly.relayout(gd, {height: gd.layout.height + short}); }
    });
  }
  function fitDiagram(gd) {
    // Diagrams (layout.meta.fit_text_width) were laid out for that width: on a narrower screen their boxes shrink
    // with the figure, so their labels shrink by the same factor instead of spilling out.
    var design = gd.layout && gd.layout.meta && gd.layout.meta.fit_text_width;
    if (!design || gd.clientWidth >= design || gd.tlFitted) { return; }
    gd.tlFitted = true;
    var factor = gd.clientWidth / design, update = {};
    (gd.layout.annotations || []).forEach(function (a, i) {
      update["annotations[" + i + "].font.size"] = Math.max(6, Math.round(((a.font && a.font.size) || 12) * factor));
    });
    update["title.font.size"] = Math.max(10, Math.round(17 * factor));
    update.height = Math.round(gd.layout.height * Math.max(factor, 0.6));  // keep the boxes' proportions
    return window.Plotly.relayout(gd, update);
  }
  // Text that runs into other text, at any width, measured once the figure is drawn (tests/test_browser.py checks
  // the result on every page at 390 and 1280 px): a title or a subplot title wider than its room breaks into lines;
  // crowded labels on a log axis drop to 1, 2, 5 per decade, then to powers of ten; a title over the plot's top
  // labels gets the room it needs above them; a colour bar under rotated tick labels moves below them.
  function visible(el) {
    var r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && el.textContent.trim() ? r : null;
  }
  function hits(a, b, pad) {
    return a.left < b.right - pad && b.left < a.right - pad && a.top < b.bottom - pad && b.top < a.bottom - pad;
  }
  // Where a label's lines may break: at a space, between a Latin word and a Chinese character, and between two
  // Chinese words, never inside one. The words are the figure's line_words (jieba's cut with the glossary's terms,
  // made when the site is built: 解码器, not 解码 / 器; transformer_lib.site.glossary.label_words); a Chinese character
  // that no word holds stands alone. A closing mark (，：）”) stays with what precedes it and an opening one (（“) with
  // what follows; a bracket's content stays whole (“(B, H, L, D)”) unless it is wider than a line by itself.
  // A CJK character is as wide as two Latin letters, so it counts twice.
  var CJK = /[\u2e80-\u9fff\uff00-\uffef]/;
  var OPENING = "（([［【“‘《〈「", CLOSING = "）)]］】”’》〉」，。、；：！？,.;:!?…－·";
  var BRACKETS = /[（(\[［【]|[）)\]］】]/g;
  function width(text) { return text.length + (text.match(new RegExp(CJK.source, "g")) || []).length; }
  function pieces(line, words) {  // [{text, space, parts}]: the units a line breaks between
    var units = [], m, run = /(\s*)([\u2e80-\u9fff\uff00-\uffef]+|[^\s\u2e80-\u9fff\uff00-\uffef]+)/g;
    while ((m = run.exec(line))) {
      var text = m[2], found = [];
      for (var i = 0; CJK.test(text[0]) && i < text.length;) {  // the longest word at i (words: longest first)
        var word = (words || []).filter(function (w) { return text.substr(i, w.length) === w; })[0] || text[i];
        found.push(word);
        i += word.length;
      }
      (found.length ? found : [text]).forEach(function (p, j) {
        var last = units[units.length - 1], space = j === 0 && !!m[1];
        if (last && (CLOSING.indexOf(p[0]) >= 0 || OPENING.indexOf(last.text.slice(-1)) >= 0)) {
          last.text += (space ? " " : "") + p;
        } else {
          units.push({text: p, space: space});
        }
      });
    }
    var out = [], depth = 0;  // what a bracket holds is one unit, of parts that break apart only when it must
    units.forEach(function (u) {
      var last = out[out.length - 1];
      if (last && depth > 0) {
        last.text += (u.space ? " " : "") + u.text;
        last.parts.push(u);
      } else {
        out.push({text: u.text, space: u.space, parts: [u]});
      }
      (u.text.match(BRACKETS) || []).forEach(function (b) { depth = Math.max(0, depth + (/[（(\[［【]/.test(b) ? 1 : -1)); });
    });
    return out;
  }
  function wrapTo(text, chars, words) {  // break each line of a label so that no line is wider than `chars`
    return text.split("<br>").map(function (line) {
      if (width(line) <= chars) { return line; }
      var out = [], current = "";
      pieces(line, words).forEach(function (unit) {
        (width(unit.text) > chars ? unit.parts : [unit]).forEach(function (p) {
          var next = current ? current + (p.space ? " " : "") + p.text : p.text;
          if (current && width(next) > chars) { out.push(current); current = p.text; } else { current = next; }
        });
      });
      out.push(current);
      return out.join("<br>");
    }).join("<br>");
  }
  function longestLine(text) {
    return Math.max.apply(null, text.replace(/<[^>]+>/g, function (tag) { return tag === "<br>" ? "\n" : ""; })
      .split("\n").map(width));
  }
  // Crowded labels on a log axis: 1, 2, ..., 9 per decade drop to 1, 2, 5, and those to powers of ten. Plotly picks
  // the digits from the axis's length, so a relayout that makes the plot a few pixels taller (a margin that shrank)
  // can bring all nine back: an axis found uncrowded keeps the digits it was measured with (its dtick is pinned),
  // unless a slider or a menu can give the figure other data.
  function logTicks(gd) {
    var update = {};
    var fixed = !(gd.layout.sliders || []).concat(gd.layout.updatemenus || [], gd.tlMenus || []).length;
    Object.keys(gd._fullLayout || {}).forEach(function (key) {
      var axis = gd._fullLayout[key];
      if (!/^[xy]axis\d*$/.test(key) || !axis || axis.type !== "log") { return; }
      var labels = [];
      gd.querySelectorAll("g." + axis._id + "tick text").forEach(function (t) { var r = visible(t); if (r) { labels.push(r); } });
      var crowded = labels.some(function (r, i) { return labels.slice(i + 1).some(function (q) { return hits(r, q, 1); }); });
      var digits = /^D[12]$/.test(String(axis.dtick));
      if (crowded) { update[key + ".dtick"] = String(axis.dtick) === "D1" ? "D2" : 1; }
      else if (digits && fixed && gd.layout[key] && gd.layout[key].dtick === undefined) {
        gd.layout[key].dtick = axis.dtick;  // kept for the next relayout, which reads the layout; no redraw now
      }
    });
    return update;
  }
  function wrapTexts(gd) {
    var page = gd.getBoundingClientRect(), update = {}, title = gd.querySelector("text.gtitle");
    var titleText = gd.layout.title && (typeof gd.layout.title === "string" ? gd.layout.title : gd.layout.title.text);
    var box = title && visible(title);
    if (box && typeof titleText === "string" && (box.right > page.right - 2 || box.left < page.left)) {
      var room = page.right - 6 - Math.max(box.left, page.left + 4);
      var chars = Math.floor(longestLine(titleText) * room / box.width);
      update["title.text"] = wrapTo(titleText, chars, gd.tlLineWords);
      // the titles a menu's entries or a slider's steps put up break the same way, so that going back to the first
      // entry draws the first view again
      (gd.layout.sliders || []).concat(gd.layout.updatemenus || [], gd.tlMenus || []).forEach(function (c) {
        (c.steps || c.buttons || []).forEach(function (step) {
          (step.args || []).forEach(function (arg) {
            if (!arg || typeof arg !== "object" || Array.isArray(arg)) { return; }
            ["title.text", "title"].forEach(function (key) {
              if (typeof arg[key] === "string") { arg[key] = wrapTo(arg[key], chars, gd.tlLineWords); }
            });
          });
        });
      });
    }
    if (isDiagram(gd.layout)) {  // a diagram's labels sit in its boxes (fitDiagram): only its title may need lines
      return Object.keys(update).length ? window.Plotly.relayout(gd, update) : Promise.resolve();
    }
    var ticks = [];
    gd.querySelectorAll("g[class$='tick'] > text").forEach(function (t) { var r = visible(t); if (r) { ticks.push(r); } });
    var notes = [];
    gd.querySelectorAll("g.annotation").forEach(function (g) {
      var i = +g.getAttribute("data-index"), a = (gd.layout.annotations || [])[i], r = visible(g);
      if (a && r && typeof a.text === "string" && !isDiagram(gd.layout)) { notes.push({i: i, a: a, r: r}); }
    });
    notes.forEach(function (n) {
      var centre = (n.r.left + n.r.right) / 2, room = 2 * Math.min(centre - page.left, page.right - centre) - 8;
      notes.forEach(function (m) {  // a neighbour on the same line (subplot titles side by side)
        var other = (m.r.left + m.r.right) / 2;
        if (m !== n && m.r.top < n.r.bottom && n.r.top < m.r.bottom) { room = Math.min(room, Math.abs(other - centre) - 8); }
      });
      ticks.forEach(function (q) {  // a tick label beside it (the top of an axis): the title narrows to clear it
        if (hits(n.r, q, 1)) {
          room = Math.min(room, 2 * (q.left >= centre ? q.left - centre : centre - q.right) - 4);
        }
      });
      if (n.r.width > room && room > 20) {
        var text = wrapTo(n.a.text, Math.max(6, Math.floor(longestLine(n.a.text) * room / n.r.width)), gd.tlLineWords);
        if (text !== n.a.text) { update["annotations[" + n.i + "].text"] = text; }
      }
    });
    Object.assign(update, logTicks(gd));
    Object.keys(gd.layout).forEach(function (key) {  // too many named ticks for the room: every k-th keeps its name
      var axis = gd.layout[key], full = (gd._fullLayout || {})[key];
      if (!/^[xy]axis\d*$/.test(key) || !axis || !Array.isArray(axis.ticktext) || !full) { return; }
      var labels = [];
      gd.querySelectorAll("g." + full._id + "tick text").forEach(function (t) { var r = visible(t); if (r) { labels.push(r); } });
      var along = key[0] === "x" ? function (r) { return [r.left, r.right]; } : function (r) { return [r.top, r.bottom]; };
      labels.sort(function (a, b) { return along(a)[0] - along(b)[0]; });
      if (labels.length < 3 || !labels.some(function (r, i) { return i && hits(labels[i - 1], r, 1); })) { return; }
      var step = (along(labels[labels.length - 1])[0] - along(labels[0])[0]) / (labels.length - 1);
      var extent = Math.max.apply(null, labels.map(function (r) { var e = along(r); return e[1] - e[0]; }));
      var k = Math.max(2, Math.ceil((extent + 3) / Math.max(step, 1)));
      update[key + ".ticktext"] = axis.ticktext.map(function (t, i) { return i % k === 0 ? t : ""; });
    });
    return Object.keys(update).length ? window.Plotly.relayout(gd, update) : Promise.resolve();
  }
  function roomForTitle(gd) {
    var title = gd.querySelector("text.gtitle"), box = title && visible(title);
    if (!box) { return Promise.resolve(); }
    var page = gd.getBoundingClientRect(), size = gd._fullLayout._size, need = 0;
    var top = page.top + 6, height = box.height, bottom = top + height;  // the title, once pinned to the top
    var overlap = false;
    gd.querySelectorAll("text, g.legend, g.updatemenu-container").forEach(function (el) {
      if (el === title || title.contains(el) || el.closest("g.g-gtitle")) { return; }
      var r = el.tagName === "text" ? visible(el) : el.getBoundingClientRect();
      if (!r || !r.width || r.left >= box.right || box.left >= r.right || r.top > box.bottom + 4) { return; }
      overlap = overlap || hits(r, box, 1);
      need = Math.max(need, bottom + 4 - r.top);
    });
    need = Math.max(need, bottom + 4 - (page.top + size.t));  // nor over the plot itself
    if (need < 1 && !overlap && box.top >= page.top) { return Promise.resolve(); }
    need = Math.max(0, Math.ceil(need));
    var height0 = gd._fullLayout.height;
    return window.Plotly.relayout(gd, {"margin.t": size.t + need, height: height0 + need, "title.yref": "container",
                                        "title.y": 1 - 6 / (height0 + need), "title.yanchor": "top"})
      .then(function () {  // plotly anchors a title of several lines by its first line: it may still stick out
        var now = gd.querySelector("text.gtitle"), r = now && visible(now), p = gd.getBoundingClientRect();
        if (!r || r.top >= p.top + 2) { return; }
        var down = Math.ceil(p.top + 6 - r.top), h = gd._fullLayout.height;
        return window.Plotly.relayout(gd, {"margin.t": gd._fullLayout._size.t + down, height: h + down,
                                           "title.y": 1 - (6 + down) / (h + down)});
      });
  }
  function colourBarBelowLabels(gd) {
    var bars = gd.querySelectorAll("g.colorbar");
    if (!bars.length) { return Promise.resolve(); }
    var ticks = [];
    gd.querySelectorAll("g[class*='tick'] > text").forEach(function (t) {
      if (!t.closest("g.colorbar")) { var r = visible(t); if (r) { ticks.push(r); } }
    });
    var need = 0;
    bars.forEach(function (bar) {
      bar.querySelectorAll("text").forEach(function (t) {
        var r = visible(t);
        ticks.forEach(function (q) { if (r && hits(r, q, 1)) { need = Math.max(need, q.bottom + 4 - r.top); } });
      });
    });
    var heat = (gd._fullData || []).map(function (t, i) { return t.type === "heatmap" && t.showscale ? i : -1; })
      .filter(function (i) { return i >= 0; });
    if (need < 1 || !heat.length) { return Promise.resolve(); }
    need = Math.ceil(need);
    var bar = gd._fullData[heat[0]].colorbar;
    return window.Plotly.restyle(gd, {"colorbar.ypad": (bar.ypad || 0) + need}, heat).then(function () {
      return window.Plotly.relayout(gd, {"margin.b": gd._fullLayout._size.b + need, height: gd._fullLayout.height + need});
    });
  }
  function fitTexts(gd) {
    if (gd.tlTextsFitted) { return Promise.resolve(); }
    gd.tlTextsFitted = true;
    if (isDiagram(gd.layout)) { return wrapTexts(gd); }
    return wrapTexts(gd).then(function () { return colourBarBelowLabels(gd); })
      .then(function () { return roomForTitle(gd); })
      .then(function () {  // measured again after the last relayout, which may have changed an axis's length
        var update = logTicks(gd);
        return Object.keys(update).length ? window.Plotly.relayout(gd, update) : Promise.resolve();
      });
  }
  window.tlPlotlyTheme = function (gd) {
    if (!window.Plotly || !gd || !gd.layout) { return Promise.resolve(); }
    var narrow = gd.tlNarrow ? Promise.resolve(squareCells(gd)).then(function () { return menusFromTheEdge(gd); })
                             : fitDiagram(gd);  // (a diagram first shrinks its labels, then its title may wrap)
    return Promise.resolve(narrow).then(function () { return fitTexts(gd); }).then(function () {
      apply(gd);
      gd.classList.add("tl-fitted");  // laid out for this width (tests wait for it)
    });
  };
  // Drawing on demand. Drawing and fitting a figure takes tens of milliseconds, and a chapter has up to 30: drawn
  // all at once they held a chapter's load event back 3-6 s on a 2-core machine. Each figure is drawn when it comes
  // within a screen of the viewport (a figure in a folded or hidden view, when it is shown), plotly.js fetched first
  // (tlLoadPlotly), and keeps its place until then so that the page does not jump. Printing draws them all first;
  // tests call tlDrawAll(). (Checked on scrolling rather than with an IntersectionObserver, which headless Chromium
  // left silent for these figures.)
  var waiting = [], drawing = [];  // [element, draw, locale] not yet drawn; [element, promise] drawn or drawing
  function drawNow(el, now) {
    for (var i = 0; i < waiting.length; i++) {
      if (waiting[i][0] === el) {
        var pair = waiting.splice(i, 1)[0];
        // plotly.js that cannot load: the figure's draw() says so in its place
        var done = window.tlLoadPlotly(pair[2], now).catch(function () { return null; }).then(function () {
          return pair[1]();
        }).then(function () { el.parentElement.style.minHeight = ""; });
        drawing.push([el, done]);
        return done;
      }
    }
    for (var j = 0; j < drawing.length; j++) { if (drawing[j][0] === el) { return drawing[j][1]; } }
    return Promise.resolve();
  }
  function drawNear() {  // the figures within a screen of the viewport; a hidden one (folded, another view) waits
    var reach = window.innerHeight;
    waiting.slice().forEach(function (pair) {
      var box = pair[0].parentElement.getBoundingClientRect();  // the container holds the figure's place
      if (box.height > 0 && box.bottom > -reach && box.top < 2 * reach) { drawNow(pair[0]); }
    });
  }
  var queued = false, prefetched = false;
  function soon() {
    // not while the page is parsed: the events that ask (a <details open> fires "toggle" as it is parsed, a resize)
    // would measure the half-built page, a forced style and layout (~50 ms of the main thread before
    // DOMContentLoaded in chapter 4); DOMContentLoaded asks once the page is whole (text first, issue 41)
    if (queued || document.readyState === "loading") { return; }
    queued = true;
    window.requestAnimationFrame(function () { queued = false; drawNear(); });
  }
  document.addEventListener("DOMContentLoaded", soon);
  ["scroll", "resize"].forEach(function (event) { window.addEventListener(event, soon, {passive: true}); });
  // a fold opened, a menu switched to another view, a tab shown: what was hidden may now be near
  ["toggle", "change", "click"].forEach(function (event) { document.addEventListener(event, soon, true); });
  window.tlDrawWhenNear = function (el, draw, height, locale) {
    // the place is kept by the figure's container: a figure div with a height of its own when it is drawn would be
    // sized to it by plotly (responsive), and keep that height for ever after
    el.parentElement.style.minHeight = (height || 450) + "px";  // plotly's default height
    waiting.push([el, draw, locale || null]);
    // not while the page is parsed: each check there measured the half-built page, a forced style and layout per
    // frame (4 of them in chapter 4, ~0.2 s before DOMContentLoaded at load 15), and nothing is drawn before the load
    // event anyway (tlLoadPlotly); the first check comes with DOMContentLoaded (text first, issue 41)
    if (document.readyState !== "loading") { soon(); }
    if (!prefetched) {  // a page with figures: plotly.js at the first idle moment after load, so that printing
      prefetched = true;  // (beforeprint cannot wait for a download) finds it there and draws every figure at once
      pageLoaded.then(function () {
        (window.requestIdleCallback || window.setTimeout)(function () { window.tlLoadPlotly(locale); });
      });
    }
  };
  window.tlDrawAll = function () {  // every figure on the page, drawn and fitted; resolves when all are
    return Promise.all(waiting.map(function (pair) { return pair[0]; }).map(function (el) { return drawNow(el, true); })
      .concat(drawing.map(function (pair) { return pair[1]; })));
  };
  window.addEventListener("beforeprint", function () { window.tlDrawAll(); });
  new MutationObserver(function () {
    document.querySelectorAll(".tl-plotly-figure.js-plotly-plot").forEach(apply);
  }).observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
})();
