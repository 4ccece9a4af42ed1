// The realtime view (templates/dashboard/realtime.html): the last 30 minutes by the minute
// and the lists of the visitors in them, kept current without a reload: each tick of the
// live stream (ingest publishes one at most once a second) fetches the view's numbers
// again, at most every REFRESH ms; polled when the stream is unavailable (static/live.js).
// Every value is set as text. Under filters the stream's count is everyone's: a tick only
// fetches the filtered numbers, and there is no minute chart.
(function () {
  "use strict";
  var REFRESH = 2000;
  var live = document.getElementById("live");
  var count = document.getElementById("live-count");
  var chart = document.getElementById("chart-minutes");
  var numbers = JSON.parse(document.getElementById("realtime").textContent);
  var filtered = live.hasAttribute("data-filtered");
  var asked = 0, waiting = null;

  function figure(view) {
    var minutes = view.minutes;
    var data = [{
      type: "bar",
      x: minutes.map(function (m) { return m.minute; }),
      y: minutes.map(function (m) { return m.visitors; }),
      name: "Visitors",
      marker: { color: "#3b5bdb" },
      hovertemplate: "%{x}: %{y:,d} visitors<extra></extra>"
    }];
    var top = Math.max.apply(null, minutes.map(function (m) { return m.visitors || 0; }).concat([0]));
    var layout = {
      height: 220, margin: { l: 40, r: 12, t: 8, b: 36 }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: 12, color: "#1d2430" },
      xaxis: { type: "category", gridcolor: "#eef1f5", nticks: 8 },
      yaxis: { gridcolor: "#eef1f5", rangemode: "tozero", tickformat: ",d", dtick: top <= 5 ? 1 : null },
      showlegend: false
    };
    var found = { data: data, layout: layout };
    if (window.tallyTheme) window.tallyTheme.figure(found);  // (static/theme.js: the theme's colours)
    return found;
  }
  function lists(view) {
    Object.keys(view.panels).forEach(function (key) {
      var list = document.getElementById("realtime-" + key);
      if (!list) return;
      var rows = view.panels[key];
      var top = Math.max.apply(null, rows.map(function (row) { return row.visitors; }).concat([1]));
      list.replaceChildren();
      rows.forEach(function (row) {
        var item = document.createElement("li");
        var bar = document.createElement("span");
        bar.className = "bar";
        bar.style.width = (100 * row.visitors / top).toFixed(1) + "%";
        var name = document.createElement(row.href ? "a" : "span");
        name.className = key === "page" ? "name path" : "name";
        name.textContent = name.title = row.name;
        if (row.href) { name.href = row.href; name.title = "Filter by " + row.name; }
        var n = document.createElement("span");
        n.className = "count";
        n.textContent = row.visitors.toLocaleString();
        item.append(bar, name, n);
        list.appendChild(item);
      });
      if (!rows.length) {
        var none = document.createElement("li");
        none.className = "empty";
        none.textContent = "No visitors in the last 30 minutes";
        list.appendChild(none);
      }
    });
  }
  function render(view) {
    numbers = view;
    var none = view.visitors === null;  // (a filter the view cannot apply: no number)
    document.getElementById("realtime-visitors").textContent = none ? "–" : view.visitors.toLocaleString();
    count.textContent = none ? "–" : view.now.toLocaleString();
    var noun = document.getElementById("live-noun");
    if (noun) noun.textContent = view.now === 1 ? "visitor" : "visitors";
    live.classList.add("on");
    if (chart) {
      var f = figure(view);
      Plotly.react(chart, f.data, f.layout, { displayModeBar: false, responsive: true });
    }
    lists(view);
    live.setAttribute("data-visitors", String(view.visitors));  // (what the browser test waits for)
  }
  function refresh() {
    // At most one fetch each REFRESH ms: a burst of ticks is one fetch after it.
    var wait = asked + REFRESH - Date.now();
    if (wait > 0) { if (!waiting) waiting = setTimeout(function () { waiting = null; refresh(); }, wait); return; }
    asked = Date.now();
    fetch(live.getAttribute("data-view-url"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(render)
      .catch(function () { /* (the next tick tries again) */ });
  }
  render(numbers);
  window.tallyLive(live, {  // (static/live.js)
    tick: function (n) { if (!filtered) count.textContent = String(n); refresh(); },
    poll: refresh
  });
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
})();
