"""Visits, bounce rate, visit duration, views per visit and pageviews under filters, against
brute force over the same events (Plausible's definitions: a visit ends after 30 minutes
without an event; a bounce has at most one pageview and no interactive event; its
duration is its last event's time less its first's). One filter on a visit dimension
selects whole visits (a visit has one value of each): several values, `!=` and `~` are
then exact, as one value was; a page filter's pageviews are its pages', its visits those that
viewed the page (Plausible's), exact for one page and an upper bound, marked, for several."""

import random
from collections import defaultdict
from datetime import date

import pytest

from analytics.queries import filtered, segments
from tests.test_segments import DAYS, history, make_events

TIMEOUT = 1800


def visits_of(events):
    """[(start day, source, country, pageviews, bounce, duration, pages viewed)] of the events' visits."""
    open_, done = {}, []
    for ts, v, kind, path, source, country in events:
        visit = open_.get(v)
        if visit is None or (ts - visit["last"]).total_seconds() > TIMEOUT:
            if visit is not None:
                done.append(visit)
            visit = open_[v] = {
                "day": ts.date(),
                "source": source,
                "country": country,
                "first": ts,
                "last": ts,
                "pageviews": 0,
                "interactive": False,
                "pages": set(),
                "events": False,
            }
        visit["last"] = max(visit["last"], ts)
        if kind == "p":
            visit["pageviews"] += 1
            visit["pages"].add(path)
        else:
            visit["interactive"] = visit["events"] = True
    done += open_.values()
    return [
        (
            x["day"],
            x["source"],
            x["country"],
            x["pageviews"],
            x["pageviews"] <= 1 and not x["interactive"],
            int((x["last"] - x["first"]).total_seconds()),
            x["pages"] | ({"event:Signup"} if x["events"] else set()),
        )
        for x in done
    ]


def expected(visits, keep):
    chosen = [x for x in visits if keep(x)]
    n = len(chosen)
    pageviews = sum(x[3] for x in chosen)
    return {
        "visits": n,
        "bounce_rate": round(100 * sum(x[4] for x in chosen) / n) if n else None,
        "visit_duration": round(sum(x[5] for x in chosen) / n) if n else None,
        "views_per_visit": round(pageviews / n, 2) if n else None,
    }


@pytest.fixture
def world(site, r):
    info, brute, days = history(r, site, 21, visitors=120)
    first_day = days[0]
    events = make_events(random.Random(21), first_day, 120)
    return info, brute, days, events


CASES = {
    "source==Google": lambda x: x[1] == "Google",
    "source==Google|newsletter": lambda x: x[1] in ("Google", "newsletter"),
    "source!=Google": lambda x: x[1] != "Google",
    "source~o": lambda x: "o" in x[1].lower(),
    "source!~o": lambda x: "o" not in x[1].lower(),
    "country!=DE|FR": lambda x: x[2] not in ("DE", "FR"),
}


@pytest.mark.parametrize("text", CASES)
def test_visit_metrics_of_one_visit_dimension_are_exact_for_any_values(world, r, text):
    info, _, days, events = world
    summary, _ = filtered.summary(r, info, segments.parse(text), days[0], days[-1])
    truth = expected(visits_of(events), CASES[text])
    assert {m: summary[m] for m in truth} == truth, text
    pageviews = sum(1 for ts, v, kind, path, s, c in events if kind == "p" and CASES[text]((None, s, c)))
    assert summary["pageviews"] == pageviews  # (a visit's source and country are its first event's: these events' here)


@pytest.mark.parametrize(
    "text, paths, negate", [("page==/pricing|/signup", {"/pricing", "/signup"}, False), ("page!=/", {"/"}, True)]
)
def test_page_filters_have_their_pages_pageviews(world, r, text, paths, negate):
    info, _, days, events = world
    values, _ = filtered.daily_values(r, info, segments.parse(text), days[0], days[-1], windows=False)
    per_day = defaultdict(int)
    for ts, _v, kind, path, _s, _c in events:
        if kind == "p" and (path in paths) != negate:
            per_day[ts.date()] += 1
    assert {day: values[day]["pageviews"] for day in days} == {day: per_day[day] for day in days}


def test_filters_on_two_dimensions_leave_visit_metrics_unsaid_not_guessed(world, r):
    info, _, days, _ = world
    summary, _ = filtered.summary(r, info, segments.parse("source==Google;country==DE"), days[0], days[-1])
    assert summary["visits"] is None and summary["bounce_rate"] is None
    assert len(days) == DAYS


