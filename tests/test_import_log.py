"""manage.py import_log: the parser on tricky lines, gzip, static and bots, idempotence."""

import gzip
import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from analytics import queries
from analytics.ingest import logs
from analytics.sites import SiteInfo

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def stamp(moment: datetime) -> str:
    return moment.strftime("%d/%b/%Y:%H:%M:%S +0000")


def line(ip, moment, target, status=200, agent=FIREFOX, referrer="-", method="GET"):
    return f'{ip} - - [{stamp(moment)}] "{method} {target} HTTP/1.1" {status} 512 "{referrer}" "{agent}"'


def import_(*args):
    out = io.StringIO()
    call_command("import_log", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_parser_on_tricky_lines():
    moment = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    lines = [
        line("2001:db8::1", moment, "/ipv6"),
        f'198.51.100.2 - - [{stamp(moment)}] "GET /quoted HTTP/1.1" 200 10 "-" "Agent \\"with quotes\\" 1.0"',
        '198.51.100.3 - frank [20/Nov/2026:13:00:00 +0100] "GET /common HTTP/1.0" 200 2326',  # common format: no referrer, no agent
        "complete garbage",
        f'198.51.100.4 - - [{stamp(moment)}] "POST /form HTTP/1.1" 200 10 "-" "{FIREFOX}"',
        line("198.51.100.5", moment, "/missing", status=404),
        line("198.51.100.6", moment, "/style.css"),
        line("198.51.100.7", moment, "/robots.txt"),
        line("198.51.100.8", moment, "/page?utm=1#x", status=304),
        line(
            "66.249.66.1", moment, "/", agent="Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
        ),
        f'198.51.100.9 - - [99/Xyz/2026:00:00:00 +0000] "GET /badtime HTTP/1.1" 200 1 "-" "{FIREFOX}"',
    ]
    summary = logs.Summary()
    hits = list(logs.hits_from_lines(iter(lines), summary))
    assert [h.path for h in hits] == ["/ipv6", "/quoted", "/common", "/page"]
    assert hits[2].ts == datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # +0100 converted
    assert hits[1].identity.endswith(b'Agent "with quotes" 1.0')
    assert (summary.lines, summary.imported, summary.static, summary.bots, summary.not_pages, summary.unparsable) == (
        11,
        4,
        2,
        1,
        2,
        2,
    )
    assert summary.unparsable_lines == [4, 11]


def test_import_counts_like_brute_force_and_refuses_a_second_time(site, r, tmp_path):
    info = SiteInfo.from_model(site)
    today = info.today()
    rows, truth = [], {}
    for n in range(600):
        day = today - timedelta(days=n % 3)
        moment = datetime(day.year, day.month, day.day, 0, n % 60, tzinfo=UTC)  # (today: never over an hour ahead)
        ip = f"198.51.100.{n % 50}"
        rows.append(line(ip, moment, f"/p{n % 7}"))
        truth.setdefault(day, set()).add(ip)
        rows.append(line(ip, moment, f"/img/{n}.png"))
    plain = tmp_path / "access.log"
    plain.write_text("\n".join(rows) + "\n")
    out = import_("--site", "example.com", str(plain))
    assert "600 pageviews" in out and "skipped 600 static" in out and "Rolled up 3 day(s)" in out
    series = queries.timeseries(r, info, today - timedelta(days=2), today, ["pageviews", "dau"])
    assert [row["pageviews"] for row in series] == [200, 200, 200]
    assert [row["dau"] for row in series] == [len(truth[today - timedelta(days=n)]) for n in (2, 1, 0)]

    again = import_("--site", "example.com", str(plain))
    assert "already imported" in again
    zipped = tmp_path / "access.log.gz"  # the same content, compressed: still the same log
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    assert "already imported" in import_("--site", "example.com", str(zipped))
    assert [
        row["pageviews"] for row in queries.timeseries(r, info, today - timedelta(days=2), today, ["pageviews"])
    ] == [200, 200, 200]


def test_gzip_logs_import(site, r, tmp_path):
    moment = datetime.now(UTC) - timedelta(hours=1)
    path = tmp_path / "a.log.gz"
    path.write_bytes(gzip.compress((line("203.0.113.1", moment, "/gz") + "\n").encode()))
    assert "imported 1 pageviews" in import_("--site", "example.com", "--no-rollup", str(path))


def test_bad_arguments(site, tmp_path):
    with pytest.raises(CommandError, match="no site"):
        import_("--site", "nope.example", str(tmp_path / "x.log"))
    with pytest.raises(CommandError, match="no such file"):
        import_("--site", "example.com", str(tmp_path / "missing.log"))


def test_lines_older_than_the_site_keeps_are_counted_and_rolled_up(site, r, tmp_path):
    now = datetime.now(UTC)
    log = tmp_path / "old.log"
    old = now - timedelta(days=site.keep_daily_days + 30)
    log.write_text(line("8.8.8.8", old, "/old") + "\n" + line("8.8.8.8", now - timedelta(days=1), "/new") + "\n")
    out = import_("--site", site.domain, str(log))
    assert "imported 2 pageviews" in out and "0 for days sealed" in out
    day = old.astimezone(SiteInfo.from_model(site).tz).date()
    assert queries.timeseries(r, SiteInfo.from_model(site), day, day)[0]["pageviews"] == 1


def test_lines_dated_past_the_hour_ahead_are_skipped_and_the_summary_names_the_days_rolled_up(site, r, tmp_path):
    now = datetime.now(UTC)
    yesterday = now - timedelta(days=1)
    log = tmp_path / "mixed.log"
    log.write_text(
        "\n".join(
            [
                line("8.8.8.8", datetime(2030, 11, 20, 10, 0, tzinfo=UTC), "/future"),
                line("8.8.8.8", now + timedelta(hours=2), "/two-hours-ahead"),  # the batch API refuses it too
                line("8.8.8.8", datetime(1999, 11, 20, 10, 0, tzinfo=UTC), "/ancient"),
                line("8.8.8.8", yesterday, "/new"),
            ]
        )
        + "\n"
    )
    out = import_("--site", site.domain, str(log))
    assert "imported 1 pageviews" in out and "1 dated before 2000" in out and "2 dated in the future" in out
    day = yesterday.astimezone(SiteInfo.from_model(site).tz).date()
    assert f"Rolled up 1 day(s), {day} to {day}." in out
    assert not [key for key in r.scan_iter(match="*2030*")]  # no key waiting without a TTL for 2030


def test_a_line_within_the_hour_ahead_counts_as_the_batch_api_would(site, r, tmp_path):
    log = tmp_path / "skewed.log"
    log.write_text(line("8.8.8.8", datetime.now(UTC) + timedelta(minutes=30), "/skewed") + "\n")
    assert "imported 1 pageviews" in import_("--site", site.domain, "--no-rollup", str(log))


def _day_keys(r, site):
    return [key for key in r.scan_iter(match=f"tally:{{{site.pk}}}:*")]


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda data: data[: len(data) // 2], "cut short"),
        (lambda data: b"plain text, not gzip\n", "not valid gzip data"),
    ],
)
def test_a_damaged_gz_is_one_clear_error_and_nothing_is_counted(site, r, tmp_path, damage, reason):
    from analytics.models import ImportedLog

    moment = datetime.now(UTC) - timedelta(hours=3)
    content = "".join(line(f"203.0.113.{n}", moment, f"/p{n}") + "\n" for n in range(200)).encode()
    good = tmp_path / "good.log"
    good.write_text("".join(line(f"198.51.100.{n}", moment, "/good") + "\n" for n in range(100)))
    bad = tmp_path / "access.log.1.gz"
    bad.write_bytes(damage(gzip.compress(content, mtime=0)))
    with pytest.raises(CommandError) as raised:
        import_("--site", site.domain, str(good), str(bad))
    message = str(raised.value)
    assert "\n" not in message and str(bad) in message and reason in message
    assert _day_keys(r, site) == [] and not ImportedLog.objects.exists()  # not even the good file before it

    out = import_("--site", site.domain, str(good))  # the good file alone, once
    assert "imported 100 pageviews" in out
    assert "already imported" in import_("--site", site.domain, str(good))
