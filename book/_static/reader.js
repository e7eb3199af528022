// The reader's controls on every page (listed in _config.yml under html_js_files):
// - the ☰ and "On this page" buttons open their drawers on a phone;
// - a "Hide code" button in the page header folds every code cell away (outputs stay), remembered in localStorage;
// - controls that the themes leave without a fitting accessible name get one.
(function () {
  // Navigation. Each page holds two ☰ buttons (.primary-toggle) and two "On this page" buttons (.secondary-toggle):
  // pydata-sphinx-theme's, in a header that sphinx-book-theme hides, come first; the book theme's visible ones come
  // after. Both themes' scripts bind their handlers (open the drawer on a phone, fold the sidebar on a desktop) with
  // document.querySelector, i.e. to the first, hidden button only, so the visible ones did nothing on a phone.
  // Every other toggle hands its click to the first one, which does what the themes intended.
  function forwardToggles(selector) {
    var all = document.querySelectorAll(selector);
    Array.prototype.slice.call(all, 1).forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        all[0].click();
      });
    });
  }

  // The words this script writes, in the page's language: window.tlWords, which the Chinese site's build writes from the
  // site's catalog, site.po (transformer_lib.site.i18n.script_words); English where it has none
  function say(text) { return (window.tlWords && window.tlWords[text]) || text; }

  // Reading mode: code cells folded away. The choice is kept for the whole site (localStorage "tl-hide-code").
  var KEY = "tl-hide-code";
  function stored() {
    try { return window.localStorage.getItem(KEY) === "1"; } catch (e) { return false; }
  }
  function setHidden(hidden, button) {
    document.documentElement.classList.toggle("tl-hide-code", hidden);
    try { window.localStorage.setItem(KEY, hidden ? "1" : "0"); } catch (e) { /* private mode: this page only */ }
    if (button) {
      button.title = say(hidden ? "Show the code cells" : "Hide the code cells (outputs stay)");
      button.querySelector(".tl-hide-code-label").textContent = say(hidden ? "Show code" : "Hide code");
    }
  }
  document.documentElement.classList.toggle("tl-hide-code", stored());  // before the page is drawn: no flash
  function addCodeButton() {
    if (!document.querySelector(".cell .cell_input")) { return; }  // a page without code cells needs no button
    var bar = document.querySelector(".article-header-buttons");
    if (!bar) { return; }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-sm pst-navbar-icon tl-hide-code-button";
    button.innerHTML = '<span class="fa-solid fa-code" aria-hidden="true"></span> <span class="tl-hide-code-label"></span>';
    button.addEventListener("click", function () {
      setHidden(!document.documentElement.classList.contains("tl-hide-code"), button);
    });
    bar.insertBefore(button, bar.firstChild);
    setHidden(stored(), button);
  }

  // Names for assistive technology (axe-core, tests/test_browser_a11y.py) of what scripts create (the sidebar's
  // toggles and the search button are named in the HTML: transformer_lib.site.pages.accessible_page):
  // - a control whose aria-label does not contain its visible text ("Toggle hidden content" on "Show the check",
  //   "Search" on "Search Ctrl+K") is named by its visible text (a <summary> by whatever it shows, open or closed),
  //   so that what a reader sees is what a voice user says (WCAG 2.5.3).
  function nameControls() {
    document.querySelectorAll("button[aria-label], summary[aria-label], a[aria-label]").forEach(function (el) {
      var visible = (el.innerText || "").replace(/\s+/g, " ").trim();
      var name = el.getAttribute("aria-label");
      if (!visible || name.toLowerCase().indexOf(visible.toLowerCase()) >= 0) { return; }
      if (el.tagName === "SUMMARY") { el.removeAttribute("aria-label"); } else { el.setAttribute("aria-label", visible); }
    });
  }

  // The theme's light/dark button shows one icon for the mode that is on; the build moved each icon's title ("Light",
  // "Dark", "System Settings", in the page's language) into data-tl-name (transformer_lib.site.pages), so that it is
  // not drawn as the button's visible text. The button's name says what it is and which mode is on, after each click.
  function nameThemeButtons() {
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      function update() {
        var shown = Array.prototype.filter.call(button.querySelectorAll("svg, i"), function (icon) {
          return window.getComputedStyle(icon).display !== "none";
        })[0];
        var mode = shown ? (shown.getAttribute("data-tl-name") || "").trim() : "";
        if (mode) { button.setAttribute("aria-label", say("Color mode: {mode}").replace("{mode}", mode)); }
      }
      update();
      new MutationObserver(update).observe(button, {childList: true, subtree: true});  // Font Awesome draws later
      button.addEventListener("click", function () { window.setTimeout(update, 0); });
    });
  }

  // Naming reads what is drawn (innerText, getComputedStyle): called at DOMContentLoaded, it made the browser style and
  // lay out the rest of the page there, before the event's end (4-11 ms of the main thread on chapter 4, up to ~40 ms
  // on the API page), work that the first frame after it does anyway. It runs once that frame has been drawn (text
  // first, issue 41); a hidden tab draws no frame, so there it runs on the next task. The names are the same as
  // before. textContent, which needs no layout, would not give them: a fold's summary holds both its "Show ..." and
  // its "Hide ..." words, one hidden by CSS, and the language switch both its long and its short label.
  function afterFirstFrame(callback) {
    if (document.visibilityState === "hidden" || !window.requestAnimationFrame) { window.setTimeout(callback, 0); return; }
    window.requestAnimationFrame(function () { window.setTimeout(callback, 0); });
  }

  function ready() {
    forwardToggles(".primary-toggle");
    forwardToggles(".secondary-toggle");
    addCodeButton();
    afterFirstFrame(function () {
      nameThemeButtons();
      nameControls();
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); } else { ready(); }
})();
