// Search results quote a page's text, where formulas are still LaTeX source ("\(\sqrt{d_k}\)"). Rewrite them
// in the results as plain readable text ("√d_k"); pages themselves are typeset by MathJax as usual.
(function () {
  var SYMBOLS = {"\\sqrt": "√", "\\cdot": "·", "\\times": "×", "\\infty": "∞", "\\top": "ᵀ", "\\dots": "…",
                 "\\ldots": "…", "\\cdots": "⋯", "\\to": "→", "\\rightarrow": "→", "\\le": "≤", "\\leq": "≤",
                 "\\ge": "≥", "\\geq": "≥", "\\approx": "≈", "\\in": "∈", "\\sum": "∑", "\\alpha": "α",
                 "\\beta": "β", "\\epsilon": "ε", "\\varepsilon": "ε", "\\sigma": "σ", "\\mu": "μ", "\\pi": "π",
                 "\\lVert": "‖", "\\rVert": "‖", "\\partial": "∂", "\\quad": " ", "\\qquad": " ", "\\left": "",
                 "\\right": "", "\\,": " ", "\\;": " ", "\\!": ""};
  function plain(tex) {
    // a snippet that starts inside a formula may have lost the backslash of its first command too
    tex = tex.replace(/(^|[^A-Za-z\\])(mathrm|text|operatorname|mathbf|mathit|boldsymbol)\{([^{}]*)\}/g, "$1$3");
    tex = tex.replace(/\\(mathrm|text|operatorname|mathbf|mathit|boldsymbol)\{([^{}]*)\}/g, "$2");
    tex = tex.replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)");
    tex = tex.replace(/\\[a-zA-Z]+|\\[,;!]/g, function (c) { return c in SYMBOLS ? SYMBOLS[c] : c.slice(1); });
    return tex.replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
  }
  function clean(text) {
    // a snippet that starts inside a formula: everything before the first unopened \) or \] is formula
    var close = text.search(/\\[)\]]/), open = text.search(/\\[(\[]/);
    if (close >= 0 && (open < 0 || open > close)) { text = plain(text.slice(0, close)) + text.slice(close + 2); }
    return text.replace(/\\\(([\s\S]*?)\\\)/g, function (_, t) { return plain(t); })
               .replace(/\\\[([\s\S]*?)\\\]/g, function (_, t) { return plain(t); })
               .replace(/\$\$([\s\S]*?)\$\$/g, function (_, t) { return plain(t); })
               .replace(/\\[(\[]([^]*)$/, function (_, t) { return plain(t); });  // a formula the snippet cut off
  }
  function fix(root) {
    // A snippet is cleaned as a whole: the search highlights the query word inside it (a <span>), which splits a
    // formula such as \mathrm{softmax} over three text nodes. A cleaned snippet loses that highlight.
    root.querySelectorAll("p.context").forEach(function (p) {
      var cleaned = clean(p.textContent);
      if (cleaned !== p.textContent) { p.textContent = cleaned; }
    });
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), node;
    while ((node = walker.nextNode())) {
      var cleaned = clean(node.nodeValue);
      if (cleaned !== node.nodeValue) { node.nodeValue = cleaned; }  // unchanged text ends the observer's loop
    }
  }
  window.tlCleanSearchText = clean;
  // A snippet is the page's text around the first query word. That text began with the page's table of contents
  // for print (sphinx-book-theme's #jb-print-docs-body, inside the main content, every section title), so a word of
  // a title was found there and the snippet showed the contents: the text is read without it. (A result that points
  // at the paragraph defining a term, transformer_lib/site/search.py, reads that paragraph.)
  function withoutPrintContents(toText) {
    return function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("#jb-print-docs-body, .onlyprint").forEach(function (el) { el.remove(); });
      return toText(doc.documentElement.outerHTML, anchor);
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof Search !== "undefined" && Search.htmlToText) { Search.htmlToText = withoutPrintContents(Search.htmlToText); }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var results = document.getElementById("search-results");
    if (!results) { return; }
    new MutationObserver(function () { fix(results); })
      .observe(results, {childList: true, subtree: true, characterData: true});
  });
})();
