"""manage.py import plausible: Plausible's CSV export (daily totals) gives back its daily
totals wherever Tally shows a number (the runner, Tally's API, Plausible's v1 and v2 with
their imports switches), on days past every expiry policy; a day Tally counted itself
keeps its own numbers; the same export twice changes nothing; an import that failed half
way wrote nothing and runs again whole; removing it empties its days."""

import csv
import io
import json
import random
import zipfile
from collections import defaultdict
from datetime import date, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command

from analytics import queries
from analytics.imports import plausible
from analytics.models import DailyMetrics, Goal, ImportedLog, Site
from analytics.sites import SiteInfo
from team.roles import add_member
from tests.imports_data import brute_force, expected, ga4_export, make_events, numbers

pytestmark = pytest.mark.one_leg  # (rows into the database: the same on every server)

SOURCES = [  # (source, referrer, utm_source, utm_medium, utm_campaign)
    ("", "", "", "", ""),
    ("Google", "google.com", "", "", ""),
    ("Hacker News", "news.ycombinator.com/item", "", "", ""),
    ("Newsletter", "", "newsletter", "email", "launch"),
]
PAGES = ["/", "/pricing", "/blog/one", "/docs"]
COUNTRIES = [("DE", "DE-BE"), ("US", "US-CA"), ("FR", "")]
DEVICES = ["Desktop", "Mobile", "Tablet"]
BROWSERS = [("Chrome", "120.0"), ("Firefox", "121.0"), ("Safari", "17.2")]
SYSTEMS = [("Windows", "10"), ("Mac", "14.2"), ("Android", "14")]


