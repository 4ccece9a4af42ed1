"""Filters on days inside and past every raw-key expiry, against brute force: no day reads
0 because a key expired. A site's history is rolled up with keys kept long, then its
policy lowered and re-applied, so each expiry (keep_page_days, keep_segment_days,
keep_daily_days) has passed for some of the days:

    age (days before today)   3            4-6              7-9               10-14
    raw keys left             all          no page keys     no filter bitmaps  none

Visitor numbers are exact where the answer says exact; a day answered from stored rows is
an estimate: one value's visitors are its stored row (within an HLL's error), several
filters combined as if independent (within the loose bound asserted here)."""

import io
from datetime import UTC, date, datetime, time, timedelta

import pytest
from django.core.management import call_command

from analytics import queries
from analytics.models import DailyMetrics, Goal
from analytics.queries import filtered, segments
from analytics.rollups import expiry
from analytics.store import keys
from analytics.store.scratch import scratch
from team.roles import add_member
from tests.test_segments import history

CASES = [
    "page==/pricing",
    "goal==Signup",
    "source==Google",
    "country==DE",
    "source==Google|newsletter",
    "source!=Google",
    "page==/pricing;country==US",
    "page~blog",
    "page!~blog",
    "source==Google;country!=DE",
]


@pytest.fixture
def aged(site, r):
    """(SiteInfo, Brute, days, events) with the policy lowered past the history's days."""
    Goal.objects.create(site=site, name="Signup", event_name="Signup")
    info, brute, days = history(r, site, 11, visitors=160)
    call_command("rollup", "--from", days[0].isoformat(), stdout=io.StringIO(), stderr=io.StringIO())
    for day in days:  # (as if each day had been rolled up the night after it: no import's grace)
        DailyMetrics.objects.filter(site=site, date=day).update(
            updated=datetime.combine(day + timedelta(days=1), time(1), tzinfo=UTC)
        )
    site.keep_page_days, site.keep_segment_days, site.keep_daily_days = 3, 6, 9
    site.save()
    today = datetime.now(UTC).date()
    expiry.apply_all(r, site, today)
    info = type(info).from_model(site)
    return info, brute, days, today


def _age(today, day):
    return (today - day).days


def test_the_policy_took_each_familys_keys_where_the_table_says(aged, r):
    info, _, days, today = aged
    for day in days:
        age = _age(today, day)
        assert bool(r.exists(keys.pages_index(info.id, day))) == (age < 4), day
        assert bool(r.exists(keys.dimension_bitmapped(info.id, day))) == (age < 7), day
        assert bool(r.exists(keys.active(info.id, day))) == (age < 10), day


@pytest.mark.parametrize("text", CASES)
def test_filtered_visitors_are_right_on_days_past_every_expiry(aged, r, text):
    info, brute, days, today = aged
    filters = segments.parse(text)
    values, estimated = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
    assert estimated  # (the days past the bitmaps are estimated, and it says so)
    with scratch(r, info.id) as tmp:
        segment = segments.build(r, info, filters, days, tmp)
    for day in days:
        truth = len(brute.segment(day, filters))
        got = values[day]["dau"]
        if day not in segment.estimated:
            assert got == truth, (text, day, _age(today, day))
        elif len(filters) == 1 and filters[0].op == "==" and len(filters[0].values) == 1:
            assert abs(got - truth) <= max(2, 0.03 * truth), (text, day, got, truth)  # (its stored row: an HLL at most)
        else:
            assert abs(got - truth) <= max(6, 0.6 * truth), (text, day, got, truth)  # (stored rows, combined)
        if truth >= 3:
            assert got > 0, (text, day, truth)


@pytest.mark.parametrize("text", ["page==/pricing", "page==/signup", "source==Google", "country==DE"])
def test_a_single_values_days_are_exact_while_its_bitmaps_last(aged, r, text):
    """Past keep_page_days a page's numbers still come from its bitmap (they read 0 for
    every day past it before): the answer for days younger than keep_segment_days is exact."""
    info, brute, days, today = aged
    young = [day for day in days if _age(today, day) < 7]
    filters = segments.parse(text)
    values, estimated = filtered.daily_values(r, info, filters, young[0], young[-1], windows=False)
    assert not estimated
    for day in young:
        assert values[day]["dau"] == len(brute.segment(day, filters)), (text, day)


@pytest.mark.parametrize("path", ["/pricing", "/blog/a"])
def test_a_pages_pageviews_are_exact_on_every_day(aged, r, path):
    info, brute, days, _ = aged
    values, _ = filtered.daily_values(r, info, segments.parse(f"page=={path}"), days[0], days[-1], windows=False)
    for day in days:
        assert values[day]["pageviews"] == brute.pageviews[day, path], day


