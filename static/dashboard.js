// The site dashboard: draws the server-built Plotly figures, page search, live visitors.
(function () {
  "use strict";
  var config = { displayModeBar: false, responsive: true };
  var figures = JSON.parse(document.getElementById("figures").textContent);

  function draw(id, figure) {
    var el = document.getElementById(id);
    if (!el || !figure) return;
    if (id.indexOf("chart-retention") === 0 && window.innerWidth < 600) {
      // Phones: one short line a cell (the share), readable, instead of "12.5%<br>1234" at 6 px.
      figure.data.forEach(function (trace) { trace.text = trace.customdata; trace.textfont = { size: 10 }; });
    }
    Plotly.newPlot(el, figure.data, figure.layout, config);
  }
  Object.keys(figures).forEach(function (key) { draw("chart-" + key, figures[key]); });

  // Retention: days or weeks.
  document.querySelectorAll("[data-cohorts]").forEach(function (button) {
    button.addEventListener("click", function () {
      var unit = button.getAttribute("data-cohorts");
      document.querySelectorAll("[data-cohorts]").forEach(function (b) { b.classList.toggle("active", b === button); });
      ["day", "week"].forEach(function (u) {
        var el = document.getElementById("chart-retention-" + u);
        el.hidden = u !== unit;
        if (u === unit) Plotly.Plots.resize(el);
      });
    });
  });

  // Page search with autocomplete (prefix search on the server).
  var input = document.getElementById("page-search");
  var list = document.getElementById("page-suggestions");
  var pageChart = document.getElementById("chart-page");
  var timer = null, asked = 0;
  function showPage(path) {
    var params = new URLSearchParams(pageChart.getAttribute("data-period"));
    params.set("path", path);
    fetch(pageChart.getAttribute("data-url") + "?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        document.getElementById("page-title").textContent = "Visitors of " + body.path;
        draw("chart-page", body.figure);
      });
  }
  function suggest() {
    var ticket = ++asked;  // answers can arrive out of order: keep only the latest
    fetch(input.getAttribute("data-url") + "?q=" + encodeURIComponent(input.value), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        if (ticket !== asked) return;
        list.replaceChildren();
        body.pages.forEach(function (path) {
          var item = document.createElement("li");
          item.textContent = path;
          item.setAttribute("role", "option");
          item.addEventListener("click", function () {
            input.value = path;
            list.replaceChildren();
            showPage(path);
          });
          list.appendChild(item);
        });
      });
  }
  if (input) {
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(suggest, 120); });
    input.addEventListener("focus", suggest);
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && list.firstChild) { e.preventDefault(); list.firstChild.click(); }
    });
  }

  // Exports: small ones download at once; big ones run as a job with a progress bar.
  var bar = document.getElementById("export-progress");
  var exportStatus = document.getElementById("export-status");
  function download(blob, name) {
    var link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
  }
  function follow(job) {
    fetch(job.status_url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (s) {
      bar.hidden = false;
      bar.value = s.progress;
      if (s.state === "done") {
        exportStatus.replaceChildren();
        var link = document.createElement("a");
        link.href = s.file_url;
        link.textContent = "Download " + s.filename;
        exportStatus.appendChild(link);
      } else if (s.state === "failed") {
        exportStatus.textContent = "The export failed: " + (s.error || "unknown error");
      } else {
        exportStatus.textContent = s.message || (s.state === "running" ? "Building the export…" : "Queued…");
        setTimeout(function () { follow(job); }, 1000);
      }
    });
  }
  document.querySelectorAll("[data-export]").forEach(function (button) {
    button.addEventListener("click", function () {
      exportStatus.textContent = "Preparing…";
      fetch(button.getAttribute("data-export"), { credentials: "same-origin" }).then(function (r) {
        if (r.status === 202) return r.json().then(follow);
        if (!r.ok) return r.json().then(function (b) { exportStatus.textContent = b.error; });
        var name = (r.headers.get("Content-Disposition") || "").split('filename="')[1] || "export";
        return r.blob().then(function (blob) { download(blob, name.replace(/"$/, "")); exportStatus.textContent = "Downloaded."; });
      });
    });
  });

  // Recommendations: unseen top pages for a visitor, and the site's filter statistics.
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
          average_fill: (100 * s.average_fill).toFixed(1) + "%",
          expected_error: (100 * s.expected_error).toFixed(3) + "% (target " + (100 * s.target_error) + "%)"
        };
        Object.keys(shown).forEach(function (k) {
          panel.querySelector('[data-stat="' + k + '"]').textContent = shown[k];
        });
      });
  }

  // Live visitors: server-sent events; polling when they are unavailable; closed while hidden.
  var live = document.getElementById("live");
  var count = document.getElementById("live-count");
  var source = null, poller = null, failures = 0, ended = false;
  function show(n) { count.textContent = String(n); live.classList.add("on"); }
  function poll() {
    fetch(live.getAttribute("data-poll-url"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); }).then(function (b) { show(b.visitors); });
  }
  function startPolling() { if (!poller) { poll(); poller = setInterval(poll, 10000); } }
  function stop() {
    if (source) { source.close(); source = null; }
    if (poller) { clearInterval(poller); poller = null; }
    live.classList.remove("on");
  }
  function start() {
    if (ended) return;
    if (!window.EventSource || failures >= 3) { startPolling(); return; }
    source = new EventSource(live.getAttribute("data-live-url"), { withCredentials: true });
    source.onmessage = function (e) { failures = 0; show(JSON.parse(e.data).visitors); };
    source.addEventListener("closed", function () { ended = true; stop(); });  // access revoked
    source.onerror = function () {
      failures += 1;
      if (failures >= 3) { source.close(); source = null; startPolling(); }
    };
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) stop(); else start();
  });
  start();
})();
