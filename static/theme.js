// The colour theme: auto (the system's), light or dark, picked in the top bar and kept in
// localStorage. Loaded in <head>, before anything is painted, so a stored choice never
// flashes the other theme first (a file: the CSP allows no inline script). It keeps the
// key and the attribute of Django admin's own toggle (localStorage "theme",
// html[data-theme]): one choice for the dashboard and the admin. tally.css does the rest.
//
// Plotly draws in colours, not CSS. Each colour of a figure that is the light or the dark
// value of one of tally.css's --chart-* variables becomes that variable's value now, so
// charts.py keeps drawing with the light ones: tallyTheme.figure(figure) before a chart's
// first draw (no flash of light charts), and every drawn chart (.js-plotly-plot) is
// re-styled when the theme changes or after a redraw that brought the old colours back.
(function () {
  "use strict";
  var KEY = "theme", CHOICES = ["auto", "light", "dark"];
  var CHART = ["text", "muted", "grid", "accent", "second", "third", "pale", "faint", "land", "border", "gap"];
  var TRANSPARENT = "rgba(0, 0, 0, 0)";
  var root = document.documentElement;
  var system = window.matchMedia("(prefers-color-scheme: dark)");

  function stored() {
    var choice = null;
    try { choice = localStorage.getItem(KEY); } catch (e) { /* storage refused: auto */ }
    return CHOICES.indexOf(choice) >= 0 ? choice : "auto";
  }
  function choice() { return root.getAttribute("data-theme") || "auto"; }
  function dark() { return choice() === "dark" || (choice() !== "light" && system.matches); }

  // Colours as the browser computes them ("rgb(59, 91, 219)"), so "#3b5bdb", "rgb(...)"
  // and a variable's value compare equal; in a given scheme, to read both of a variable's.
  var probe = null, normals = {};
  function computed(value, scheme) {
    if (!probe) {
      probe = document.createElement("span");
      probe.hidden = true;
      (document.body || root).appendChild(probe);
    }
    probe.style.colorScheme = scheme;
    probe.style.color = "";
    probe.style.color = value;
    return probe.style.color ? getComputedStyle(probe).color : null;  // (null: not a colour)
  }
  function normal(value) {
    if (typeof value !== "string") return null;
    if (!(value in normals)) normals[value] = computed(value, "light");
    return normals[value];
  }
  function colors() {
    // The chart colours now: {text, muted, grid, accent, ..., hover} (tally.css's --chart-*).
    var now = dark() ? "dark" : "light", out = {};
    CHART.concat(["hover"]).forEach(function (name) { out[name] = computed("var(--chart-" + name + ")", now); });
    return out;
  }
  function swaps(now) {
    // Each chart colour, light or dark, to its value now.
    var out = {};
    CHART.forEach(function (name) {
      var value = "var(--chart-" + name + ")";
      out[computed(value, "light")] = out[computed(value, "dark")] = now[name];
    });
    return out;
  }

  function recolour(object, path, swap, out) {
    // {path: colour now} for every colour under `object` that is a chart colour (nested
    // settings, not data arrays, not the template's defaults).
    Object.keys(object).forEach(function (key) {
      var value = object[key], name = path + key;
      if (typeof value === "string" && /color$/.test(key)) {
        if (swap[normal(value)]) out[name] = swap[normal(value)];
      } else if (key === "colorscale" && Array.isArray(value)) {
        out[name] = value.map(function (stop) {
          return Array.isArray(stop) && swap[normal(stop[1])] ? [stop[0], swap[normal(stop[1])]] : stop;
        });
      } else if (value && typeof value === "object" && !Array.isArray(value) && key !== "template" && key.charAt(0) !== "_") {
        recolour(value, name + ".", swap, out);
      }
    });
    return out;
  }
  function axes(layout, data) {
    var names = Object.keys(layout).filter(function (key) { return /^[xy]axis\d*$/.test(key); });
    var cartesian = (data || []).some(function (trace) { return !trace.type || /^(scatter|bar|heatmap|histogram|box)/.test(trace.type); });
    if (cartesian) ["xaxis", "yaxis"].forEach(function (name) { if (names.indexOf(name) < 0) names.push(name); });
    return names;
  }
  function layout(current, data) {
    // The theme's layout for a figure's layout (and its traces, for its axes), as
    // Plotly.relayout paths: backgrounds transparent, the font, grids (those not hidden on
    // purpose: a transparent one stays), zero lines and the map's colours of the theme,
    // and every chart colour it names swapped for its value now.
    current = current || {};
    var now = colors(), swap = swaps(now), out = recolour(current, "", swap, {});
    out.paper_bgcolor = out.plot_bgcolor = TRANSPARENT;
    out["font.color"] = now.text;
    axes(current, data).forEach(function (axis) {
      var grid = (current[axis] || {}).gridcolor;
      if (grid === undefined || swap[normal(grid)]) out[axis + ".gridcolor"] = now.grid;
      out[axis + ".zerolinecolor"] = now.border;  // (the default template's white: unseen on a light card)
    });
    if (current.geo) {
      ["lakecolor", "subunitcolor", "countrycolor"].forEach(function (key) { out["geo." + key] = now.border; });
      out["geo.landcolor"] = now.land;
    }
    // Hover boxes: plotly.js's own are white (the unified one) or the trace's colour, with
    // light text once the font is: dark boxes in the dark, plotly's own in the light (null
    // puts its defaults back).
    var darkNow = dark();
    out["hoverlabel.bgcolor"] = darkNow ? now.hover : null;
    out["hoverlabel.bordercolor"] = darkNow ? now.muted : null;
    out["hoverlabel.font.color"] = darkNow ? now.text : null;
    return out;
  }

  function setPath(object, path, value) {
    var keys = path.split("."), last = keys.pop();
    keys.forEach(function (key) {
      if (!object[key] || typeof object[key] !== "object") object[key] = {};
      object = object[key];
    });
    object[last] = value;
  }
  function getPath(object, path) {
    return path.split(".").reduce(function (at, key) { return at == null ? undefined : at[key]; }, object);
  }
  function traceColours(trace, now, swap) {
    // {path: colour now} of a trace: its own chart colours, and the outline of bars (the
    // default template's, unseen on a light card, would draw light lines on a dark one).
    var out = recolour(trace, "", swap, {});
    if (trace.type === "bar" && !getPath(trace, "marker.line.color")) out["marker.line.color"] = now.gap;
    return out;
  }
  function figure(fig) {
    // The figure ({data, layout}) in the theme's colours, changed in place and returned:
    // call it on a figure before Plotly.newPlot (or Plotly.react) draws it.
    fig.layout = fig.layout || {};
    var now = colors(), swap = swaps(now), paths = layout(fig.layout, fig.data);
    Object.keys(paths).forEach(function (path) { if (paths[path] !== null) setPath(fig.layout, path, paths[path]); });
    (fig.data || []).forEach(function (trace) {
      var traced = traceColours(trace, now, swap);
      Object.keys(traced).forEach(function (path) { setPath(trace, path, traced[path]); });
    });
    return fig;
  }

  function changed(wanted, full, own) {
    // The paths whose colour differs from what the chart shows (`full`: with plotly.js's
    // defaults; the same colour spelled otherwise is no change, so a chart in the right
    // colours is not redrawn), or, for a default wanted back (null), set by the chart (`own`).
    var out = {};
    Object.keys(wanted).forEach(function (path) {
      var value = wanted[path];
      if (value === null ? getPath(own, path) != null : !same(value, getPath(full, path))) out[path] = value;
    });
    return out;
  }
  function same(a, b) {
    // Equal colours, or colour scales ([[0, colour], ...]) stop by stop.
    if (Array.isArray(a) || Array.isArray(b)) {
      return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every(function (x, n) { return same(x, b[n]); });
    }
    return typeof a === "string" ? normal(a) === normal(b) : a === b;
  }
  function restyle(el) {
    // A drawn chart in the theme's colours, in one Plotly.update (none if it has them).
    if (!window.Plotly || !el.data || !el._fullLayout) return Promise.resolve();
    var now = colors(), swap = swaps(now), full = el._fullData || [];
    var relayout = changed(layout(el.layout, el.data), el._fullLayout, el.layout);
    var traces = el.data.map(function (trace, n) { return changed(traceColours(trace, now, swap), full[n] || trace, trace); });
    var restyled = {};
    traces.forEach(function (paths, n) {
      Object.keys(paths).forEach(function (path) {
        restyled[path] = restyled[path] || el.data.map(function () { return undefined; });  // (undefined: that trace as it is)
        restyled[path][n] = paths[path];
      });
    });
    if (!Object.keys(relayout).length && !Object.keys(restyled).length) {
      el._tallyUpdate = null;
      return Promise.resolve();
    }
    // The same update as last time did not hold (plotly.js spells a colour its own way):
    // not again, or each redraw would ask for another.
    var update = JSON.stringify([restyled, relayout]);
    if (el._tallyUpdate === update) return Promise.resolve();
    el._tallyUpdate = update;
    return window.Plotly.update(el, restyled, relayout);
  }
  function restyleAll() {
    document.querySelectorAll(".js-plotly-plot").forEach(function (el) { el._tallyUpdate = null; restyle(el); });
  }

  // Charts drawn without tallyTheme.figure(), or redrawn from their first figure: each is
  // re-styled after its draws (a chart already in the theme's colours is left alone).
  // plotly.js marks a chart's element with its class at every plot; a new plot drops the
  // element's listeners, so each mark checks ours is still there.
  function watch(el) {
    if (typeof el.on !== "function") return;
    if (!el._tallyAfterplot) el._tallyAfterplot = function () { setTimeout(function () { restyle(el); }, 0); };
    var listeners = el._ev && typeof el._ev.listeners === "function" ? el._ev.listeners("plotly_afterplot") : [];
    if (listeners.indexOf(el._tallyAfterplot) < 0) el.on("plotly_afterplot", el._tallyAfterplot);
  }
  function watchCharts() {
    document.querySelectorAll(".js-plotly-plot").forEach(function (el) { watch(el); restyle(el); });
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        if (change.target.classList && change.target.classList.contains("js-plotly-plot")) watch(change.target);
      });
    }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["class"] });
  }

  function apply(next) {
    root.setAttribute("data-theme", next);
    document.querySelectorAll("select[data-theme-choice]").forEach(function (select) { select.value = next; });
    restyleAll();
    document.dispatchEvent(new CustomEvent("tally:theme", { detail: { choice: next, dark: dark() } }));
  }
  function set(next) {
    // Pick a theme ("auto", "light" or "dark") and keep it for the next pages.
    next = CHOICES.indexOf(next) >= 0 ? next : "auto";
    try { localStorage.setItem(KEY, next); } catch (e) { /* kept for this page only */ }
    apply(next);
  }

  root.setAttribute("data-theme", stored());  // before the first paint
  system.addEventListener("change", function () { if (choice() === "auto") apply("auto"); });
  window.addEventListener("storage", function (e) { if (e.key === KEY) apply(stored()); });  // (picked in another tab)
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("select[data-theme-choice]").forEach(function (select) {
      select.value = choice();
      select.hidden = false;  // (without this script the choice could do nothing: hidden)
      select.addEventListener("change", function () { set(select.value); });
    });
    watchCharts();
  });

  window.tallyTheme = { choice: choice, set: set, dark: dark, colors: colors, layout: layout, figure: figure, restyle: restyle };
})();
