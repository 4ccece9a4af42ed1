"""Exports: all three formats parsed back equal the API (custom properties and revenue
included); big ones run as jobs behind the semaphore; spreadsheet formulas are neutralised,
numbers left numbers."""

import csv
import io
import json
import zipfile
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from django.core.management import call_command
from openpyxl import load_workbook

from analytics import dimensions, queries
from analytics.reports import exports
from analytics.reports import tables as reports
from analytics.sites import SiteInfo
from tests.test_rollups import ingest_history


@pytest.fixture
def history(make_site, r):
    site, key = make_site()
    ingest_history(r, site, days=40)
    return site, key, SiteInfo.from_model(site)


def api(client, key, path, **params):
    return client.get(path, params, HTTP_AUTHORIZATION=f"Bearer {key}")


def tables_of(fmt, body):
    if fmt == "json":
        return {name: [t["columns"], *t["rows"]] for name, t in json.loads(body)["tables"].items()}
    if fmt == "csv":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return {
                n[:-4]: [[_num(v) for v in row] for row in csv.reader(io.StringIO(archive.read(n).decode()))]
                for n in archive.namelist()
            }
    book = load_workbook(io.BytesIO(body), read_only=True)
    return {name: [list(row) for row in book[name].iter_rows(values_only=True)] for name in book.sheetnames}


def post(client, key, events):
    response = client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200 and response.json()["accepted"] == len(events), response.content


def event(visitor, name="Signup", props=None, revenue=None):
    """A custom event of today's (an hour ago, or just after midnight in the day's first
    hour: a visit of its own minute)."""
    now = datetime.now(UTC)
    ts = max(now - timedelta(hours=1), now.replace(hour=0)).replace(minute=visitor % 60).isoformat()
    return {
        "url": "https://example.com/signup",
        "ts": ts,
        "visitor": f"v{visitor}",
        "name": name,
        **({"props": props} if props else {}),
        **({"revenue": revenue} if revenue else {}),
    }


def today_report(client, key, fmt, **params):
    today = datetime.now(UTC).date().isoformat()
    response = api(client, key, f"/api/v1/reports/{fmt}", site="example.com", **{"from": today, "to": today}, **params)
    assert response.status_code == 200, response.content
    return tables_of(fmt, response.content)


def _num(value):
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_small_exports_equal_the_api(client, history, fmt):
    site, key, info = history
    end = info.today()
    start = end - timedelta(days=13)
    response = api(
        client, key, f"/api/v1/reports/{fmt}", site="example.com", **{"from": start.isoformat(), "to": end.isoformat()}
    )
    assert response.status_code == 200
    assert response["Content-Type"] == reports.FORMATS[fmt][0]
    assert f"tally-example.com-{start}-{end}" in response["Content-Disposition"]
    tables = tables_of(fmt, response.content)
    assert set(tables) == {"summary", "daily", "pages", "retention_day", "retention_week", "goals", *dimensions.ALL}
    series = api(
        client,
        key,
        "/api/v1/stats/timeseries",
        site="example.com",
        metrics="visitors,pageviews,dau,new_visitors,wau,mau,stickiness",
        **{"from": start.isoformat(), "to": end.isoformat()},
    ).json()["results"]
    header, *rows = tables["daily"]
    assert header == ["date", "visitors", "pageviews", "dau", "new_visitors", "wau", "mau", "stickiness"]
    assert [dict(zip(header, row)) for row in rows] == series
    pages = api(
        client,
        key,
        "/api/v1/stats/pages",
        site="example.com",
        limit=1000,
        **{"from": start.isoformat(), "to": end.isoformat()},
    ).json()["results"]
    assert [dict(zip(tables["pages"][0], row)) for row in tables["pages"][1:]] == pages
    cohorts = api(
        client, key, "/api/v1/stats/retention", site="example.com", **{"from": start.isoformat(), "to": end.isoformat()}
    ).json()["cohorts"]
    assert [[c["cohort"], c["size"], *c["retained"]] for c in cohorts] == [
        [v for v in row if v not in (None, "")] for row in tables["retention_day"][1:]
    ]
    totals = api(
        client,
        key,
        "/api/v1/stats/aggregate",
        site="example.com",
        compare="previous_period",
        **{"from": start.isoformat(), "to": end.isoformat()},
    ).json()["results"]
    entry = api(
        client,
        key,
        "/api/v1/stats/breakdown",
        site="example.com",
        property="entry_page",
        limit=1000,
        **{"from": start.isoformat(), "to": end.isoformat()},
    ).json()["results"]
    assert entry and [dict(zip(tables["entry_page"][0], row)) for row in tables["entry_page"][1:]] == entry
    summary = {
        row[0]: ([None if v in (None, "") else v for v in row[1:]] + [None, None])[:2] for row in tables["summary"][1:]
    }  # (a sheet drops empty last cells)
    assert summary == {metric: [t["value"], t["change"]] for metric, t in totals.items()}