def plausible_export(days: list[date], seed: int = 1) -> tuple[bytes, dict]:
    """A zip as Plausible's export makes it, from made-up daily numbers, and those numbers
    (truth[table][day] = list of rows as dicts) to compare with."""
    rnd = random.Random(seed)
    tables: dict[str, list[dict]] = defaultdict(list)
    for day in days:
        visitors = rnd.randint(20, 200)
        visits = visitors + rnd.randint(0, 40)
        pageviews = visits + rnd.randint(0, 300)
        bounces = rnd.randint(0, visits)
        duration = rnd.randint(0, 300 * visits)
        d = day.isoformat()
        tables["visitors"].append(
            dict(
                date=d, visitors=visitors, pageviews=pageviews, bounces=bounces, visits=visits, visit_duration=duration
            )
        )

        def split(total: int, n: int) -> list[int]:
            cuts = sorted(rnd.randint(0, total) for _ in range(n - 1))
            return [b - a for a, b in zip([0, *cuts], [*cuts, total])]

        for (source, referrer, utm_source, utm_medium, campaign), v in zip(SOURCES, split(visitors, len(SOURCES))):
            tables["sources"].append(
                dict(date=d, source=source, referrer=referrer, utm_source=utm_source, utm_medium=utm_medium,
                     utm_campaign=campaign, utm_content="", utm_term="", pageviews=2 * v + 1, visitors=v,
                     visits=v + 1, visit_duration=30 * v, bounces=v // 2)
            )  # fmt: skip
        for page, v in zip(PAGES, split(visitors, len(PAGES))):
            tables["pages"].append(
                dict(date=d, hostname="example.com", page=page, visits=v, visitors=v, pageviews=v + 3,
                     scroll_depth="", pageleave_visitors=v)
            )  # fmt: skip
            tables["entry_pages"].append(
                dict(date=d, entry_page=page, visitors=v, entrances=v + 1, visit_duration=10 * v, bounces=v // 3,
                     pageviews=v + 2)
            )  # fmt: skip
            tables["exit_pages"].append(
                dict(date=d, exit_page=page, visitors=v, visit_duration=5 * v, exits=v + 1, bounces=0, pageviews=v)
            )
        for (country, region), v in zip(COUNTRIES, split(visitors, len(COUNTRIES))):
            tables["locations"].append(
                dict(date=d, country=country, region=region, city=2950159 if country == "DE" else 0, visitors=v,
                     visits=v, visit_duration=v, bounces=0, pageviews=v)
            )  # fmt: skip
        for device, v in zip(DEVICES, split(visitors, len(DEVICES))):
            tables["devices"].append(
                dict(date=d, device=device, visitors=v, visits=v, visit_duration=v, bounces=0, pageviews=v)
            )
        for (browser, version), v in zip(BROWSERS, split(visitors, len(BROWSERS))):
            tables["browsers"].append(
                dict(date=d, browser=browser, browser_version=version, visitors=v, visits=v, visit_duration=v,
                     bounces=0, pageviews=v)
            )  # fmt: skip
        for (system, version), v in zip(SYSTEMS, split(visitors, len(SYSTEMS))):
            tables["operating_systems"].append(
                dict(date=d, operating_system=system, operating_system_version=version, visitors=v, visits=v,
                     visit_duration=v, bounces=0, pageviews=v)
            )  # fmt: skip
        signups = rnd.randint(0, visitors // 5)
        tables["custom_events"].append(dict(date=d, name="Signup", link_url="", path="", visitors=signups,
                                            events=signups + 2))  # fmt: skip
        tables["custom_events"].append(dict(date=d, name="Outbound Link: Click", link_url="https://github.com/",
                                            path="", visitors=3, events=4))  # fmt: skip
    first, last = days[0].strftime("%Y%m%d"), days[-1].strftime("%Y%m%d")
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for table, rows in tables.items():
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
            archive.writestr(f"imported_{table}_{first}_{last}.csv", out.getvalue())
    truth = {table: _by_day(rows) for table, rows in tables.items()}
    return data.getvalue(), truth


def _by_day(rows: list[dict]) -> dict[date, list[dict]]:
    found: dict[date, list[dict]] = defaultdict(list)
    for row in rows:
        found[date.fromisoformat(row["date"])].append(row)
    return found


def import_(*args) -> str:
    out = io.StringIO()
    call_command("import", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def days_back(info, first: int, last: int) -> list[date]:
    today = info.today()
    return [today - timedelta(days=n) for n in range(first, last - 1, -1)]


def daily(truth, days):
    return {d: truth["visitors"][d][0] for d in days}


@pytest.fixture
def old_export(site, tmp_path):
    """An export of 40 days two years back: past every expiry policy (keep_daily_days...)."""
    info = SiteInfo.from_model(site)
    days = days_back(info, 760, 721)
    data, truth = plausible_export(days)
    path = tmp_path / "plausible-export.zip"
    path.write_bytes(data)
    return info, days, path, truth


def test_daily_totals_come_back_on_every_day_past_every_expiry(old_export, r):
    info, days, path, truth = old_export
    out = import_("plausible", "example.com", str(path))
    assert f"imported 40 day(s), {days[0]} to {days[-1]}" in out
    rows = queries.run(
        r,
        queries.Query(info, days[0], days[-1], "timeseries", ("visitors", "pageviews", "visits", "bounce_rate",
                                                                "visit_duration")),
    ).rows  # fmt: skip
    want = daily(truth, days)
    for row in rows:
        t = want[date.fromisoformat(row["date"])]
        assert (row["visitors"], row["pageviews"], row["visits"]) == (t["visitors"], t["pageviews"], t["visits"])
        assert row["bounce_rate"] == round(100 * t["bounces"] / t["visits"])
        assert row["visit_duration"] == round(t["visit_duration"] / t["visits"])
    # a range's visitors are its days' summed, and say so
    result = queries.run(r, queries.Query(info, days[0], days[-1], "aggregate", ("visitors", "pageviews", "visits")))
    assert result.totals["visitors"]["value"] == sum(t["visitors"] for t in want.values())
    assert result.totals["pageviews"]["value"] == sum(t["pageviews"] for t in want.values())
    assert result.totals["visits"]["value"] == sum(t["visits"] for t in want.values())
    assert "sum" in result.meta["estimates"]["visitors"] and result.estimate
    assert result.meta["imported"] == {"days": 40, "first": days[0], "last": days[-1]}
    one = queries.run(r, queries.Query(info, days[3], days[3], "aggregate", ("visitors",)))
    assert one.totals["visitors"]["value"] == want[days[3]]["visitors"] and not one.estimate
    # new visitors are unknown, not 0
    assert (
        queries.run(r, queries.Query(info, days[0], days[-1], "aggregate", ("new_visitors",))).totals["new_visitors"][
            "value"
        ]
        is None
    )


def expected_rows(truth, table: str, days: list[date], key, visits="visits") -> dict[str, dict]:
    found: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    for day in days:
        for row in truth[table][day]:
            name = key(row)
            if not name:
                continue
            found[name]["visitors"] += row["visitors"]
            found[name]["visits"] += row.get(visits, 0)
            found[name]["pageviews"] += row.get("pageviews", 0)
    return found


@pytest.mark.parametrize(
    "dimension, table, key, visits",
    [
        ("source", "sources", lambda row: row["source"] or "Direct / None", "visits"),
        ("referrer", "sources", lambda row: row["referrer"].split("/")[0] or "Direct / None", "visits"),
        ("utm_campaign", "sources", lambda row: row["utm_campaign"], "visits"),
        ("entry_page", "entry_pages", lambda row: row["entry_page"], "entrances"),
        ("country", "locations", lambda row: row["country"], "visits"),
        ("region", "locations", lambda row: row["region"], "visits"),
        ("device", "devices", lambda row: row["device"], "visits"),
        ("browser", "browsers", lambda row: row["browser"], "visits"),
        ("browser_version", "browsers", lambda row: f"{row['browser']} {row['browser_version'].split('.')[0]}",
         "visits"),
        ("os", "operating_systems", lambda row: {"Mac": "macOS"}.get(row["operating_system"],
                                                                      row["operating_system"]), "visits"),
    ],
)  # fmt: skip
def test_breakdowns_are_the_tables_rows_summed_over_the_days(old_export, r, dimension, table, key, visits):
    info, days, path, truth = old_export
    import_("plausible", "example.com", str(path))
    for span in ([days[5]], days):
        want = expected_rows(truth, table, span, key, visits)
        rows, total = queries.breakdown(r, info, span[0], span[-1], dimension, limit=50)
        assert total == len(want)
        got = {row[dimension]: (row["visitors"], row["visits"], row["pageviews"]) for row in rows}
        assert got == {name: (w["visitors"], w["visits"], w["pageviews"]) for name, w in want.items()}


def test_pages_exits_channels_and_goals(old_export, r):
    info, days, path, truth = old_export
    Goal.objects.create(site_id=info.id, name="Signup", event_name="Signup")
    Goal.objects.create(site_id=info.id, name="Pricing", page_pattern="/pricing")
    import_("plausible", "example.com", str(path))
    want = expected_rows(truth, "pages", days, lambda row: row["page"])
    ranked = queries.run(r, queries.Query(info, days[0], days[-1], "breakdown", dimension="page", limit=10))
    assert ranked.estimate and "sum" in ranked.meta["estimates"]["visitors"]  # (a page's visitors over days: a sum)
    assert not queries.run(r, queries.Query(info, days[2], days[2], "breakdown", dimension="page")).estimate
    pages = ranked.rows
    assert {p["page"]: (p["visitors"], p["pageviews"]) for p in pages} == {
        name: (w["visitors"], w["pageviews"]) for name, w in want.items()
    }
    exits, _ = queries.breakdown(r, info, days[0], days[-1], "exit_page", limit=10)
    assert {row["exit_page"]: row["visits"] for row in exits} == {
        page: sum(row["exits"] for d in days for row in truth["exit_pages"][d] if row["exit_page"] == page)
        for page in PAGES
    }
    channels = {row["channel"]: row["visitors"] for row in queries.breakdown(r, info, days[0], days[-1], "channel")[0]}
    assert set(channels) == {"Direct", "Organic Search", "Organic Social", "Email"}  # (Hacker News: social)
    goals = {
        row["goal"]: (row["visitors"], row["events"])
        for row in queries.run(r, queries.Query(info, days[0], days[-1], "breakdown", dimension="goal")).rows
    }
    signups = [row for d in days for row in truth["custom_events"][d] if row["name"] == "Signup"]
    assert goals["Signup"] == (sum(s["visitors"] for s in signups), sum(s["events"] for s in signups))
    assert goals["Pricing"] == (want["/pricing"]["visitors"], want["/pricing"]["pageviews"])


def test_the_same_export_twice_changes_nothing_and_a_failed_run_wrote_nothing(old_export, r, tmp_path):
    info, days, path, truth = old_export

    class Breaks(io.StringIO):
        """A progress stream that fails the run half way through its writes."""

        writes = 0

        def write(self, text):
            Breaks.writes += 1
            if Breaks.writes > 3:
                raise OSError("the disk is full")
            return super().write(text)

    with pytest.raises(OSError):
        plausible.import_export(
            info_site := Site.objects.get(pk=info.id),
            [path],
            [path.name],
            say=lambda line: None,
            progress=Breaks(),
        )
    assert not DailyMetrics.objects.filter(site_id=info.id).exists() and not ImportedLog.objects.exists()
    import_("plausible", "example.com", str(path))
    before = list(DailyMetrics.objects.filter(site=info_site).order_by("date").values_list("date", "visitors"))
    assert "already imported" in import_("plausible", "example.com", str(path))
    assert list(DailyMetrics.objects.filter(site=info_site).order_by("date").values_list("date", "visitors")) == before
    assert len(before) == 40


def test_days_tally_counted_keep_their_own_numbers(site, r, tmp_path):
    """GA4 history replayed as events first; a Plausible export over the same days and the
    ten before: the replayed days stay brute force's, the others are the export's."""
    info = SiteInfo.from_model(site)
    tz = ZoneInfo("UTC")
    events = make_events(tz, info.today(), seed=3, visitors=40)
    ga4 = tmp_path / "ga4.ndjson"
    ga4.write_bytes(ga4_export(events, seed=3))
    import_("ga4", "example.com", str(ga4))
    truth = brute_force(events, tz)
    counted = sorted(truth.pageviews)
    days = [counted[0] - timedelta(days=n) for n in range(10, 0, -1)] + counted
    data, export = plausible_export(days, seed=4)
    zipped = tmp_path / "export.zip"
    zipped.write_bytes(data)
    out = import_("plausible", "example.com", str(zipped))
    assert f"kept Tally's own numbers for {len(counted)} day(s)" in out
    assert numbers(r, info, truth) == expected(truth)
    rows = queries.run(r, queries.Query(info, days[0], days[9], "timeseries", ("visitors", "pageviews"))).rows
    assert [(row["visitors"], row["pageviews"]) for row in rows] == [
        (export["visitors"][d][0]["visitors"], export["visitors"][d][0]["pageviews"]) for d in days[:10]
    ]
    log = ImportedLog.objects.get(kind="plausible")
    assert (log.first_day, log.last_day) == (days[0], days[9])
    # removing it leaves the replayed days as they were, and its own days empty
    assert plausible.remove(log) == 10
    assert numbers(r, info, truth) == expected(truth)
    after = queries.run(r, queries.Query(info, days[0], days[9], "aggregate", ("visitors", "pageviews"))).totals
    assert (after["visitors"]["value"], after["pageviews"]["value"]) == (0, 0)


def test_plausibles_apis_count_imports_only_when_asked(old_export, r, client):
    info, days, path, truth = old_export
    key = Site.objects.get(pk=info.id).create_api_key("plausible")
    import_("plausible", "example.com", str(path))
    want = daily(truth, days)
    pageviews = sum(t["pageviews"] for t in want.values())
    span = [days[0].isoformat(), days[-1].isoformat()]

    def v2(include=None, dimensions=()):
        body = {"site_id": "example.com", "metrics": ["visitors", "pageviews"], "date_range": span}
        if include is not None:
            body["include"] = include
        if dimensions:
            body["dimensions"] = list(dimensions)
        return client.post(
            "/api/v2/query", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
        ).json()

    on = v2({"imports": True})
    assert on["results"][0]["metrics"] == [sum(t["visitors"] for t in want.values()), pageviews]
    assert on["meta"]["imports_included"] is True
    off = v2()
    assert off["results"][0]["metrics"] == [0, 0]
    series = v2({"imports": True, "time_labels": True}, ["time:day"])
    assert [row["metrics"][1] for row in series["results"]] == [want[d]["pageviews"] for d in days]
    assert v2({"time_labels": True}, ["time:day"])["results"] == []
    assert len(v2({"time_labels": True}, ["time:day"])["meta"]["time_labels"]) == 40

    def v1(endpoint, **params):
        params = {"site_id": "example.com", "period": "custom", "date": f"{span[0]},{span[1]}", **params}
        return client.get(f"/api/v1/stats/{endpoint}", params, HTTP_AUTHORIZATION=f"Bearer {key}").json()

    assert v1("aggregate", metrics="pageviews", with_imported="true")["results"]["pageviews"]["value"] == pageviews
    assert v1("aggregate", metrics="pageviews")["results"]["pageviews"]["value"] == 0
    assert [row["pageviews"] for row in v1("timeseries", metrics="pageviews", with_imported="true")["results"]] == [
        want[d]["pageviews"] for d in days
    ]
    assert {row["pageviews"] for row in v1("timeseries", metrics="pageviews")["results"]} == {0}
    sources = v1("breakdown", property="visit:source", with_imported="true")["results"]
    assert {row["source"] for row in sources} == {"Direct / None", "Google", "Hacker News", "Newsletter"}
    assert v1("breakdown", property="visit:source")["results"] == []


def test_a_file_that_is_not_plausibles_export_is_refused_before_anything_is_written(site, tmp_path):
    bad = tmp_path / "export.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("imported_visitors_20240101_20240102.csv", "date,visitors,pageviews\n2024-01-01,3,4\n")
    with pytest.raises(CommandError, match=r"imported_visitors_20240101_20240102.csv: no column bounces, visits"):
        import_("plausible", "example.com", str(bad))
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(CommandError, match="not a file of Plausible's export"):
        import_("plausible", "example.com", str(other))
    number = tmp_path / "imported_visitors_20240101_20240102.csv"
    number.write_text("date,visitors,pageviews,bounces,visits,visit_duration\n2024-01-01,3,x,0,3,10\n")
    with pytest.raises(CommandError, match=r"line 2: pageviews 'x' is not a whole number"):
        import_("plausible", "example.com", str(number))
    assert not DailyMetrics.objects.exists() and not ImportedLog.objects.exists()


def test_the_dashboard_its_panels_and_an_export_show_the_imported_days(old_export, client, django_user_model):
    info, days, path, truth = old_export
    import_("plausible", "example.com", str(path))
    owner = django_user_model.objects.create_user("owner", password="pw-12345678")
    site = Site.objects.get(pk=info.id)
    add_member(site, owner, "owner")
    client.force_login(owner)
    span = f"period=custom&from={days[0]}&to={days[-1]}"
    page = client.get(f"/dashboard/example.com/?{span}")
    assert page.status_code == 200
    pageviews = sum(t["pageviews"] for t in daily(truth, days).values())
    assert f"{pageviews:,}" in page.content.decode()
    assert "Every day of this period is imported daily totals" in page.content.decode()
    wider = client.get(f"/dashboard/example.com/?period=custom&from={days[0] - timedelta(days=5)}&to={days[-1]}")
    assert "40 days of this period" in wider.content.decode()
    for prop in ("source", "country", "browser", "entry_page"):
        assert client.get(f"/dashboard/example.com/details/{prop}?{span}").status_code == 200, prop
    assert "/pricing" in client.get(f"/dashboard/example.com/pages?{span}").content.decode()
    key = site.create_api_key("export")
    export = client.get(
        "/api/v1/reports/csv", {"site": "example.com", "from": days[0], "to": days[-1]},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip
    assert export.status_code in (200, 202), export.content[:300]


def test_a_filter_on_imported_days_reads_their_rows_not_zero(old_export, r):
    """Imported days are sealed from the start, as days past every expiry policy: a filter on
    them reads the stored rows. One value on one day is its row exactly; over the range its
    days' rows summed (the export cannot say more, and the answer says it estimates)."""
    from analytics.queries import filtered, segments

    info, days, path, truth = old_export
    import_("plausible", "example.com", str(path))
    google = {d: sum(row["visitors"] for row in truth["sources"][d] if row["source"] == "Google") for d in days}
    one, _ = filtered.summary(r, info, segments.parse("source==Google"), days[4], days[4])
    assert one["visitors"] == google[days[4]] > 0
    daily, estimated = filtered.daily_values(r, info, segments.parse("source==Google"), days[0], days[-1])
    assert [daily[d]["dau"] for d in days] == [google[d] for d in days] and estimated
    total = queries.run(
        r, queries.Query(info, days[0], days[-1], "aggregate", ("visitors",), segments.parse("source==Google"))
    )
    assert 0 < total.totals["visitors"]["value"] <= sum(google.values()) and total.estimate
    pages = queries.run(
        r, queries.Query(info, days[4], days[4], "breakdown", dimension="page", filters=segments.parse("country==DE"))
    )
    assert pages.rows and all(row["visitors"] > 0 for row in pages.rows) and pages.estimate
