// The recommendations page (templates/dashboard/recommendations.html): unseen top pages for
// a visitor, and the site's Bloom filter statistics. Every value is set as text.
(function () {
  "use strict";
  var panel = document.getElementById("recommendations");
  if (panel) {
    var form = document.getElementById("recommend-form");
    var out = document.getElementById("recommend-pages");
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var user = document.getElementById("recommend-user").value;
      fetch(panel.getAttribute("data-url") + "?user=" + encodeURIComponent(user), { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (body) {
          out.replaceChildren();
          (body.pages || []).forEach(function (p) {
            var item = document.createElement("li");
            item.textContent = p.page + " (" + p.visitors + " visitors)";
            out.appendChild(item);
          });
          if (!body.pages || !body.pages.length) {
            var none = document.createElement("li");
            none.textContent = body.error || "Nothing left to recommend.";
            out.appendChild(none);
          }
        });
    });
    fetch(panel.getAttribute("data-filters-url"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        var shown = {
          filters: String(s.filters),
          memory_bytes: (s.memory_bytes / 1024).toFixed(1) + " KB",
          budget_bytes: (s.budget_bytes / 1048576).toFixed(0) + " MB" +
            (s.full_since ? ": full since " + s.full_since + ", " + s.refused + " adds refused (no new filters)" : ""),
          average_fill: (100 * s.average_fill).toFixed(1) + "%",
          expected_error: (100 * s.expected_error).toFixed(3) + "% (target " + (100 * s.target_error) + "%)"
        };
        Object.keys(shown).forEach(function (k) {
          panel.querySelector('[data-stat="' + k + '"]').textContent = shown[k];
        });
      });
  }

})();
