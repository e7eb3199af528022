// The reader's controls on every page (listed in _config.yml under html_js_files):
// - the ☰ and "On this page" buttons open their drawers on a phone;
// - a "Hide code" button in the page header folds every code cell away (outputs stay), remembered in localStorage.
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

  // Reading mode: code cells folded away. The choice is kept for the whole site (localStorage "tl-hide-code").
  var KEY = "tl-hide-code";
  function stored() {
    try { return window.localStorage.getItem(KEY) === "1"; } catch (e) { return false; }
  }
  function setHidden(hidden, button) {
    document.documentElement.classList.toggle("tl-hide-code", hidden);
    try { window.localStorage.setItem(KEY, hidden ? "1" : "0"); } catch (e) { /* private mode: this page only */ }
    if (button) {
      button.title = hidden ? "Show the code cells" : "Hide the code cells (outputs stay)";
      button.querySelector(".tl-hide-code-label").textContent = hidden ? "Show code" : "Hide code";
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

  function ready() {
    forwardToggles(".primary-toggle");
    forwardToggles(".secondary-toggle");
    addCodeButton();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); } else { ready(); }
})();
