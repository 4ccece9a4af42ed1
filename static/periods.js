// The site page's period picker: Plausible's keyboard shortcuts (each a link or button of
// the page marked data-shortcut: the server builds every link, so a shortcut is a click
// and the URL stays the state), the list of them on `?`, and the period remembered per
// site: opening the dashboard without a period shows the one last chosen there.
(function () {
  "use strict";
  var picker = document.getElementById("period-picker");
  var dialog = document.getElementById("shortcuts");
  var STORE = "tally:period:" + location.pathname;  // (a site's page, or its share link's)
  var PERIOD_PARAMS = ["period", "from", "to", "compare"];

  function remembered() {
    // Back to the period last chosen on this page, when the URL names none.
    var params = new URLSearchParams(location.search);
    var saved = null;
    try { saved = localStorage.getItem(STORE); } catch (e) { return false; }  // (storage off: nothing to remember)
    if (params.has("period")) {
      var chosen = new URLSearchParams();
      PERIOD_PARAMS.forEach(function (name) { if (params.has(name)) chosen.set(name, params.get(name)); });
      try { localStorage.setItem(STORE, chosen.toString()); } catch (e) { /* (full or off: not remembered) */ }
      return false;
    }
    if (!saved) return false;
    new URLSearchParams(saved).forEach(function (value, name) {
      if (PERIOD_PARAMS.indexOf(name) >= 0) params.set(name, value);
    });
    location.replace(location.pathname + "?" + params.toString() + location.hash);
    return true;
  }
  if (remembered()) return;

  function typing(target) {
    var tag = (target && target.tagName) || "";
    return target && (target.isContentEditable || tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT");
  }
  function openShortcuts() {
    if (dialog && typeof dialog.showModal === "function" && !dialog.open) dialog.showModal();
  }
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") {
      if (document.querySelector("dialog[open]")) return;  // (the browser closes the list of shortcuts)
      var open = document.querySelector("details[open]");
      if (open) {  // (a menu, even while typing in it: closed, the focus back on its summary)
        open.open = false;
        var summary = open.querySelector("summary");
        if (summary) summary.focus();
        return;
      }
      if (typing(event.target)) return;
      var clear = document.querySelector("[data-clear-filters]");
      if (clear) clear.click();  // (Plausible's Esc: clear all filters)
      return;
    }
    if (typing(event.target)) return;
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (key === "i") {  // (the chart by the next interval, round)
      var choices = Array.prototype.slice.call(document.querySelectorAll("[data-interval-choice]"));
      var at = choices.findIndex(function (a) { return a.classList.contains("active"); });
      if (choices.length > 1) { event.preventDefault(); choices[(at + 1) % choices.length].click(); }
      return;
    }
    if (key === "?") {
      event.preventDefault();
      openShortcuts();
      return;
    }
    if (key === "/") {
      var search = document.querySelector("[data-search]");
      if (search) { event.preventDefault(); search.focus(); }
      return;
    }
    if (key === "c" && picker) {
      event.preventDefault();
      picker.open = true;
      var from = picker.querySelector("input[name=from]");
      if (from) from.focus();
      return;
    }
    var target = document.querySelector('[data-shortcut="' + key + '"]:not(.shortcuts-open)');
    if (target) {
      event.preventDefault();
      target.click();
    }
  });
  var opener = document.querySelector(".shortcuts-open");
  if (opener) opener.addEventListener("click", openShortcuts);
  document.addEventListener("click", function (event) {
    // A click outside an open menu (the picker, + Filter, Segments) closes it, as a menu does.
    document.querySelectorAll("details.picker[open], details.filter-menu[open]").forEach(function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
  });
})();
