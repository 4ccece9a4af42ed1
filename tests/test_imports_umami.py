"""manage.py import umami: an Umami export (website_event rows with their session's
columns, CSV) replayed through ingest counts what brute force counts over the same
events; bad rows are reported by line; a CSV without Umami's columns is refused."""

import io
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command

from analytics import queries
from analytics.models import ImportedLog
from analytics.sites import SiteInfo
from tests import imports_data
from tests.imports_data import brute_force, expected, make_events, numbers, umami_export

pytestmark = (
    pytest.mark.one_leg
)  # (the readers' own logic; the script they replay through runs on every server in the engine's tests)

UTC_SITE = ZoneInfo("UTC")


def import_(*args):
    out = io.StringIO()
    call_command("import", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_counts_an_export_as_brute_force_does(site, r, tmp_path):
    info = SiteInfo.from_model(site)
    events = make_events(UTC_SITE, info.today(), seed=12)
    path = tmp_path / "umami.csv"
    path.write_bytes(umami_export(events, seed=12))
    out = import_("umami", "example.com", str(path))

    truth = brute_force(events, UTC_SITE)
    assert numbers(r, info, truth) == expected(truth)
    assert f"{len(events):,} rows: imported {sum(truth.pageviews.values()):,} pageviews" in out
    days = imports_data.days_of(truth)
    screens, _ = queries.breakdown(r, info, days[0], days[-1], "screen", limit=10)
    assert {row["screen"] for row in screens} <= {"Desktop", "Laptop", "Mobile"}
    regions, _ = queries.breakdown(r, info, days[0], days[-1], "region", limit=10)
    assert {row["region"] for row in regions} <= {p[3] for p in imports_data.PLACES}
    assert "already imported" in import_("umami", "example.com", str(path))
    assert numbers(r, info, truth) == expected(truth)


def test_bad_rows_are_reported_by_line_and_the_good_ones_count(site, r, tmp_path):
    info = SiteInfo.from_model(site)
    events = make_events(UTC_SITE, info.today(), seed=5, visitors=20)
    lines = umami_export(events, seed=5).decode().splitlines(keepends=True)
    bad_time = (lines[1] + lines[2]).replace("+00,", "+zz,", 1)  # (a row's page title spans two lines)
    lines[3:3] = [bad_time, "too,few,fields\n"]  # (lines 4-5 and 6)
    path = tmp_path / "umami.csv"
    path.write_text("".join(lines))
    out = import_("umami", "example.com", str(path))
    assert "unparsable 2 (first: line 4, 6)" in out
    truth = brute_force(events, UTC_SITE)
    assert numbers(r, info, truth)["pageviews"] == expected(truth)["pageviews"]


def test_a_csv_without_umamis_columns_is_refused_before_anything_counts(site, r, tmp_path):
    good = tmp_path / "good.csv"
    good.write_bytes(umami_export(make_events(UTC_SITE, SiteInfo.from_model(site).today(), visitors=5)))
    other = tmp_path / "other.csv"
    other.write_text("date,visitors\n2026-01-01,3\n")
    with pytest.raises(CommandError, match=r"not an Umami export.*no created_at, session_id, url_path, event_type"):
        import_("umami", "example.com", str(good), str(other))
    assert not ImportedLog.objects.exists() and not list(r.scan_iter(match=f"tally:{{{site.pk}}}:*"))


def test_names_become_tallys():
    from analytics.imports import replay, umami

    row = dict.fromkeys(imports_data.UMAMI_COLUMNS, "")
    row.update(
        created_at="2026-11-20T10:00:00Z",
        session_id="5b1c0f3e-0000-4000-8000-000000000001",
        url_path="/caf%C3%A9",
        url_query="ref=producthunt",
        event_type="1",
        browser="crios",
        os="iOS",
        device="mobile",
        screen="390x844",
        country="ch",
        subdivision1="ZH",
        city="Zürich",
    )
    hit = umami.event(row, "example.com", replay.Summary())
    assert hit is not None and hit.path == "/café" and hit.name == "pageview"
    fields = dict(f.split("\x1f") for part in hit.attrs.split("\x1d") for f in part.split("\x1e"))
    assert (fields["browser"], fields["os"], fields["device"], fields["screen"]) == (
        "Chrome Mobile iOS",
        "iOS",
        "Mobile",
        "Mobile",
    )
    assert (fields["country"], fields["region"], fields["city"], fields["utm_source"]) == (
        "CH",
        "CH-ZH",
        "Zürich, CH-ZH",
        "producthunt",
    )
    summary = replay.Summary()
    assert umami.event(dict(row, browser="searchbot"), "example.com", summary) is None
    assert umami.event(dict(row, event_type="3"), "example.com", summary) is None
    assert summary.skipped == {"bots": 1, "other_types": 1}
    windows = umami.event(dict(row, browser="edge-chromium", os="Windows 10", device="laptop"), "example.com", summary)
    assert windows is not None and "os_version\x1fWindows 10" in windows.attrs and "device\x1fDesktop" in windows.attrs
