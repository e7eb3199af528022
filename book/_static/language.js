// The "中文 / English" switch in every page's header (transformer_lib/site/i18n.py writes the links it reads): the same
// page in the other language. A plain link, so it works offline, by touch and without any other script.
(function () {
  function addSwitch() {
    var bar = document.querySelector(".article-header-buttons");
    if (!bar || bar.querySelector(".tl-language")) { return; }
    var links = document.querySelectorAll('link[rel="alternate"][hreflang]');
    Array.prototype.forEach.call(links, function (link) {
      if (link.getAttribute("data-current")) { return; }
      var a = document.createElement("a");
      a.className = "btn btn-sm pst-navbar-icon tl-language";
      a.href = link.getAttribute("href");
      a.hreflang = link.getAttribute("hreflang");
      a.lang = link.getAttribute("hreflang");
      var english = link.getAttribute("hreflang") === "en";
      // the name begins with what the link shows on a phone ("EN", "中") and holds what it shows on a desktop
      // ("English", "中文"): what a reader sees is what a voice user says (WCAG 2.5.3; axe label-content-name-mismatch)
      a.setAttribute("aria-label", english ? "EN English" : "中文 (Chinese)");
      a.innerHTML = '<span class="tl-language-long"></span><span class="tl-language-short" aria-hidden="true"></span>';
      a.querySelector(".tl-language-long").textContent = link.getAttribute("title");
      a.querySelector(".tl-language-short").textContent = english ? "EN" : "中";
      a.title = english ? "Read this page in English" : "阅读本页的中文版";
      bar.insertBefore(a, bar.firstChild);
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", addSwitch); } else { addSwitch(); }
})();