def test_pageviews_and_visits_under_a_page_pattern_are_right_on_every_day(aged, r):
    """`page~blog` reads its pages' counters (stored rows on days past keep_page_days) and
    the visits that viewed them (stored rows once the dimension keys expire): no day reads
    0 where the pages had pageviews."""
    info, brute, days, _ = aged
    values, _ = filtered.daily_values(r, info, segments.parse("page~blog"), days[0], days[-1], windows=False)
    daily, _ = filtered.timeseries(r, info, segments.parse("page~blog"), days[0], days[-1], ["pageviews", "visits"])
    for day, row in zip(days, daily):
        views = sum(n for (d, path), n in brute.pageviews.items() if d == day and "blog" in path)
        assert values[day]["pageviews"] == row["pageviews"] == views, day
        assert (row["visits"] > 0) == (views > 0), (day, row)


def test_a_range_over_expired_days_is_estimated_not_cut_short(aged, r):
    info, brute, days, _ = aged
    for text in ("page==/pricing", "source==Google;country!=DE"):
        filters = segments.parse(text)
        summary, estimated = filtered.summary(r, info, filters, days[0], days[-1])
        truth = len(set().union(*(brute.segment(day, filters) for day in days)))
        assert estimated
        assert abs(summary["visitors"] - truth) <= 0.3 * truth, (text, summary["visitors"], truth)
        assert summary["new_visitors"] > 0


def test_one_pages_visitors_over_expired_days_are_its_rows_union(aged, r):
    """A page filter over days whose filter bitmaps expired reads the page's own period and
    day HLLs (pages.page_union), as its breakdown row does: the two agree, within an HLL's
    error of brute force (the site's repeat ratio, which a page's visitors do not share,
    read 873 against 2,013 on the demo before)."""
    info, brute, days, _ = aged
    filters = segments.parse("page==/pricing")
    summary, _ = filtered.summary(r, info, filters, days[0], days[-1])
    truth = len(set().union(*(brute.segment(day, filters) for day in days)))
    row = next(row for row in queries.top_pages(r, info, days[0], days[-1], 10) if row["page"] == "/pricing")
    assert summary["visitors"] == row["visitors"]
    assert abs(summary["visitors"] - truth) <= max(2, 3 * 0.0081 * truth), (summary["visitors"], truth)


def test_the_sites_own_visitors_over_expired_days_are_not_cut_short(aged, r):
    info, brute, days, _ = aged
    summary = queries.summary(r, info, days[0], days[-1])
    truth = len(set().union(*(brute.active[day] for day in days)))
    assert abs(summary["visitors"] - truth) <= 0.3 * truth, (summary["visitors"], truth)


def test_each_number_says_whether_it_is_an_estimate_and_why(aged, r):
    """Per metric, not per page: a range of days still exact marks nothing; one reaching
    days answered from stored rows marks the numbers those days make, and says why."""
    info, _, days, today = aged
    young = [day for day in days if _age(today, day) < 7]
    filters = segments.parse("page==/pricing")
    exact, _ = filtered.aggregate(
        r, info, filters, young[0], young[-1], ("visitors", "pageviews", "dau", "new_visitors")
    )
    assert not any("estimate" in number for number in exact.values())
    mixed, _ = filtered.aggregate(r, info, filters, days[0], days[-1], ("visitors", "pageviews", "dau", "new_visitors"))
    assert "HyperLogLogs the rollup stored" in mixed["visitors"]["estimate"] and "estimate" in mixed["dau"]
    assert "estimate" not in mixed["pageviews"]  # (a page's pageviews are its stored rows' sums: exact)
    site_wide = queries.aggregate(r, info, days[0], days[-1], ("visitors", "pageviews"))
    assert "raw keys have expired" in site_wide["visitors"]["estimate"] and "estimate" not in site_wide["pageviews"]
    assert "estimate" not in queries.aggregate(r, info, young[0], young[-1], ("visitors",))["visitors"]


def test_the_dashboard_marks_the_estimated_cards_alone(aged, r, client, django_user_model):
    info, _, days, _ = aged
    user = django_user_model.objects.create_user("owner", password="pw")
    from analytics.models import Site

    add_member(Site.objects.get(pk=info.id), user, "owner")
    client.force_login(user)
    url = f"/dashboard/{info.domain}/?period=custom&from={days[0]}&to={days[-1]}&filters=page==/pricing"
    html = client.get(url).content.decode()
    cards = html.split('<section class="cards">', 1)[1].split("</section>", 1)[0]
    marked = [
        chunk.split('"', 1)[0]
        for chunk in cards.split('data-metric="')[1:]
        if 'class="approx"' in chunk.split("</div>\n  </div>")[0]
    ]
    assert "visitors" in marked and "pageviews" not in marked


