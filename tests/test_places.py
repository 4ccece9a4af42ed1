"""Cities and "visitors within N km" with a city database (issue 12, item 3): the day's
cities go into a GEO set at the database's coordinates; a place's visitors are the union
of the cities' visitors inside the circle, checked against brute force."""

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from analytics.ingest import geo
from tests.hll import hll_tolerance
from tests.mmdb import write_mmdb
from tests.test_openapi import documented

CITIES = {
    "81.2.69.0/24": {
        "city": {"names": {"en": "Berlin"}},
        "country": {"iso_code": "DE"},
        "location": {"latitude": 52.52, "longitude": 13.405},
        "subdivisions": [{"iso_code": "BE"}],
    },
    "81.2.70.0/24": {
        "city": {"names": {"en": "Potsdam"}},
        "country": {"iso_code": "DE"},
        "location": {"latitude": 52.3906, "longitude": 13.0645},
        "subdivisions": [{"iso_code": "BB"}],
    },
    "81.2.71.0/24": {
        "city": {"names": {"en": "Munich"}},
        "country": {"iso_code": "DE"},
        "location": {"latitude": 48.1374, "longitude": 11.5755},
        "subdivisions": [{"iso_code": "BY"}],
    },
}
NETS = {"Berlin": "81.2.69", "Potsdam": "81.2.70", "Munich": "81.2.71"}


@pytest.fixture
def city_db(tmp_path, settings):
    path = tmp_path / "city.mmdb"
    write_mmdb(path, CITIES)
    settings.GEO_CITY_DB = str(path)
    geo.reset()
    yield path
    geo.reset()


