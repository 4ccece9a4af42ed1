"""manage.py import ga4: a GA4 BigQuery export replayed through ingest counts what brute
force counts over the same events; the same file twice changes nothing; bad rows are
reported by line and the good ones still count; a file that is no export is refused."""

import io
from datetime import timedelta
from zoneinfo import ZoneInfo

import orjson
import pytest
from django.core.management import CommandError, call_command

from analytics import queries
from analytics.imports import ga4, replay
from analytics.models import ImportedLog
from analytics.queries.goals import revenue
from analytics.sites import SiteInfo
from analytics.store import keys
from tests import imports_data
from tests.imports_data import brute_force, expected, ga4_export, gz, make_events, numbers

pytestmark = (
    pytest.mark.one_leg
)  # (the readers' own logic; the script they replay through runs on every server in the engine's tests)

BERLIN = ZoneInfo("Europe/Berlin")


def import_(*args):
    out = io.StringIO()
    call_command("import", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def berlin(make_site):
    return make_site(timezone="Europe/Berlin")[0]


def test_it_counts_an_export_as_brute_force_does(berlin, r, tmp_path):
    info = SiteInfo.from_model(berlin)
    events = make_events(BERLIN, info.today())
    path = tmp_path / "events_2026.json.gz"
    path.write_bytes(gz(ga4_export(events)))
    out = import_("ga4", "example.com", str(path))

    truth = brute_force(events, BERLIN)
    assert numbers(r, info, truth) == expected(truth)
    views, customs = sum(truth.pageviews.values()), sum(truth.events.values())
    assert f"imported {views:,} pageviews and {customs:,} custom events" in out
    assert "1 without user_pseudo_id" in out and "unparsable 0." in out and "Rolled up" in out
    days = imports_data.days_of(truth)
    paid = sum(e.revenue for e in events if e.revenue)
    assert revenue(r, info, days, "purchase") == {"EUR": pytest.approx(paid)}
    plans = queries.event_properties(r, info, days[0], days[-1], "Signup")["plan"]
    assert sum(row["events"] for row in plans) == sum(n for (_, name), n in truth.events.items() if name == "Signup")
    cities, _ = queries.breakdown(r, info, days[0], days[-1], "city", limit=10)
    assert {row["city"] for row in cities} <= {f"{p[4]}, {p[2]}" for p in imports_data.PLACES}  # (GA4 names regions)
    assert ImportedLog.objects.get().kind == "ga4"


def test_importing_the_same_export_again_changes_nothing(berlin, r, tmp_path):
    info = SiteInfo.from_model(berlin)
    events = make_events(BERLIN, info.today(), seed=7, visitors=80)
    plain = tmp_path / "events.json"
    plain.write_bytes(ga4_export(events, seed=7))
    import_("ga4", "example.com", str(plain))
    truth = brute_force(events, BERLIN)
    before = numbers(r, info, truth)
    zipped = tmp_path / "events.json.gz"  # (the same content, compressed: the same export)
    zipped.write_bytes(gz(plain.read_bytes()))
    assert import_("ga4", "example.com", str(plain), str(zipped)).count("already imported") == 2
    assert numbers(r, info, truth) == before == expected(truth)


def test_bad_rows_are_reported_by_line_and_the_good_ones_count(berlin, r, tmp_path):
    info = SiteInfo.from_model(berlin)
    events = make_events(BERLIN, info.today(), seed=3, visitors=20)
    rows = ga4_export(events, seed=3).splitlines()
    no_time = orjson.loads(rows[0])
    del no_time["event_timestamp"]
    rows[2:2] = [b'{"event_name": "page_view", "cut short', orjson.dumps(no_time), b"[1, 2]"]
    path = tmp_path / "damaged.json"
    path.write_bytes(b"\n".join(rows) + b"\n")
    out = import_("ga4", "example.com", str(path))
    assert "unparsable 3 (first: line 3, 4, 5)" in out
    truth = brute_force(events, BERLIN)
    assert numbers(r, info, truth)["pageviews"] == expected(truth)["pageviews"]


def test_a_file_that_is_no_export_or_no_gzip_is_a_clear_error(berlin, r, tmp_path):
    csv_file = tmp_path / "umami.csv"
    csv_file.write_text("event_id,created_at\n1,2026-01-01\n")
    with pytest.raises(CommandError, match="not a GA4 BigQuery export"):
        import_("ga4", "example.com", str(csv_file))
    broken = tmp_path / "events.json.gz"
    broken.write_bytes(gz(b'{"event_name": "page_view"}\n' * 100)[:40])
    with pytest.raises(CommandError, match="cut short.*nothing was imported"):
        import_("ga4", "example.com", str(broken))
    with pytest.raises(CommandError, match="no such file"):
        import_("ga4", "example.com", str(tmp_path / "missing.json"))
    assert not ImportedLog.objects.exists() and not list(r.scan_iter(match=f"tally:{{{berlin.pk}}}:*"))


def test_names_become_tallys():
    row = {
        "event_name": "file_download",
        "event_timestamp": "1763650800000000",
        "user_pseudo_id": "1.2",
        "event_params": [
            {"key": "page_location", "value": {"string_value": "https://www.example.com/a%C3%BC?utm_source=x"}},
            {"key": "file_name", "value": {"string_value": "report.pdf"}},
            {"key": "percent", "value": {"int_value": "90"}},
            {"key": "ga_session_id", "value": {"int_value": "123"}},
        ],
        "device": {
            "category": "tablet",
            "operating_system": "iOS",
            "operating_system_version": "iOS 17.4.1",
            "web_info": {"browser": "Chrome", "browser_version": "121.0.6167.138"},
        },
        "geo": {"country": "Côte d’Ivoire", "region": "(not set)", "city": "(not set)"},
    }
    hit = ga4.event(row, "example.com", replay.Summary())
    assert hit is not None and hit.path == "/aü" and hit.name == "file_download" and hit.interactive
    assert hit.props == (("file_name", "report.pdf"),)
    fields = dict(f.split("\x1f") for part in hit.attrs.split("\x1d") for f in part.split("\x1e"))
    assert fields["utm_source"] == "x" and fields["country"] == "CI" and "region" not in fields
    assert (fields["browser"], fields["browser_version"], fields["os_version"], fields["device"]) == (
        "Chrome Mobile iOS",
        "Chrome Mobile iOS 121",
        "iOS 17.4",
        "Tablet",
    )


def test_a_year_old_export_counts_as_brute_force_once_its_keys_are_gone(make_site, r, tmp_path, no_grace):
    """History older than every expiry (keep_page_days, keep_segment_days, keep_daily_days):
    once the import's rollup is done the raw keys go (no grace here), and the numbers come
    from the stored rows: the same as brute force, none of them a 0 from a gone key."""
    site = make_site()[0]
    info = SiteInfo.from_model(site)
    today = info.today() - timedelta(days=site.keep_daily_days + 300)
    events = make_events(info.tz, today)
    truth = brute_force(events, info.tz)
    path = tmp_path / "events.json.gz"
    path.write_bytes(gz(ga4_export(events)))
    import_("ga4", site.domain, str(path))
    days = imports_data.days_of(truth)
    assert not r.exists(keys.active(site.id, days[0]))  # (its raw keys are gone)
    found, wanted = numbers(r, info, truth), expected(truth)
    for name in ("pageviews", "dau", "new_visitors", "visits", "pages", "source", "country", "browser", "device"):
        assert found[name] == wanted[name], name