def test_the_dashboards_charts_mark_the_estimated_days_alone(aged, r, client, django_user_model):
    """The visitors and actives charts draw an estimated day as an open circle whose hover
    says why (≈ and the reason), and the others solid with nothing added."""
    import json

    info, _, days, today = aged
    user = django_user_model.objects.create_user("owner", password="pw")
    from analytics.models import Site

    add_member(Site.objects.get(pk=info.id), user, "owner")
    client.force_login(user)
    url = f"/dashboard/{info.domain}/?period=custom&from={days[0]}&to={days[-1]}&filters=country==DE"
    figures = json.loads(
        client.get(url).content.decode().split('id="figures" type="application/json">')[1].split("<")[0]
    )
    line = next(t for t in figures["visitors"]["data"] if t.get("name") == "Visitors")
    for day, symbol, said in zip(line["x"], line["marker"]["symbol"], line["customdata"]):
        old = _age(today, date.fromisoformat(day[:10])) >= 7  # (country==DE: exact while its bitmaps last)
        assert (symbol == "circle-open") == old and (said.startswith(" ≈ an estimate")) == old, (day, symbol, said)
    assert "%{customdata}" in line["hovertemplate"]


@pytest.mark.parametrize("text", ["country==DE", "source==Google;country!=DE", "page==/pricing"])
def test_filtered_breakdowns_and_goals_count_the_expired_days_too(aged, r, text):
    """A breakdown's rows and the goals' converters under a filter, over a range reaching
    days answered from stored rows: estimated, and near brute force (they read only the
    days still in Redis before)."""
    info, brute, days, _ = aged
    filters = segments.parse(text)
    truth_visitors = len(set().union(*(brute.segment(day, filters) for day in days)))
    rows, estimated = filtered.breakdown(
        r, info, filters, days[0], days[-1], "source", ["Google", "Hacker News", "Direct / None", "newsletter"]
    )
    assert estimated
    for row in rows:
        truth = len(set().union(*(brute.by[day, "source", row["value"]] & brute.segment(day, filters) for day in days)))
        assert row["estimate"] and abs(row["visitors"] - truth) <= max(6, 0.45 * truth), (text, row, truth)
    goals, estimated = filtered.goals(r, info, filters, days[0], days[-1], truth_visitors)
    truth = len(set().union(*(brute.by[day, "goal", "Signup"] & brute.segment(day, filters) for day in days)))
    assert estimated and abs(goals[0]["visitors"] - truth) <= max(6, 0.45 * truth), (text, goals, truth)


def test_a_goal_filters_own_goal_is_all_of_its_visitors(aged, r):
    info, brute, days, _ = aged
    filters = segments.parse("goal==Signup")
    summary, _ = filtered.summary(r, info, filters, days[0], days[-1])
    goals, _ = filtered.goals(r, info, filters, days[0], days[-1], summary["visitors"])
    assert (
        goals[0]["visitors"] == summary["visitors"]
        or abs(goals[0]["visitors"] - summary["visitors"]) <= 0.1 * summary["visitors"]
    )


def test_filtered_retention_cohorts_of_expired_days_are_estimated_not_empty(aged, r):
    info, brute, days, today = aged
    filters = segments.parse("country==DE")
    cohorts, estimated = filtered.retention(r, info, filters, "day", days[0], days[-1], 30)
    assert estimated
    by_day = {c["cohort"]: c for c in cohorts}
    for day in days:
        cohort = brute.segment(day, filters) & brute.new[day]
        got = by_day[day.isoformat()]
        assert abs(got["size"] - len(cohort)) <= max(4, 0.5 * len(cohort)), (day, got, len(cohort))
        if len(cohort) >= 3:
            assert got["size"] > 0 and got["retained"][0] == got["size"]
        back = len(cohort & brute.active[day + timedelta(days=1)])
        assert abs(got["retained"][1] - back) <= max(4, 0.6 * len(cohort)), (day, got, back)


def test_a_value_given_twice_counts_once():
    assert segments.parse("source==Google|Google")[0].values == ("Google",)


def test_a_stored_day_whose_filter_names_nothing_stored_is_still_estimated(aged, r):
    info, brute, days, today = aged
    filters = segments.parse("country!=XX")
    old = [day for day in days if _age(today, day) >= 10]
    values, estimated = filtered.daily_values(r, info, filters, old[0], old[-1])
    assert estimated
    for day in old:
        assert values[day]["dau"] == len(brute.active[day])
        assert values[day]["new_visitors"] == len(brute.new[day])  # (the day's stored new visitors: everyone is in it)
        assert values[day]["mau"] > 0