def test_a_long_period_runs_as_a_job(client, history):
    site, key, info = history
    end = info.today()
    response = api(
        client,
        key,
        "/api/v1/reports/json",
        site="example.com",
        **{"from": (end - timedelta(days=39)).isoformat(), "to": end.isoformat()},
    )
    assert response.status_code == 202
    job = response.json()
    status = client.get(job["status_url"], HTTP_AUTHORIZATION=f"Bearer {key}").json()
    assert status["state"] == "done" and status["progress"] == 1.0  # (eager in tests)
    file = client.get(job["file_url"], HTTP_AUTHORIZATION=f"Bearer {key}")
    assert file.status_code == 200
    assert len(json.loads(file.content)["tables"]["daily"]["rows"]) == 40


def test_jobs_wait_their_turn_and_say_so(client, history, r, settings):
    site, key, info = history
    settings.EXPORT_CONCURRENCY = 1
    end = info.today()
    busy = exports.semaphore(r)
    assert busy.acquire("someone-elses-export") == 0
    job = exports.create(r, info, "csv", end - timedelta(days=39), end)
    assert exports.try_build(r, job, info) is False
    status = client.get(f"/api/v1/reports/jobs/{job}", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    assert status["state"] == "queued" and status["position"] == 1
    assert "number 1 in line" in status["message"]
    assert client.get(f"/api/v1/reports/jobs/{job}/file", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 409
    busy.release("someone-elses-export")
    assert exports.try_build(r, job, info) is True
    assert client.get(f"/api/v1/reports/jobs/{job}/file", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200


def test_jobs_are_private_to_their_site(client, history, make_site, r):
    site, key, info = history
    _, other_key = make_site("other.example")
    job = exports.create(r, info, "csv", info.today(), info.today())
    assert client.get(f"/api/v1/reports/jobs/{job}", HTTP_AUTHORIZATION=f"Bearer {other_key}").status_code == 404
    assert client.get(f"/api/v1/reports/jobs/{job}").status_code == 401
    assert client.get("/api/v1/reports/jobs/nope", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 404
    assert api(client, key, "/api/v1/reports/pdf", site="example.com").status_code == 404


def test_formulas_behind_spaces_pipes_and_percents_are_neutralised_and_control_characters_dropped():
    """A path with a control character made every XLSX export of its day answer 500
    (openpyxl refuses the file): it is dropped from the cell, in every format."""
    cells = [" =1+2", "|calc", "%0A", "  -1", "/a\u0001b", "/tab\there", "/fine"]
    report = {"tables": {"pages": {"columns": ["page", "visitors"], "rows": [[c, n] for n, c in enumerate(cells)]}}}
    want = ["' =1+2", "'|calc", "'%0A", "'  -1", "/ab", "/tab\there", "/fine"]
    for fmt in ("csv", "xlsx"):
        rows = tables_of(fmt, reports.write(report, fmt))["pages"][1:]
        assert [row[0] for row in rows] == want, fmt


def test_formulas_are_neutralised():
    report = {
        "tables": {
            "pages": {
                "columns": ["page", "visitors"],
                "rows": [['=HYPERLINK("http://x")', 1], ["+1", 2], ["-2", 3], ["@SUM(A1)", 4], ["/fine", 5]],
            }
        }
    }
    rows = tables_of("csv", reports.write(report, "csv"))["pages"][1:]
    assert [row[0] for row in rows] == ['\'=HYPERLINK("http://x")', "'+1", "'-2", "'@SUM(A1)", "/fine"]
    sheet = tables_of("xlsx", reports.write(report, "xlsx"))["pages"][1:]
    assert [row[0] for row in sheet] == ['\'=HYPERLINK("http://x")', "'+1", "'-2", "'@SUM(A1)", "/fine"]


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_each_custom_property_has_a_table_like_the_breakdown_api(client, make_site, fmt):
    site, key = make_site()
    names = [
        "plan",
        "seats",
        "Plan",
        "utm/source?[x]:*\\",
        "a very long property name that goes past 31 characters",
        "a very long property name that goes past 31 characters too",
    ]
    post(
        client, key, [event(v, props={names[v % len(names)]: f"value {v % 4}", "seats": str(v % 3)}) for v in range(30)]
    )
    tables = today_report(client, key, fmt)
    found = {rows[0][0]: (name, rows) for name, rows in tables.items() if name.startswith("prop_")}
    assert set(found) == set(names)  # (the first column is headed by the property's full name)
    assert found["seats"][0] == "prop_seats"
    assert (found["Plan"][0], found["plan"][0]) == (
        "prop_Plan",
        "prop_plan~2",
    )  # (a sheet name ignores case; names in code point order)
    assert len({name.lower() for name, _ in found.values()}) == len(names)
    for name, _ in found.values():
        assert len(name) <= 31 and not set(name) & set("[]:*?/\\")
    for prop, (_, rows) in found.items():
        answer = api(
            client,
            key,
            "/api/v1/stats/breakdown",
            site="example.com",
            property=f"event:props:{prop}",
            limit=1000,
            **{"from": datetime.now(UTC).date().isoformat()},
        ).json()["results"]
        assert answer and [[_num(str(v)) for v in row] for row in rows[1:]] == [
            [_num(str(row[c])) for c in (prop, "visitors", "events")] for row in answer
        ]


def test_a_filtered_report_leaves_out_the_custom_properties(client, make_site):
    """Property rows count events, which no filter narrows (the breakdown API says so with a 400)."""
    site, key = make_site()
    post(client, key, [event(v, props={"plan": "team"}) for v in range(3)])
    assert "prop_plan" in today_report(client, key, "json")
    tables = today_report(client, key, "json", filters="page==/signup")
    assert "goals" in tables and not [name for name in tables if name.startswith("prop_") or name == "exit_page"]


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_revenue_is_a_number_beside_its_currency(client, make_site, fmt):
    site, key = make_site()
    call_command("addgoal", "example.com", "--event", "Signup")
    call_command("addgoal", "example.com", "--event", "Buy")
    call_command("addgoal", "example.com", "--page", "/pricing", "--name", "Pricing")
    post(
        client,
        key,
        [
            event(1, revenue={"currency": "EUR", "amount": "-5"}),
            event(2, "Buy", revenue={"currency": "EUR", "amount": "7"}),
            event(3, "Buy", revenue={"currency": "EUR", "amount": 12}),
            event(4, "Buy", revenue={"currency": "USD", "amount": "10.5"}),
        ],
    )
    header, *rows = today_report(client, key, fmt)["goals"]
    rows = [(row + [None] * 6)[:6] for row in rows]  # (a sheet drops empty last cells)
    assert header == ["goal", "visitors", "events", "conversion_rate", "revenue", "currency"]
    blank = "" if fmt == "csv" else None
    assert [row[:1] + row[4:] for row in rows] == [
        ["Buy", 19, "EUR"],
        ["Buy", 10.5, "USD"],
        ["Signup", -5, "EUR"],
        ["Pricing", blank, blank],
    ]
    assert rows[0][1:4] == rows[1][1:4] == [3, 3, 75.0]  # (a row per currency, the goal's counts repeated)
    goals = api(
        client,
        key,
        "/api/v1/stats/breakdown",
        site="example.com",
        property="goal",
        **{"from": datetime.now(UTC).date().isoformat()},
    ).json()["results"]
    assert {g["goal"]: g.get("revenue", {}) for g in goals} == {
        "Buy": {"EUR": 19.0, "USD": 10.5},
        "Signup": {"EUR": -5.0},
        "Pricing": {},
    }
    if fmt != "csv":  # (a sheet and JSON keep the types: numbers, as the API's amounts; a sheet reads 19.0 back as 19)
        assert all(isinstance(row[4], int | float) and isinstance(row[5], str) for row in rows[:3])


def test_numbers_are_written_plain_and_public_headers_neutralised():
    """A negative amount is no formula; a custom property's name heads its table's first column."""
    report = {"tables": {"prop_x": {"columns": ["=cmd", "revenue", "currency"], "rows": [["-Refund", -5.0, "EUR"]]}}}
    with zipfile.ZipFile(io.BytesIO(reports.write(report, "csv"))) as archive:
        assert archive.read("prop_x.csv").decode().splitlines() == ["'=cmd,revenue,currency", "'-Refund,-5.0,EUR"]
    rows = load_workbook(io.BytesIO(reports.write(report, "xlsx"))).active.iter_rows(values_only=True)
    assert list(rows) == [("'=cmd", "revenue", "currency"), ("'-Refund", -5.0, "EUR")]


def test_table_names_fit_a_sheet_and_a_file_and_stay_apart():
    taken = set()
    assert reports.table_name("plan", taken) == "prop_plan"
    assert reports.table_name("PLAN", taken) == "prop_PLAN~2"
    assert reports.table_name("plan", taken) == "prop_plan~3"
    assert reports.table_name("a/b\\c:d*e?f[g]h 'i'.csv", taken) == "prop_a_b_c_d_e_f_g_h__i__csv"
    assert reports.table_name("x" * 300, taken) == "prop_" + "x" * 26
    assert reports.table_name("x" * 299, taken) == "prop_" + "x" * 24 + "~2"
    assert reports.table_name("país 📈", taken) == "prop_país__"


def notes_of(fmt, body) -> dict:
    """{table: its note} of a report: JSON's `note`, the one-cell last row in CSV and XLSX."""
    if fmt == "json":
        return {name: t["note"] for name, t in json.loads(body)["tables"].items() if "note" in t}
    return {
        name: rows[-1][0]
        for name, rows in tables_of(fmt, body).items()
        if len(rows) > 1
        and str(rows[-1][0]).startswith("No rows:")
        and not [v for v in rows[-1][1:] if v not in ("", None)]
    }


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_region_and_city_tables_say_why_they_are_empty_without_a_city_database(client, make_site, settings, fmt):
    """Without a city database the region and city tables came out empty, unexplained,
    where the breakdown API answers 409: they carry a note naming the setting (not a
    path), filtered or not. With one configured, an empty table is just empty."""
    settings.GEO_CITY_DB = ""
    site, key = make_site()
    post(client, key, [{**event(v), "name": "pageview", "ip": f"81.2.69.{v + 1}"} for v in range(4)])
    today = {"from": datetime.now(UTC).date().isoformat()}
    for params in ({}, {"filters": "page==/signup"}):
        response = api(client, key, f"/api/v1/reports/{fmt}", site="example.com", **today, **params)
        tables, notes = tables_of(fmt, response.content), notes_of(fmt, response.content)
        assert set(notes) == {"region", "city"}, params
        for name in ("region", "city"):
            assert "TALLY_GEO_CITY_DB" in notes[name] and ".mmdb" in notes[name]
            assert tables[name][1:] == ([] if fmt == "json" else [[notes[name]]])  # (no rows but the note)
            answer = api(client, key, "/api/v1/stats/breakdown", site="example.com", property=name, **today, **params)
            assert (
                answer.status_code == 409 and queries.NO_CITY_DATABASE in answer.json()["error"]
            )  # (the same decision, words)
            assert queries.NO_CITY_DATABASE in notes[name]
        assert len(tables["country"]) == 2 and "country" not in notes  # (countries: what ingest knows)
    settings.GEO_CITY_DB = "/srv/operator-only/geo/city.mmdb"  # configured: a range without cities is just empty
    response = api(client, key, f"/api/v1/reports/{fmt}", site="example.com", **today)
    assert notes_of(fmt, response.content) == {} and tables_of(fmt, response.content)["city"][1:] == []
    if fmt != "xlsx":  # (a zip's and JSON's bytes; the sheet's text is compressed)
        assert b"operator-only" not in response.content and b"TALLY_GEO_CITY_DB" not in response.content


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_regions_and_cities_stored_are_exported_without_a_note(client, make_site, r, settings, tmp_path, fmt):
    """Recorded while a city database was set, exported after it is removed: the rows, as
    the breakdown API gives them (five visitors from Berlin, counted by hand), no note;
    from the rollup's rows too once the day's raw keys have expired."""
    from analytics import rollups
    from analytics.ingest import geo
    from analytics.store import keys
    from tests.mmdb import write_mmdb
    from tests.test_places import CITIES, berlin_yesterday_then_no_city_database

    path = tmp_path / "city.mmdb"
    write_mmdb(path, CITIES)
    settings.GEO_CITY_DB = str(path)
    geo.reset()
    site, key = make_site()
    day = berlin_yesterday_then_no_city_database(client, key, settings).date()
    when = {"from": day.isoformat(), "to": day.isoformat()}

    def exported():
        response = api(client, key, f"/api/v1/reports/{fmt}", site="example.com", **when)
        assert notes_of(fmt, response.content) == {} and str(path).encode() not in response.content
        tables = tables_of(fmt, response.content)
        for name in ("region", "city"):
            answer = api(client, key, "/api/v1/stats/breakdown", site="example.com", property=name, **when)
            assert [dict(zip(tables[name][0], row)) for row in tables[name][1:]] == answer.json()["results"]
        return {name: [row[0] for row in tables[name][1:]] for name in ("region", "city")}, tables["city"][1][2]

    assert exported() == ({"region": ["DE-BE"], "city": ["Berlin, DE-BE"]}, 5)  # (five visits from Berlin)
    rollups.rollup(r, site, day, day)
    for name in r.scan_iter(
        match=keys.site_pattern(site.id, f"*{day.isoformat()}*"), count=1000
    ):  # (as the expiry policy would)
        r.unlink(name)
    assert exported() == ({"region": ["DE-BE"], "city": ["Berlin, DE-BE"]}, 5)


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_an_anonymous_path_with_a_control_character_does_not_break_the_days_export(client, make_site, fmt):
    _, key = make_site()
    ts = max(
        datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC).replace(hour=0, minute=0)
    ).isoformat()  # (today's)
    post(
        client,
        key,
        [
            {"url": "https://example.com/a\x01b", "ts": ts, "visitor": "v1", "name": "pageview"},
            {"url": "https://example.com/=cmd|x", "ts": ts, "visitor": "v2", "name": "pageview"},
        ],
    )
    pages = {row[0] for row in today_report(client, key, fmt)["pages"][1:]}
    assert pages == ({"/a\x01b", "/=cmd|x"} if fmt == "json" else {"/ab", "/=cmd|x"})
