// The filter menu (templates/dashboard/_filters.html): values the chosen property has in
// this period, as suggestions while typing (the panels' breakdown endpoint; pages from the
// page search). The menu itself is a plain form: the server adds the filter and answers
// with the page's URL, so a filter works without this script too.
(function () {
  "use strict";
  var form = document.getElementById("filter-form");
  if (!form) return;
  var prop = document.getElementById("filter-prop");
  var input = document.getElementById("filter-value");
  var list = document.getElementById("filter-suggestions");
  var asked = {};  // property -> its suggestions, once fetched
  var NONE = ["goal", "referrer", "browser_version", "os_version", "hostname"];  // (no panel lists them: no suggestions)

  function fill(values) {
    list.textContent = "";
    values.forEach(function (value) {
      var option = document.createElement("option");
      option.value = value;  // (set as a property: a value is text, never markup)
      list.appendChild(option);
    });
  }
  function suggest() {
    var key = prop.value;
    if (NONE.indexOf(key) >= 0) { fill([]); return; }
    if (asked[key]) { fill(asked[key]); return; }
    var url = form.getAttribute("data-suggest-url") + "?property=" + encodeURIComponent(key) + "&" + form.getAttribute("data-period");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : { rows: [] }; })
      .then(function (answer) {
        asked[key] = (answer.rows || []).map(function (row) { return key === "country" ? row.name : row.value; });
        if (prop.value === key) fill(asked[key]);
      })
      .catch(function () { fill([]); });
  }
  prop.addEventListener("change", function () { input.value = ""; fill([]); suggest(); });
  input.addEventListener("focus", suggest);
  var menu = document.getElementById("filter-menu");
  if (menu) menu.addEventListener("toggle", function () { if (menu.open) input.focus(); });
  if (menu && menu.open) input.focus();
})();