def page_truth(events, visits, viewed):
    """Brute force under a page filter: the visits that viewed a page `viewed` admits, and
    the pageviews of those pages (so views per visit is theirs over those visits)."""
    chosen = [x for x in visits if any(viewed(p) for p in x[6])]
    n = len(chosen)
    pageviews = sum(1 for ts, v, kind, path, s, c in events if kind == "p" and viewed(path))
    return {
        "visits": n,
        "bounce_rate": round(100 * sum(x[4] for x in chosen) / n) if n else None,
        "visit_duration": round(sum(x[5] for x in chosen) / n) if n else None,
        "views_per_visit": round(pageviews / n, 2) if n else None,
        "pageviews": pageviews,
    }


@pytest.mark.parametrize("path", ["/pricing", "/", "/blog/a"])
def test_a_page_filter_has_the_visits_that_viewed_the_page_exactly(world, r, path):
    info, _, days, events = world
    summary, _ = filtered.summary(r, info, segments.parse(f"page=={path}"), days[0], days[-1])
    truth = page_truth(events, visits_of(events), lambda p: p == path)
    assert truth["visits"] > 0
    assert {m: summary[m] for m in truth} == truth
    assert not {m for m in truth if m in summary["estimates"]}
    daily, _ = filtered.timeseries(
        r, info, segments.parse(f"page=={path}"), days[0], days[-1], ["visits", "bounce_rate"]
    )
    for row in daily:
        day = date.fromisoformat(row["date"])
        one = page_truth(
            [e for e in events if e[0].date() == day],
            [x for x in visits_of(events) if x[0] == day],
            lambda p: p == path,
        )
        assert (row["visits"], row["bounce_rate"]) == (one["visits"], one["bounce_rate"]), row


def test_several_pages_are_an_upper_bound_marked_as_such(world, r):
    info, _, days, events = world
    summary, _ = filtered.summary(r, info, segments.parse("page~blog"), days[0], days[-1])
    visits = visits_of(events)
    truth = page_truth(events, visits, lambda p: "blog" in p)
    assert summary["pageviews"] == truth["pageviews"]
    assert summary["visits"] >= truth["visits"]
    assert summary["visits"] == sum(len({p for p in x[6] if "blog" in p}) for x in visits)
    assert "upper bound" in summary["estimates"]["visits"]


def test_a_page_goal_filter_has_its_pages_visits(world, r, site):
    from analytics.models import Goal

    Goal.objects.create(site=site, name="Pricing", page_pattern="/pricing")
    info, _, days, events = world
    summary, _ = filtered.summary(r, info, segments.parse("goal==Pricing"), days[0], days[-1])
    truth = page_truth(events, visits_of(events), lambda p: p == "/pricing")
    assert {m: summary[m] for m in ("visits", "bounce_rate", "visit_duration")} == {
        m: truth[m] for m in ("visits", "bounce_rate", "visit_duration")
    }


def test_page_visits_survive_the_rollup_and_the_keys_expiry(world, r, site, no_grace):
    """Sealed days: the rollup's stored rows answer, the same numbers."""
    from analytics.rollups import jobs

    info, _, days, events = world
    before, _ = filtered.summary(r, info, segments.parse("page==/pricing"), days[0], days[-1])
    jobs.rollup(r, site, days[0], days[-1])
    from analytics.models import DimensionDaily

    assert DimensionDaily.objects.filter(site=site, dimension="visit_page", value="/pricing").count() == len(days)
    for key in r.scan_iter(match=f"*{{{site.id}}}:dim:*"):
        r.delete(key)
    after, _ = filtered.summary(r, info, segments.parse("page==/pricing"), days[0], days[-1])
    assert {m: after[m] for m in ("visits", "bounce_rate", "visit_duration")} == {
        m: before[m] for m in ("visits", "bounce_rate", "visit_duration")
    }


@pytest.mark.parametrize("text", ["goal==Signed up", "goal==Signup"])  # (a goal's event, and an event's own name)
def test_an_event_goal_filter_has_the_visits_that_sent_the_event(world, r, site, text):
    from analytics.models import Goal

    Goal.objects.create(site=site, name="Signed up", event_name="Signup")
    info, _, days, events = world
    summary, _ = filtered.summary(r, info, segments.parse(text), days[0], days[-1])
    truth = page_truth(events, visits_of(events), lambda p: p == "event:Signup")
    assert truth["visits"] > 0
    assert {m: summary[m] for m in ("visits", "bounce_rate", "visit_duration")} == {
        m: truth[m] for m in ("visits", "bounce_rate", "visit_duration")
    }
    assert not {"visits", "bounce_rate", "visit_duration"} & set(summary["estimates"])
    assert (
        summary["pageviews"] is None and summary["views_per_visit"] is None
    )  # (an event's visits: no pageviews of "those events")