def test_wau_and_mau_over_expired_days_are_no_more_than_the_sites(aged, r):
    """A window's days run backwards from its last: its repeat ratio is the last day's."""
    info, brute, days, today = aged
    filters = segments.parse("page==/pricing")
    values, _ = filtered.daily_values(r, info, filters, days[0], days[-1])
    site_values = queries.daily_values(r, info, days[0], days[-1])
    for day in days:
        assert values[day]["mau"] <= site_values[day]["mau"] and values[day]["wau"] <= site_values[day]["wau"], day
        month = set().union(*(brute.segment(day - timedelta(days=n), filters) for n in range(30)))
        assert abs(values[day]["mau"] - len(month)) <= max(6, 0.45 * len(month)), (day, values[day]["mau"], len(month))


def test_each_row_of_a_filtered_series_says_whether_it_is_an_estimate(aged, r, client):
    """Per row, not per answer: the days still exact are unmarked, the days answered from
    stored rows say why (the API passes the rows through)."""
    info, _, days, today = aged
    rows, estimated = filtered.timeseries(
        r, info, segments.parse("country==DE"), days[0], days[-1], ("visitors", "pageviews")
    )
    assert estimated
    for row in rows:
        age = _age(today, date_of(row))
        assert ("estimate" in row) == (age >= 7), (row, age)  # (country==DE has its bitmaps until keep_segment_days)
    assert "HyperLogLogs the rollup stored" in rows[0]["estimate"]


def date_of(row):
    from datetime import date

    return date.fromisoformat(row["date"])


# The rollup keeps each day's HLLs as rows (DaySketch, counts/sketches.py): a day whose
# keys expired counts filters combined from them by inclusion-exclusion, and one union of
# values over a range as one PFCOUNT, within HLL's error (±0.81% a union; the bounds below
# are three of those over the unions an answer reads, or 2 people on these small days).
ONE_UNION = ["goal==Signup", "source==Google", "country==DE", "source==Google|newsletter", "page~blog"]


@pytest.mark.parametrize("text", CASES)
def test_each_expired_days_filtered_visitors_are_within_hll_error(aged, r, text):
    info, brute, days, today = aged
    filters = segments.parse(text)
    values, _ = filtered.daily_values(r, info, filters, days[0], days[-1], windows=False)
    for day in days:
        if _age(today, day) >= 7:  # (its filter bitmaps, or all its keys, expired)
            truth = len(brute.segment(day, filters))
            bound = max(2, 3 * 0.0081 * 2 ** len(filters) * len(brute.active[day]))
            assert abs(values[day]["dau"] - truth) <= bound, (text, day, values[day]["dau"], truth)


@pytest.mark.parametrize("text", ONE_UNION)
def test_one_unions_visitors_over_expired_days_are_a_union_of_sketches(aged, r, text):
    info, brute, days, _ = aged
    filters = segments.parse(text)
    summary, estimated = filtered.summary(r, info, filters, days[0], days[-1])
    truth = len(set().union(*(brute.segment(day, filters) for day in days)))
    assert estimated and "HyperLogLogs the rollup stored" in summary["estimates"]["visitors"]
    assert abs(summary["visitors"] - truth) <= max(2, 3 * 0.0081 * truth), (text, summary["visitors"], truth)


def test_the_sites_visitors_over_expired_days_are_a_union_of_sketches(aged, r):
    info, brute, days, _ = aged
    summary = queries.summary(r, info, days[0], days[-1])
    truth = len(set().union(*(brute.active[day] for day in days)))
    assert "sketches the rollup stored (±0.81%)" in summary["estimates"]["visitors"]
    assert abs(summary["visitors"] - truth) <= max(2, 3 * 0.0081 * truth), (summary["visitors"], truth)


def test_filters_combined_over_expired_days_still_say_they_have_no_bound(aged, r):
    """Per-day HLLs cannot say who matched both filters on the same day across a range: the
    union of such days is an estimate from the days' sizes, and says it has no bound."""
    info, _, days, _ = aged
    summary, _ = filtered.summary(r, info, segments.parse("source==Google;country!=DE"), days[0], days[-1])
    assert "no stated bound" in summary["estimates"]["visitors"]
    assert "HyperLogLogs the rollup stored" in summary["estimates"]["dau"]


def test_days_rolled_up_before_sketches_were_kept_are_counted_from_their_rows(aged, r):
    from analytics.models import DaySketch

    info, brute, days, _ = aged
    DaySketch.objects.filter(site_id=info.id).delete()
    summary, _ = filtered.summary(r, info, segments.parse("source==Google"), days[0], days[-1])
    assert "stored daily rows" in summary["estimates"]["visitors"]
    site_wide = queries.summary(r, info, days[0], days[-1])
    assert "no stated bound" in site_wide["estimates"]["visitors"]
    truth = len(set().union(*(brute.active[day] for day in days)))
    assert abs(site_wide["visitors"] - truth) <= 0.3 * truth
