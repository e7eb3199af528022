// Loaded between require.js and the widget manager (embed-amd.js) on pages that hold ipywidgets (see
// nb_ipywidgets_js in _config.yml). Two adjustments for a site that works offline and uses MathJax 3:
// 1. The manager looks for its icon fonts next to where require.js believes it lives, which is next to the
//    page unless told otherwise; point it at _static/vendor/ipywidgets/, where the fonts are vendored.
// 2. Widget labels are typeset with MathJax 2's MathJax.Hub.Queue, but MathJax 3 has no Hub. MathJax 3 is fetched
//    after the load event (transformer_lib/site/templates/layout.html), when the widgets have drawn: its first
//    typesetting covers them; once it is there, it gets a small Hub that forwards to its typesetPromise, for the
//    labels a widget draws later.
(function () {
  var dist = document.currentScript.src.replace(/[^/]*$/, "") + "vendor/ipywidgets/";
  window.__jupyter_widgets_assets_path__ = dist;
  window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": dist.replace(/\/$/, "") } });
  (window.tlMathJax || Promise.resolve()).then(function () {
    var mathjax = window.MathJax;
    if (mathjax && !mathjax.Hub) {
      mathjax.Hub = {
        Queue: function (job) {
          var element = job && job[2];
          if (element && mathjax.typesetPromise) {
            mathjax.typesetPromise([element]).catch(function (err) { console.warn("MathJax:", err); });
          }
        },
      };
    }
  });
})();
