"""Funnels (analytics.queries.funnels) against brute force: a visitor reaches step k when
they did it on a day of the range no earlier than the first day they reached step k-1;
pinned steps stay exact past the day's first values; the API and the admin's checks."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from analytics.models import Funnel
from analytics.periods import days_between
from analytics.queries import funnel, segments
from analytics.sites import SiteInfo
from tests.test_segments import DAYS, Brute, make_events, send

STEPS = "/\n/pricing\nevent:Signup\n/blog/*"


def brute_funnel(brute, steps, days, filters=()):
    """Per visitor, the first day they reached each step, the slow way."""

    def did(k, day):
        kind, value = steps[k]
        if kind == "event":
            people = brute.by[day, "goal", value]
        elif value.endswith("*"):
            people = set().union(
                *(s for (d, p, path), s in brute.by.items() if d == day and p == "page" and path.startswith(value[:-1]))
            )
        else:
            people = brute.by[day, "page", value]
        return people & brute.segment(day, filters) if filters else people

    visitors = set().union(*(brute.active[d] for d in days))
    counts = [0] * len(steps)
    for v in visitors:
        since = None
        for k in range(len(steps)):
            first = next((d for d in days if (since is None or d >= since) and v in did(k, d)), None)
            if first is None:
                break
            counts[k] += 1
            since = first
    return counts


@pytest.fixture
def world(make_site, r):
    site, key = make_site()
    first_day = datetime.now(UTC).date() - timedelta(days=DAYS + 2)
    events = make_events(random.Random(5), first_day, visitors=150)
    found = Funnel.objects.create(site=site, name="Signup", steps=STEPS)
    send(r, site, events)
    return site, key, found, Brute(events), days_between(first_day, first_day + timedelta(days=DAYS - 1))


def test_it_counts_each_step_like_brute_force(world, r):
    site, _, found, brute, days = world
    info = SiteInfo.from_model(site)
    rows, estimated = funnel(r, info, found, days[0], days[-1])
    assert not estimated
    assert [row["visitors"] for row in rows] == brute_funnel(brute, found.step_list(), days)
    assert rows[0]["conversion_rate"] == 100.0 and rows[1]["dropoff"] == rows[0]["visitors"] - rows[1]["visitors"]
    # a shorter range: steps before it do not count
    rows, _ = funnel(r, info, found, days[4], days[8])
    assert [row["visitors"] for row in rows] == brute_funnel(brute, found.step_list(), days[4:9])


def test_a_filtered_funnel_counts_only_the_segment(world, r):
    site, _, found, brute, days = world
    filters = segments.parse("country!=US")
    rows, _ = funnel(r, SiteInfo.from_model(site), found, days[0], days[-1], filters)
    assert [row["visitors"] for row in rows] == brute_funnel(brute, found.step_list(), days, filters)


def test_pinned_steps_stay_exact_past_the_days_first_values(make_site, r):
    site, _ = make_site()
    site.segment_values = 1
    site.save()
    first_day = datetime.now(UTC).date() - timedelta(days=DAYS + 2)
    events = make_events(random.Random(9), first_day, visitors=150)
    pinned = Funnel.objects.create(site=site, name="Pricing", steps="/pricing\n/signup\nevent:Signup")
    send(r, site, events)
    brute = Brute(events)
    days = days_between(first_day, first_day + timedelta(days=DAYS - 1))
    rows, estimated = funnel(r, SiteInfo.from_model(site), pinned, days[0], days[-1])
    assert not estimated
    assert [row["visitors"] for row in rows] == brute_funnel(brute, pinned.step_list(), days)
    # a funnel made after the events: its pages had no pinned bitmaps then, and it says so
    late = Funnel.objects.create(site=site, name="Blog", steps="/blog/a\n/blog/b")
    rows, estimated = funnel(r, SiteInfo.from_model(site), late, days[0], days[-1])
    assert estimated


def test_the_api_answers_a_funnel_and_names_the_sites_funnels_when_asked_for_another(world, client):
    site, key, found, brute, days = world
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    params = {"site": "example.com", "from": days[0].isoformat(), "to": days[-1].isoformat()}
    body = client.get("/api/v1/stats/funnel", {**params, "funnel": "Signup"}, **auth).json()
    assert [s["step"] for s in body["steps"]] == ["/", "/pricing", "event:Signup", "/blog/*"]
    assert [s["visitors"] for s in body["steps"]] == brute_funnel(brute, found.step_list(), days)
    response = client.get("/api/v1/stats/funnel", {**params, "funnel": "Nope"}, **auth)
    assert response.status_code == 400 and "it has: Signup" in response.json()["error"]


@pytest.mark.parametrize(
    "steps, problem",
    [
        ("/only", "2 to 8 steps"),
        ("\n".join(f"/p{n}" for n in range(9)), "2 to 8 steps"),
        ("/a\npricing", "starts with /"),
    ],
)
def test_a_funnel_needs_two_to_eight_steps_of_pages_or_events(site, steps, problem):
    with pytest.raises(ValidationError, match=problem):
        Funnel(site=site, name="x", steps=steps).full_clean()
