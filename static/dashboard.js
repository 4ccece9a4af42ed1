// The site dashboard: draws the server-built Plotly figures, the breakdown panels, page
// search, exports, recommendations, live visitors.
(function () {
  "use strict";
  var config = { displayModeBar: false, responsive: true };
  var figures = JSON.parse(document.getElementById("figures").textContent);
  // px of the width a chart is given (not the window's: from about 900 px the grid's two
  // columns give each chart 380 to 480): narrower is laid out as on a phone. The legends above
  // the plot take about 390 px in one row, the plot's margins 64 to 76 more. (600, the old
  // window rule's, would put every laptop's legends, at 480 px, under the plots.)
  var PHONE = 470;
  var drawn = {};  // chart id -> {narrow: as drawn; legend, height: the figure's own, traces (charts with a legend); cells, labels: the retention's cells and the labels shown in them; map}

  function given(el) {
    // The width the chart's box gives it (0: hidden).
    var box = el.parentNode, style = getComputedStyle(box);
    return Math.max(0, box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
  }
  function isNarrow(el, width) {
    // Under PHONE, or under the chart's own minimum width: the retention table keeps 640 px
    // and scrolls sideways in its box, its cells then at their narrowest.
    return width < Math.max(PHONE, parseFloat(getComputedStyle(el).minWidth) || 0);
  }

  function legendLayout(chart, narrow) {
    // Phones: the legend in rows under the plot (above it, wrapped, it covered the lines),
    // and the figure taller by about what the legend takes.
    if (!narrow) return { legend: Object.assign({}, chart.legend), height: chart.height };
    return {
      legend: Object.assign({}, chart.legend, { orientation: "h", x: 0, xanchor: "left", y: -0.2, yanchor: "top" }),
      height: chart.height + 20 * chart.traces
    };
  }
  // Retention's cell labels: the share and the count ("12.5%<br>1234") where a cell has room
  // for them, the share alone ("13%") where it has room for that, else none: with 30 day
  // cohorts a cell is 16 to 35 px wide, and the labels ran into each other (the colour
  // stays, the hover keeps the share). Decided from the cells' size in the chart as drawn,
  // so they follow its width: the widest label of each kind, measured in the chart's font.
  var SHORT_SIZE = 9, LINE = 1.3, ROOM = 1;  // px: the short labels' font (the full ones'); plotly.js's line height (em); clear each side
  var ruler = document.createElement("canvas").getContext("2d");
  function labelBox(labels, size, family) {
    // The widest and tallest of the labels (2-D, lines split by <br>) at this font size.
    var widest = 0, lines = 0;
    ruler.font = size + "px " + family;
    labels.forEach(function (row) {
      row.forEach(function (label) {
        var parts = String(label || "").split("<br>");
        if (parts.join("")) lines = Math.max(lines, parts.length);
        parts.forEach(function (part) { widest = Math.max(widest, ruler.measureText(part).width); });
      });
    });
    return { width: widest, height: lines * size * LINE };
  }
  function retentionCells(trace, family) {
    var size = (trace.textfont || {}).size || 12;
    return {
      columns: (trace.x || []).length || 1, rows: (trace.y || []).length || 1, xgap: trace.xgap || 0, ygap: trace.ygap || 0,
      full: { text: trace.text, size: size, box: labelBox(trace.text || [], size, family) },
      short: { text: trace.customdata, size: SHORT_SIZE, box: labelBox(trace.customdata || [], SHORT_SIZE, family) }
    };
  }
  function labelsThatFit(cells, plotWidth, plotHeight) {
    // "full", "short" or "none": the richest labels whose widest fits every cell.
    var width = plotWidth / cells.columns - cells.xgap - 2 * ROOM, height = plotHeight / cells.rows - cells.ygap;
    if (cells.full.box.width <= width && cells.full.box.height <= height) return "full";
    if (cells.short.box.width <= width && cells.short.box.height <= height) return "short";
    return "none";
  }
  function cellLabels(cells, labels) {
    var shown = cells[labels === "full" ? "full" : "short"];
    return { text: [shown.text], "textfont.size": [shown.size], texttemplate: [labels === "none" ? "" : "%{text}"] };
  }
  function fitLabels(el) {
    // The labels for the cells as drawn now; once shown, data-labels says which, and
    // data-labels-width the chart's width they were chosen for (the browser tests wait for it).
    var chart = drawn[el.id], layout = el._fullLayout;
    if (!chart || !chart.cells || chart.restyling || !layout || !layout._size || !el.getClientRects().length) return;  // (hidden: when shown)
    var labels = labelsThatFit(chart.cells, layout._size.w, layout._size.h);
    if (labels !== chart.labels) {
      chart.labels = labels;
      chart.restyling = true;  // (not "shown" before they are)
      el.removeAttribute("data-labels");
      var again = function () { chart.restyling = false; fitLabels(el); };
      Plotly.restyle(el, cellLabels(chart.cells, labels), [0]).then(again, again);
      return;
    }
    el.setAttribute("data-labels", labels);
    el.setAttribute("data-labels-width", String(layout.width));
  }
  function mapHeight(width) { return Math.min(300, Math.round(width * 0.55)); }  // the world is twice as wide as high
  function pin(el, height) {
    // The chart's box as tall as its figure: plotly.js's responsive resize drops the layout's
    // height and takes the box's, which was the CSS min-height (220 px) from the second resize
    // on, the figure drawn over what follows it.
    if (!height) return;
    el.style.minHeight = "0";
    el.style.height = height + "px";
  }
  function settled(el, narrow) {
    // Set once plotly.js has drawn the layout chosen, unless another was chosen meanwhile (the
    // browser tests wait for it).
    return function () { if (drawn[el.id].narrow === narrow) el.setAttribute("data-layout", narrow ? "phone" : "wide"); };
  }

  function draw(id, figure, extra) {
    var el = document.getElementById(id);
    if (!el || !figure) return;
    var width = given(el), narrow = isNarrow(el, width);
    var chart = drawn[id] = { narrow: narrow };
    if (id.indexOf("chart-retention") === 0 && figure.data.length) {
      // A first guess from the width given (the table's minimum if wider), set right once drawn.
      var trace = figure.data[0], margin = figure.layout.margin || {};
      chart.cells = retentionCells(trace, (figure.layout.font || {}).family || "sans-serif");
      chart.labels = labelsThatFit(chart.cells, Math.max(width, parseFloat(getComputedStyle(el).minWidth) || 0) - (margin.l || 0) - (margin.r || 0),
                                   (figure.layout.height || 300) - (margin.t || 0) - (margin.b || 0));
      var guess = cellLabels(chart.cells, chart.labels);
      trace.text = guess.text[0];
      trace.texttemplate = guess.texttemplate[0];
      trace.textfont = Object.assign({}, trace.textfont, { size: guess["textfont.size"][0] });
    }
    if (figure.data.length > 1) {
      Object.assign(chart, { legend: figure.layout.legend || {}, height: figure.layout.height || 300, traces: figure.data.length });
      Object.assign(figure.layout, legendLayout(chart, narrow));
    }
    if (id === "chart-map") {
      chart.map = true;
      figure.layout.height = mapHeight(width);
    }
    pin(el, figure.layout.height);
    el.removeAttribute("data-layout");
    if (window.tallyTheme) window.tallyTheme.figure(figure);  // (the theme's colours from the first paint: static/theme.js)
    Plotly.newPlot(el, figure.data, figure.layout, Object.assign({}, config, extra)).then(settled(el, narrow)).then(function () {
      if (figure.links) followOnClick(el, figure.links);
      if (!chart.cells) return;
      // Every redraw (plotly.js's own on a window resize too) may change the cells' size.
      el.on("plotly_afterplot", function () { setTimeout(function () { fitLabels(el); }, 0); });
      fitLabels(el);
    });
    if (observer) { observer.observe(el); observer.observe(el.parentNode); }
  }

  function followOnClick(el, links) {
    // A click on a point opens its link, which the server built for each point in order:
    // the main chart's day, week or month; the map's country as a filter (the page's
    // period, filters and comparison kept).
    el.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      var href = point && links[point.pointIndex];
      if (href) location.href = href;
    });
    el.setAttribute("data-links", "");  // (clicks followed from now on: the browser tests wait for it)
  }

  function fit(id) {
    // The chart's layout for the width it is given now: the legend's place when the width
    // crossed PHONE, the map's height when its width changed, the retention's labels. (Hidden
    // charts wait until they are shown: the observer, or the tab or toggle, calls then.)
    var el = document.getElementById(id), chart = drawn[id];
    if (!el || !el._fullLayout || !el.getClientRects().length) return;
    var width = given(el);
    if (!width) return;
    var narrow = isNarrow(el, width), update = {}, done = Promise.resolve();
    if (chart.legend && chart.narrow !== narrow) Object.assign(update, legendLayout(chart, narrow));
    if (chart.map && el._fullLayout.height !== mapHeight(width)) update.height = mapHeight(width);
    if (Object.keys(update).length) {
      pin(el, update.height);
      // autosize last: a relayout of the height alone pins the width at the old one (plotly.js
      // "does not support autosize with only one dimension fixed"), and the chart would no
      // longer follow its card's width.
      done = Plotly.relayout(el, Object.assign(update, { autosize: true }));
    } else if (Math.abs(el._fullLayout.width - el.clientWidth) > 1) {
      done = Plotly.Plots.resize(el);  // (resized while hidden: plotly.js leaves hidden charts be)
    }
    if (chart.cells) done = done.then(function () { fitLabels(el); });
    if (chart.narrow !== narrow || update.height) {
      chart.narrow = narrow;
      el.removeAttribute("data-layout");
      done.then(settled(el, narrow));
    }
  }
  // A phone turned, a window resized, a tab or a chart shown: each chart follows its own
  // width, once the resizing has settled.
  var resized = null;
  function refit() {
    clearTimeout(resized);
    resized = setTimeout(function () { Object.keys(drawn).forEach(fit); }, 150);
  }
  var observer = window.ResizeObserver ? new ResizeObserver(refit) : null;
  if (!observer) window.addEventListener("resize", refit);
  // The map waits for its tab (its outlines are a download of their own).
  Object.keys(figures).forEach(function (key) { if (key !== "map") draw("chart-" + key, figures[key]); });

  // Panels: tabs of breakdown lists; the first tab of each came with the page, the others
  // are asked for when opened. Every value is set as text.
  var panels = document.getElementById("panels");
  function showRows(list, body) {
    var head = document.createElement("div");
    head.className = "list-head";
    [body.column, body.metric.charAt(0).toUpperCase() + body.metric.slice(1)].forEach(function (text) {
      var span = document.createElement("span");
      span.textContent = text;
      head.appendChild(span);
    });
    var rows = document.createElement("ol");
    rows.className = "rows";
    body.rows.forEach(function (row) {
      var item = document.createElement("li");
      var bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = row.bar + "%";
      var name = document.createElement(row.href ? "a" : "span");  // a row that can filter links to the filtered view
      name.className = body.path ? "name path" : "name";
      name.textContent = row.name;
      name.title = row.href ? "Filter by " + row.name : row.name;
      if (row.href) name.href = row.href;
      var count = document.createElement("span");
      count.className = "count";
      count.textContent = row.count.toLocaleString("en-US");
      item.append(bar, name, count);
      rows.appendChild(item);
    });
    if (!body.rows.length) {
      var none = document.createElement("li");
      none.className = "empty";
      none.textContent = body.empty || "No data for this period";  // (or why: regions and cities need a city database)
      rows.appendChild(none);
    }
    list.replaceChildren(head, rows);
    list.setAttribute("data-loaded", "");
    var more = list.parentNode.querySelector(".more");
    more.querySelector("a").href = body.details;
    more.hidden = !body.rows.length;
  }
  function load(list) {
    var property = list.getAttribute("data-property");
    list.setAttribute("aria-busy", "true");
    fetch(panels.getAttribute("data-url") + "?property=" + encodeURIComponent(property) + "&" + panels.getAttribute("data-period"),
      { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (body) {
        if (list.getAttribute("data-property") === body.property) showRows(list, body);  // (not an older choice's answer)
      })
      .catch(function () { list.textContent = "This list could not be loaded; try again later."; })
      .finally(function () { list.removeAttribute("aria-busy"); });
  }
  function openTab(panel, tab) {
    panel.querySelectorAll("[data-tab]").forEach(function (b) {
      var on = b === tab;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", String(on));
    });
    panel.querySelectorAll("[data-pane]").forEach(function (pane) {
      pane.hidden = pane.getAttribute("data-pane") !== tab.getAttribute("data-tab");
      if (pane.hidden) return;
      var list = pane.querySelector(".list");
      if (list && !list.hasAttribute("data-loaded") && !list.hasAttribute("aria-busy")) load(list);
      var map = pane.querySelector("#chart-map");
      if (map && !map.hasAttribute("data-drawn")) {
        map.setAttribute("data-drawn", "");
        draw("chart-map", figures.map, { topojsonURL: map.getAttribute("data-topojson-url") });
      } else if (map) {
        refit();  // (the width changed while its tab was closed)
      }
    });
  }
  document.querySelectorAll(".panel").forEach(function (panel) {  // (the four panels, and Goals' tabs)
    panel.querySelectorAll("[data-tab]").forEach(function (tab) {
      tab.addEventListener("click", function () { openTab(panel, tab); });
    });
  });
  if (panels) {
    panels.querySelectorAll(".panel").forEach(function (panel) {
      panel.querySelectorAll("select.choice").forEach(function (select) {
        select.addEventListener("change", function () {
          var list = select.parentNode.querySelector(".list");
          list.setAttribute("data-property", select.value);
          load(list);
        });
      });
    });
  }

  // Retention: days or weeks.
  document.querySelectorAll("[data-cohorts]").forEach(function (button) {
    button.addEventListener("click", function () {
      var unit = button.getAttribute("data-cohorts");
      document.querySelectorAll("[data-cohorts]").forEach(function (b) { b.classList.toggle("active", b === button); });
      ["day", "week"].forEach(function (u) {
        var el = document.getElementById("chart-retention-" + u);
        el.hidden = u !== unit;
        if (u === unit) Plotly.Plots.resize(el).then(function () { fitLabels(el); });
      });
      refit();  // (a width crossed PHONE while it was hidden)
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

  // Live visitors: pushed over the live stream (static/live.js), polled when it is unavailable.
  var live = document.getElementById("live");
  var count = document.getElementById("live-count");
  // Under filters the stream's count is everyone's: a tick asks for the filtered count
  // (at most every 2 s) instead of showing it.
  var noun = document.getElementById("live-noun");
  function show(n) {
    count.textContent = n === null ? "–" : String(n);
    if (noun) noun.textContent = n === 1 ? "visitor" : "visitors";
    live.classList.add("on");
  }
  var polled = 0;
  function poll() {
    polled = Date.now();
    fetch(live.getAttribute("data-poll-url"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); }).then(function (b) { show(b.visitors); });
  }
  var filtered = live.hasAttribute("data-filtered");
  function tick(n) { if (!filtered) show(n); else if (Date.now() - polled > 2000) poll(); }
  window.tallyLive(live, { tick: tick, poll: poll });
})();
