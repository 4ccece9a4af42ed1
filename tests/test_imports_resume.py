"""An import killed half way resumes when run again with the same file: the batches the
first run counted are replayed as no-ops (their marks), the rest counted, every event
once. For each kind: GA4 (sorted through a temporary file), Umami, access logs (in order)."""

import io
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from analytics.imports import replay
from analytics.models import ImportedLog
from analytics.sites import SiteInfo
from tests.imports_data import access_log, brute_force, expected, ga4_export, make_events, numbers, umami_export

pytestmark = (
    pytest.mark.one_leg
)  # (the importers' own marks and batches; the script's exactly-once marks are tested on every server)

UTC_SITE = ZoneInfo("UTC")


class Crash(Exception):
    pass


def import_(*args):
    out = io.StringIO()
    call_command("import", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("kind", ["ga4", "umami", "log"])
def test_a_killed_import_resumes_and_counts_every_event_once(kind, site, r, tmp_path, monkeypatch):
    info = SiteInfo.from_model(site)
    events = make_events(UTC_SITE, info.today(), seed=21, visitors=120)
    dimensions = ("source", "country", "browser", "device")
    if kind == "log":
        events, dimensions = [e for e in events if e.name == "pageview"], ("source",)
    path = tmp_path / f"export.{kind}"
    path.write_bytes({"ga4": ga4_export, "umami": umami_export, "log": access_log}[kind](events))
    monkeypatch.setattr(replay, "BATCH", 97)  # (many batches, each over a day or two)

    real, calls = replay.record, []

    def crashing(*args, **kwargs):
        if len(calls) == 5:
            raise Crash("killed")
        calls.append(real(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(replay, "record", crashing)
    with pytest.raises(Crash):
        import_(kind, "example.com", str(path), "--no-rollup")
    assert not ImportedLog.objects.exists()  # (recorded only once the whole file is counted)

    monkeypatch.setattr(replay, "record", real)
    out = import_(kind, "example.com", str(path))
    assert "Resumed: 5 of " in out
    truth = brute_force(events, UTC_SITE)
    assert numbers(r, info, truth, dimensions) == expected(truth, dimensions)
    assert "already imported" in import_(kind, "example.com", str(path))
    assert numbers(r, info, truth, dimensions) == expected(truth, dimensions)
