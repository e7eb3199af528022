// Wide output fits the text column (on every page, listed in _config.yml under html_js_files):
// - printed text wraps at the column's edge, unless it is a table of aligned columns (wrapping would break the
//   columns apart; such a block keeps its lines and scrolls sideways); see book.css, pre.tl-wrap;
// - a displayed formula wider than the column is scaled down to fit it (MathJax 3 cannot break lines itself),
//   to no less than 60 % of its size; past that it scrolls.
(function () {
  // A line "looks tabular" when a run of two or more spaces follows text: "T =    16: RNN    16 steps".
  function aligned(text) {
    var lines = text.split("\n").filter(function (l) { return /\S\s{2,}\S/.test(l); });
    return lines.length >= 2;
  }
  function wrapText(root) {
    root.querySelectorAll(".cell_output .output.stream pre, .cell_output .output.text_plain pre").forEach(
      function (pre) {
        if (!pre.classList.contains("tl-wrap") && !aligned(pre.textContent)) { pre.classList.add("tl-wrap"); }
      });
  }
  function fitMath() {
    document.querySelectorAll("article.bd-article mjx-container[display='true']").forEach(function (m) {
      m.style.fontSize = "";
      var room = m.parentElement.clientWidth, need = m.scrollWidth;
      if (room > 0 && need > room + 1) {
        m.style.fontSize = Math.round(100 * Math.max(0.6, (room - 2) / need)) + "%";
      }
    });
  }
  window.tlLooksTabular = aligned;  // for the browser test
  document.addEventListener("DOMContentLoaded", function () { wrapText(document); });
  // MathJax is fetched after the load event (transformer_lib/site/templates/layout.html); window.tlMathJax is the
  // promise of its first typesetting, on the pages that have formulas
  window.addEventListener("load", function () {
    (window.tlMathJax || Promise.resolve()).then(function () {
      fitMath();
      var resized;
      window.addEventListener("resize", function () { clearTimeout(resized); resized = setTimeout(fitMath, 150); });
    });
  });
})();
