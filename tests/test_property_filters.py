"""Filters on custom properties (`props:plan==pro`: the visitors who sent a custom event
with that value that day, whatever the event) against brute force over the same events:
exact while each value has its day bitmap, estimated (and saying so) where the day's
bitmaps ran out, and not zero past every expiry."""

import io
import random
from collections import defaultdict
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.management import call_command

from analytics.dimensions import field
from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.models import DailyMetrics
from analytics.periods import days_between
from analytics.queries import filtered, segments
from analytics.rollups import expiry
from analytics.sites import SiteInfo
from analytics.store import keys

DAYS = 8
PLANS = ["pro", "free", "team"]
PAGES = ["/", "/pricing", "/docs"]
COUNTRIES = ["DE", "US"]


def make_events(rng, first_day, visitors):
    """(ts, visitor, name, path, country, props): pageviews, and Signup / Upgrade events
    with a plan (an Upgrade may also carry a seats property)."""
    events = []
    for v in range(visitors):
        for d in range(DAYS):
            if rng.random() < 0.5:
                continue
            t = datetime.combine(first_day + timedelta(days=d), time(1), tzinfo=UTC) + timedelta(
                seconds=rng.randrange(20 * 3600)
            )
            country = rng.choice(COUNTRIES)
            for _ in range(rng.randint(1, 3)):
                roll = rng.random()
                if roll < 0.6:
                    events.append((t, v, "pageview", rng.choice(PAGES), country, ()))
                elif roll < 0.8:
                    events.append((t, v, "Signup", "/signup", country, (("plan", rng.choice(PLANS)),)))
                else:
                    props = (("plan", rng.choice(PLANS)), ("seats", str(rng.randint(1, 3))))
                    events.append((t, v, "Upgrade", "/billing", country, props))
                t += timedelta(seconds=60)
    events.sort(key=lambda e: (e[0], e[1]))
    return events


class Brute:
    def __init__(self, events):
        self.active = defaultdict(set)
        self.by = defaultdict(set)  # (day, prop, value) -> visitors
        for ts, v, name, path, country, props in events:
            day = ts.date()
            self.active[day].add(v)
            self.by[day, "country", country].add(v)
            if name == "pageview":
                self.by[day, "page", path].add(v)
            for key, value in props:
                self.by[day, f"props:{key}", value].add(v)

    def segment(self, day, filters):
        people = set(self.active[day])
        for f in filters:
            matching = set().union(
                *(
                    s
                    for (d, p, value), s in self.by.items()
                    if d == day and p == f.prop and f.admits(value) != f.negated
                )
            )
            people = people - matching if f.negated else people & matching
        return people


def send(r, site, events):
    info = SiteInfo.from_model(site)
    now = datetime.now(UTC)
    for i in range(0, len(events), 40):
        hits = [
            Hit(ts, path, name, identity_source(None, f"v{v}", None, None), attrs=field("country", c), props=props)
            for ts, v, name, path, c, props in events[i : i + 40]
        ]
        record(r, info, hits, now=now)
    return SiteInfo.from_model(site)


def history(r, site, visitors=80, **settings):
    for name, value in settings.items():
        setattr(site, name, value)
    site.save()
    first_day = datetime.now(UTC).date() - timedelta(days=DAYS + 2)
    events = make_events(random.Random(11), first_day, visitors)
    return send(r, site, events), Brute(events), days_between(first_day, first_day + timedelta(days=DAYS - 1))


CASES = [
    "props:plan==pro",
    "event:props:plan==pro|team",
    "props:plan!=pro",
    "props:plan~e",
    "props:plan!~fre",
    "props:seats==2;country==DE",
    "props:plan==free;page==/pricing",
    "props:plan==team;props:seats!=1",
]


@pytest.fixture
def world(site, r):
    return history(r, site)


@pytest.mark.parametrize("text", CASES)
def test_property_filters_count_visitors_exactly(world, r, text):
    info, brute, days = world
    filters = segments.parse(text)
    values, estimated = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
    assert not estimated
    for day in days:
        assert values[day]["dau"] == len(brute.segment(day, filters)), (day, text)
    summary, estimated = filtered.summary(r, info, filters, days[0], days[-1])
    assert not estimated
    assert summary["visitors"] == len(set().union(*(brute.segment(day, filters) for day in days)))


def test_each_kept_property_value_has_its_day_bitmap(world, r):
    info, brute, days = world
    bitmapped = {m.decode() for m in r.smembers(keys.dimension_bitmapped(info.id, days[0]))}
    assert field("prop", "Signup\x1fplan\x1fpro") in bitmapped
    assert field("prop", "Upgrade\x1fseats\x1f2") in bitmapped


def test_a_page_breakdown_under_a_property_filter_is_exact(world, r):
    info, brute, days = world
    filters = segments.parse("props:plan==pro")
    rows, estimated = filtered.breakdown(r, info, filters, days[0], days[-1], "page", PAGES)
    assert not estimated
    expected = {p: len(set().union(*(brute.by[d, "page", p] & brute.segment(d, filters) for d in days))) for p in PAGES}
    assert {row["value"]: row["visitors"] for row in rows} == {p: n for p, n in expected.items() if n}


def test_values_past_the_days_bitmaps_are_estimated_and_say_so(site, r):
    """With one bitmap a dimension a day, most property values have none: their days are
    inclusion-exclusion over HLLs, marked, and near the truth."""
    info, brute, days = history(r, site, segment_values=1)
    filters = segments.parse("props:plan==pro|team")
    values, estimated = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
    assert estimated
    for day in days:
        truth = len(brute.segment(day, filters))
        assert abs(values[day]["dau"] - truth) <= max(3, 0.1 * truth), (day, values[day]["dau"], truth)


def test_property_filters_are_not_zero_past_every_expiry(site, r):
    info, brute, days = history(r, site)
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    for day in days:  # (as if each day had been rolled up the night after it)
        DailyMetrics.objects.filter(site=site, date=day).update(
            updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
        )
    site.keep_page_days, site.keep_segment_days, site.keep_daily_days = 3, 5, 7
    site.save()
    today = datetime.now(UTC).date()
    expiry.apply_all(r, site, today)
    info = SiteInfo.from_model(site)
    assert not r.exists(keys.props_index(info.id, days[0]))
    for text in ("props:plan==pro", "props:plan!=pro", "props:plan==team;country==DE"):
        filters = segments.parse(text)
        values, _ = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
        for day in days:
            truth, got = len(brute.segment(day, filters)), values[day]["dau"]
            assert abs(got - truth) <= max(6, 0.6 * truth), (text, day, got, truth)
            if truth >= 3:
                assert got > 0, (text, day, truth)


@pytest.mark.parametrize("text", ["props:==x", "props:plan~", "props:" + "x" * 400 + "==a"])
def test_a_property_filter_without_a_name_or_value_is_refused(text):
    with pytest.raises(ValueError):
        segments.parse(text)