def test_visitors_near_a_place_are_the_union_of_the_cities_in_the_circle(client, make_site, r, city_db):
    site, key = make_site()
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    people = {"Berlin": range(0, 60), "Potsdam": range(60, 90), "Munich": range(90, 140)}
    events = [
        {
            "url": "https://example.com/",
            "ts": (day + timedelta(days=d, minutes=v)).isoformat(),
            "visitor": f"v{v}",
            "ip": f"{NETS[city]}.{v % 250 + 1}",
            "user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
        }
        for city, visitors in people.items()
        for v in visitors
        for d in (0, 1)
        if (d == 0 or v % 2)
    ]
    response = client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200, response.content

    def near(km):
        answer = client.get(
            "/api/v1/stats/near",
            {
                "site": "example.com",
                "from": day.date().isoformat(),
                "to": (day + timedelta(days=1)).date().isoformat(),
                "lat": 52.52,
                "lon": 13.405,
                "km": km,
            },
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert answer.status_code == 200, answer.content
        problems = list(documented(client.get("/api/v1/openapi.json").json(), "near").iter_errors(answer.json()))
        assert not problems, [p.message for p in problems]  # (the keys OpenAPI says, no others)
        return answer.json()

    close = near(50)
    assert [c["city"] for c in close["cities"]] == ["Berlin, DE-BE", "Potsdam, DE-BB"] and close["cities"][1][
        "km"
    ] == pytest.approx(27.9, abs=1)
    assert abs(close["visitors"] - 90) <= hll_tolerance(90)  # a union over both days, not a sum
    assert abs(near(600)["visitors"] - 140) <= hll_tolerance(140)
    assert near(5)["cities"][0]["city"] == "Berlin, DE-BE" and len(near(5)["cities"]) == 1
    rows = client.get(
        "/api/v1/stats/breakdown",
        {
            "site": "example.com",
            "property": "city",
            "from": day.date().isoformat(),
            "to": (day + timedelta(days=1)).date().isoformat(),
        },
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert {row["city"] for row in rows} == {"Berlin, DE-BE", "Potsdam, DE-BB", "Munich, DE-BY"}
    regions = client.get(
        "/api/v1/stats/breakdown",
        {"site": "example.com", "property": "region", "from": day.date().isoformat()},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()["results"]
    assert {row["region"] for row in regions} == {"DE-BE", "DE-BB", "DE-BY"}


def test_bad_coordinates_are_400s(client, make_site, r):
    site, key = make_site()
    for params, word in (
        ({"lat": "x", "lon": 1, "km": 1}, "lat"),
        ({"lat": 1, "lon": 200, "km": 1}, "lon"),
        ({"lat": 1, "lon": 1, "km": 0}, "km"),
        ({"lat": "nan", "lon": 1, "km": 1}, "lat"),
    ):
        answer = client.get("/api/v1/stats/near", {"site": "example.com", **params}, HTTP_AUTHORIZATION=f"Bearer {key}")
        assert answer.status_code == 400 and word in answer.json()["error"], params


def test_cities_past_the_days_quota_are_not_placed(client, make_site, r, city_db):
    """A city counted under (other) has no visitors of its own that day: it is not put on
    the map, so `near` does not count it as zero (review finding 6)."""
    site, key = make_site()
    site.max_property_values = 1
    site.save()
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events = [
        {
            "url": "https://example.com/",
            "ts": (day + timedelta(minutes=n)).isoformat(),
            "visitor": f"v{n}",
            "ip": f"{NETS[city]}.{n + 1}",
        }
        for n, city in enumerate(("Berlin", "Potsdam"))
    ]
    client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    from analytics.store import keys

    assert [m.decode() for m in r.zrange(keys.places(site.id, day.date()), 0, -1)] == ["Berlin, DE-BE"]


def test_cities_of_one_name_in_different_places_stay_apart(client, make_site, r, tmp_path, settings):
    """Two Springfields are two rows (the city value carries its region), each on the map."""
    path = tmp_path / "springfields.mmdb"
    write_mmdb(
        path,
        {
            "81.2.72.0/24": {
                "city": {"names": {"en": "Springfield"}},
                "country": {"iso_code": "US"},
                "location": {"latitude": 39.80, "longitude": -89.64},
                "subdivisions": [{"iso_code": "IL"}],
            },
            "81.2.73.0/24": {
                "city": {"names": {"en": "Springfield"}},
                "country": {"iso_code": "US"},
                "location": {"latitude": 37.21, "longitude": -93.29},
                "subdivisions": [{"iso_code": "MO"}],
            },
        },
    )
    settings.GEO_CITY_DB = str(path)
    geo.reset()
    try:
        site, key = make_site()
        day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
        events = [
            {
                "url": "https://example.com/",
                "ts": (day + timedelta(minutes=n)).isoformat(),
                "visitor": f"v{n}",
                "ip": f"81.2.{72 + n % 3 // 2}.{n + 1}",
            }
            for n in range(9)
        ]  # 6 in Illinois, 3 in Missouri
        client.post(
            "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
        )
        rows = client.get(
            "/api/v1/stats/breakdown",
            {"site": "example.com", "property": "city", "from": day.date().isoformat(), "to": day.date().isoformat()},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()["results"]
        assert {row["city"]: row["visitors"] for row in rows} == {"Springfield, US-IL": 6, "Springfield, US-MO": 3}
        from analytics.store import keys

        assert r.zcard(keys.places(site.id, day.date())) == 2
    finally:
        geo.reset()


def test_near_without_a_city_database_is_a_409_naming_the_setting(client, make_site, r, settings):
    """It answered 200 {"visitors": 0}, which reads as "nobody came from there"."""
    settings.GEO_CITY_DB = ""
    site, key = make_site()
    answer = client.get(
        "/api/v1/stats/near",
        {"site": "example.com", "lat": 52.52, "lon": 13.405, "km": 50},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert answer.status_code == 409 and answer["Content-Type"] == "application/json"
    assert "TALLY_GEO_CITY_DB" in answer.json()["error"] and ".mmdb" in answer.json()["error"]
    documented = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/stats/near"]["get"]["responses"]
    assert "TALLY_GEO_CITY_DB" in documented["409"]["description"]


def berlin_yesterday_then_no_city_database(client, key, settings) -> datetime:
    """Five visitors from Berlin yesterday at 01:00 UTC, placed by the city database, which
    is then removed; returns that time."""
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events = [
        {
            "url": "https://example.com/",
            "ts": (day + timedelta(minutes=n)).isoformat(),
            "visitor": f"v{n}",
            "ip": f"{NETS['Berlin']}.{n + 1}",
        }
        for n in range(5)
    ]
    client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    settings.GEO_CITY_DB = ""
    geo.reset()
    return day


def test_cities_stored_with_a_city_database_stay_readable_without_it(
    client, make_site, r, city_db, settings, admin_client
):
    """A city database removed later: the cities it placed are still counted, listed and
    found near a place; a range without any is a 409 (and the tab's hint) again."""
    site, key = make_site()
    day = berlin_yesterday_then_no_city_database(client, key, settings)
    when = {"from": day.date().isoformat(), "to": day.date().isoformat()}
    near = client.get(
        "/api/v1/stats/near",
        {"site": "example.com", **when, "lat": 52.5, "lon": 13.4, "km": 10},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert (
        near.status_code == 200 and near.json()["visitors"] == 5 and near.json()["cities"][0]["city"] == "Berlin, DE-BE"
    )
    tab = admin_client.get("/dashboard/example.com/breakdown", {"property": "city", "period": "custom", **when}).json()
    assert [row["name"] for row in tab["rows"]] == ["Berlin, DE-BE"] and tab["empty"] == ""
    before = (day - timedelta(days=5)).date().isoformat()
    assert (
        client.get(
            "/api/v1/stats/near",
            {"site": "example.com", "from": before, "to": before, "lat": 52.5, "lon": 13.4, "km": 10},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).status_code
        == 409
    )
    tab = admin_client.get(
        "/dashboard/example.com/breakdown", {"property": "city", "period": "custom", "from": before, "to": before}
    ).json()
    assert tab["rows"] == [] and "TALLY_GEO_CITY_DB" in tab["empty"]


def test_regions_and_cities_without_a_city_database_are_a_409_naming_the_setting(client, make_site, r, settings):
    """breakdown?property=city answered 200 with no rows, which reads as "no visitor came
    from any city": without a city database it says why, as `near` does."""
    settings.GEO_CITY_DB = ""
    site, key = make_site()
    day = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=1)
    events = [{"url": "https://example.com/", "ts": day.isoformat(), "visitor": "v1", "ip": f"{NETS['Berlin']}.1"}]
    client.post(
        "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    when = {"site": "example.com", "from": day.date().isoformat(), "to": day.date().isoformat()}
    for asked in (
        {"property": "region"},
        {"property": "city"},
        {"property": "visit:city"},
        {"property": "city", "search": "Ber"},
        {"property": "region", "filters": "country==GB"},
    ):
        answer = client.get("/api/v1/stats/breakdown", {**when, **asked}, HTTP_AUTHORIZATION=f"Bearer {key}")
        assert answer.status_code == 409 and answer["Content-Type"] == "application/json", (asked, answer.content)
        assert "TALLY_GEO_CITY_DB" in answer.json()["error"] and ".mmdb" in answer.json()["error"], asked
    country = client.get("/api/v1/stats/breakdown", {**when, "property": "country"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert country.status_code == 200 and len(country.json()["results"]) == 1  # (countries: what ingest knows)
    documented = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/stats/breakdown"]["get"]["responses"]
    assert "TALLY_GEO_CITY_DB" in documented["409"]["description"]
    settings.GEO_CITY_DB = "/var/lib/geo/city.mmdb"  # configured: a range without cities is just empty
    answer = client.get("/api/v1/stats/breakdown", {**when, "property": "city"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 200 and answer.json()["results"] == []


def test_regions_and_cities_stored_stay_readable_without_a_city_database(client, make_site, r, city_db, settings):
    """Recorded while a city database was set, listed after it is removed: from the raw day
    keys, and from the rollup's rows once those keys have expired (and the day's GEO set
    with them); a range without any is a 409."""
    from analytics import rollups
    from analytics.store import keys

    site, key = make_site()
    day = berlin_yesterday_then_no_city_database(client, key, settings)
    yesterday = day.date()

    def listed(prop, start=yesterday, end=yesterday):
        answer = client.get(
            "/api/v1/stats/breakdown",
            {"site": "example.com", "property": prop, "from": start.isoformat(), "to": end.isoformat()},
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        return answer.status_code, [row[prop] for row in answer.json().get("results", [])]

    assert listed("city") == (200, ["Berlin, DE-BE"]) and listed("region") == (200, ["DE-BE"])
    rollups.rollup(r, site, day.date(), day.date())
    for name in r.scan_iter(
        match=keys.site_pattern(site.id, f"*{day.date().isoformat()}*"), count=1000
    ):  # (as the expiry policy would)
        r.unlink(name)
    assert not r.exists(keys.places(site.id, day.date()))
    assert listed("city") == (200, ["Berlin, DE-BE"]) and listed("region") == (200, ["DE-BE"])
    before = day.date() - timedelta(days=5)
    assert listed("city", before, before)[0] == 409 and listed("region", before, day.date())[0] == 200


def test_near_counts_the_days_whose_locations_are_kept_and_names_the_others(
    client, make_site, r, city_db, settings, no_grace
):
    """Once a day's GEO set has expired (with its raw keys, keep_daily_days after the
    rollup) the rollup's rows still list its cities: `near` said "no city database". It
    counts the days still placed, against brute force, and names the days left out; a
    range of such days only is a 410 saying the locations are gone, with or without a
    city database now. Days that placed no one count (as 0)."""
    import random

    from analytics import rollups, sites
    from analytics.periods import days_between
    from analytics.rollups import expiry
    from analytics.sites import SiteInfo
    from analytics.store import keys

    site, key = make_site()
    today = SiteInfo.from_model(site).today()
    old, recent = today - timedelta(days=10), today - timedelta(days=2)
    rng = random.Random(12)
    near_berlin = {"Berlin", "Potsdam"}  # (within 50 km of the point; Munich is 500 km off)
    visits = {
        day: {f"v{v}": rng.choice(sorted(NETS)) for v in visitors}
        for day, visitors in ((old, range(0, 80)), (recent, range(40, 140)))
    }
    events = [
        {
            "url": "https://example.com/",
            "ts": datetime.combine(day, datetime.min.time(), UTC).replace(hour=1, minute=n % 60).isoformat(),
            "visitor": visitor,
            "ip": f"{NETS[city]}.{n % 250 + 1}",
        }
        for day, people in visits.items()
        for n, (visitor, city) in enumerate(people.items())
    ]
    assert (
        client.post(
            "/api/v1/events", orjson.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
        ).status_code
        == 200
    )
    spec = client.get("/api/v1/openapi.json").json()

    def near(start, end, status=200):
        answer = client.get(
            "/api/v1/stats/near",
            {
                "site": "example.com",
                "from": start.isoformat(),
                "to": end.isoformat(),
                "lat": 52.52,
                "lon": 13.405,
                "km": 50,
            },
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert answer.status_code == status, answer.content
        if status == 200:
            assert not list(documented(spec, "near").iter_errors(answer.json()))
        return answer.json()

    def truth(days, cities=near_berlin):
        return {v for day in days for v, city in visits.get(day, {}).items() if city in cities}

    span = (old, today - timedelta(days=1))
    every = near(*span)
    assert every["expired"] == [] and every["counted"] == [{"from": old.isoformat(), "to": span[1].isoformat()}]
    assert "message" not in every and abs(every["visitors"] - len(truth(visits))) <= hll_tolerance(len(truth(visits)))

    rollups.rollup(r, site, old, span[1])
    site.keep_daily_days = 5
    site.save()
    sites.clear_cache()
    expiry.apply(r, site, days_between(old, span[1]))  # (the old day's EXPIREAT is long past: its keys go now)
    assert not r.exists(keys.places(site.id, old)) and r.exists(keys.places(site.id, recent))

    partial = near(*span)
    assert partial["expired"] == [{"from": old.isoformat(), "to": old.isoformat()}]
    assert partial["counted"] == [{"from": (old + timedelta(days=1)).isoformat(), "to": span[1].isoformat()}]
    message = partial["message"]
    assert old.isoformat() in message and "no longer kept" in message and "TALLY_GEO_CITY_DB" not in message
    kept = truth([recent])
    assert abs(partial["visitors"] - len(kept)) <= hll_tolerance(
        len(kept)
    )  # (the kept day's visitors only, not the old day's)
    for row in partial["cities"]:
        one = truth([recent], {row["city"].split(",")[0]})
        assert abs(row["visitors"] - len(one)) <= hll_tolerance(len(one)), row

    for database in (str(city_db), ""):  # (with a city database, and after it is removed: the cities were recorded)
        settings.GEO_CITY_DB = database
        geo.reset()
        gone = client.get(
            "/api/v1/stats/near",
            {
                "site": "example.com",
                "from": old.isoformat(),
                "to": old.isoformat(),
                "lat": 52.52,
                "lon": 13.405,
                "km": 50,
            },
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert gone.status_code == 410 and gone["Content-Type"] == "application/json"
        error = gone.json()["error"]
        assert "no longer kept" in error and old.isoformat() in error
        assert "TALLY_GEO_CITY_DB" not in error and str(city_db) not in error
        assert near(*span)["expired"] == partial["expired"]
    nothing = (today - timedelta(days=30), today - timedelta(days=25))
    assert "TALLY_GEO_CITY_DB" in near(*nothing, status=409)["error"]  # (no city database, nothing recorded: the 409)
    assert "410" in spec["paths"]["/api/v1/stats/near"]["get"]["responses"]


def test_runs_of_days():
    from datetime import date

    from analytics.queries.places import runs

    days = [date(2024, 2, 28), date(2024, 3, 1), date(2024, 2, 29), date(2024, 3, 5)]
    assert runs(days) == [{"from": "2024-02-28", "to": "2024-03-01"}, {"from": "2024-03-05", "to": "2024-03-05"}]
    assert runs([]) == []


def test_the_dashboard_explains_an_empty_region_or_city_list_as_the_api_and_exports_do(
    client, make_site, r, city_db, settings, admin_client
):
    """The dashboard had its own, simpler test (no rows, no city database): a filter that
    left none of the cities stored while a database was set read "Regions and cities need a
    city database", where the API answered 200 and the exports gave no note. It now asks
    queries.needs_city_database too: stored values are never explained away, a range
    without any is, on the tab and its Details page alike."""
    site, key = make_site()
    day = berlin_yesterday_then_no_city_database(client, key, settings)
    stored = {"period": "custom", "from": day.date().isoformat(), "to": day.date().isoformat()}
    before = (day - timedelta(days=5)).date().isoformat()
    nothing = {"period": "custom", "from": before, "to": before}

    def api(prop, asked):
        query = {"site": "example.com", "property": prop, "from": asked["from"], "to": asked["to"]}
        if "filters" in asked:
            query["filters"] = asked["filters"]
        return client.get("/api/v1/stats/breakdown", query, HTTP_AUTHORIZATION=f"Bearer {key}").status_code

    for prop in ("region", "city"):
        for asked, explained in (
            (stored, False),
            ({**stored, "filters": "country==GB"}, False),
            (nothing, True),
            ({**nothing, "filters": "country==GB"}, True),
        ):
            tab = admin_client.get("/dashboard/example.com/breakdown", {"property": prop, **asked}).json()
            details = admin_client.get(f"/dashboard/example.com/details/{prop}", asked).content.decode()
            assert (tab["rows"] != []) == (asked is stored), (prop, asked)
            assert ("TALLY_GEO_CITY_DB" in tab["empty"]) == explained, (prop, asked, tab["empty"])
            assert ("TALLY_GEO_CITY_DB" in details) == explained, (prop, asked)
            assert (api(prop, asked) == 409) == explained, (prop, asked)  # (the same decision as the API's)
