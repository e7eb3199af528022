// Plotly figures on the site: they follow the light/dark theme, and diagrams fit their text to narrow screens.
// Theme: plotly figures follow the site's light/dark theme (pydata-sphinx-theme sets <html data-theme="dark">).
// Figures are drawn with a white template; in dark mode their backgrounds become transparent and their text and
// grid lines light, and they switch back when the reader toggles the theme. Loaded with plotly.min.js only.
(function () {
  var DARK = {"paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "font.color": "#ced6dd",
              "title.font.color": "#ced6dd"};
  var LIGHT = {"paper_bgcolor": "white", "plot_bgcolor": "white", "font.color": "#2a3f5f",
               "title.font.color": "#2a3f5f"};
  function isDark() { return document.documentElement.dataset.theme === "dark"; }
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
  function apply(gd) {
    if (!window.Plotly || !gd || !gd.layout) { return; }
    var dark = isDark();
    if (dark === (gd.tlDark === true)) { return; }  // drawn light, and still light: nothing to do
    gd.tlDark = dark;
    window.Plotly.relayout(gd, Object.assign({}, dark ? DARK : LIGHT, axes(gd, dark)));
  }
  // Diagrams (layout.meta.fit_text_width) were laid out for that width: on a narrower screen their boxes shrink
  // with the figure, so their labels shrink by the same factor instead of spilling out.
  function fit(gd) {
    if (window.Plotly && gd.layout && gd.clientWidth < 500 && !gd.tlNarrow) {  // phones
      gd.tlNarrow = true;
      var narrow = {"title.font.size": 12, "legend.font.size": 10};  // titles do not wrap
      Object.keys(gd.layout).forEach(function (key) {  // square heatmaps would use a third of the width
        if (/^yaxis\d*$/.test(key) && gd.layout[key].scaleanchor) { narrow[key + ".scaleanchor"] = null; }
      });
      var sliders = gd.layout.sliders || [], menus = gd.layout.updatemenus || [];
      if (sliders.length && menus.length) {  // a menu beside a slider (attention grids): the slider goes below it
        narrow["sliders[0].x"] = 0;
        narrow["sliders[0].len"] = 1;
        narrow["sliders[0].pad.t"] = 95;
        narrow["margin.b"] = ((gd.layout.margin && gd.layout.margin.b) || 80) + 60;
        narrow.height = (gd.layout.height || 450) + 60;
      }
      window.Plotly.relayout(gd, narrow);
    }
    var design = gd.layout && gd.layout.meta && gd.layout.meta.fit_text_width;
    if (!window.Plotly || !design || gd.clientWidth >= design || gd.tlFitted) { return; }
    gd.tlFitted = true;
    var factor = gd.clientWidth / design, update = {};
    (gd.layout.annotations || []).forEach(function (a, i) {
      update["annotations[" + i + "].font.size"] = Math.max(6, Math.round(((a.font && a.font.size) || 12) * factor));
    });
    update["title.font.size"] = Math.max(10, Math.round(17 * factor));
    update.height = Math.round(gd.layout.height * Math.max(factor, 0.6));  // keep the boxes' proportions
    window.Plotly.relayout(gd, update);
  }
  window.tlPlotlyTheme = function (gd) { fit(gd); apply(gd); };
  new MutationObserver(function () {
    document.querySelectorAll(".tl-plotly-figure.js-plotly-plot").forEach(apply);
  }).observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
})();
