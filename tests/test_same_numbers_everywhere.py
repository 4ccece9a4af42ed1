"""The read API, the dashboard, its share link and the exports give the same numbers for the
same query, filtered or not, over days inside and past each raw-key expiry (the history of
tests/test_filters_past_expiry.py), and mark the same ones as estimates."""

import json
import re

import pytest

from analytics.models import Site
from dashboard.templatetags.humanize_tally import metric as shown_as
from team.roles import add_member
from tests.test_filters_past_expiry import aged  # noqa: F401  (the fixture)

METRICS = ("visitors", "pageviews", "dau", "new_visitors", "visits", "bounce_rate", "visit_duration", "views_per_visit")


def _cards(html: str) -> dict:
    """{metric: (shown value, marked ≈)} of a dashboard page's cards."""
    section = html.split('<section class="cards">', 1)[1].split("</section>", 1)[0]
    found = {}
    for chunk in section.split('data-metric="')[1:]:
        key = chunk.split('"', 1)[0]
        value = chunk.split('<div class="value">', 1)[1].split("</div>", 1)[0]
        found[key] = (re.sub(r"<[^>]+>|≈", "", value).strip(), 'class="approx"' in value)
    return found


@pytest.mark.parametrize(
    "filters", ["", "page==/pricing", "source==Google|Direct / None", "source==Google;country!=DE"]
)
def test_the_api_the_dashboard_the_share_link_and_the_exports_agree(aged, r, client, django_user_model, filters):  # noqa: F811
    info, _, days, _ = aged
    site = Site.objects.get(pk=info.id)
    key = site.create_api_key("surfaces")
    token = site.enable_sharing()
    query = {"from": days[0].isoformat(), "to": days[-1].isoformat(), **({"filters": filters} if filters else {})}
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    api = client.get(
        "/api/v1/stats/aggregate", {"site": site.domain, "metrics": ",".join(METRICS), **query}, **auth
    ).json()["results"]
    report = json.loads(client.get("/api/v1/reports/json", {"site": site.domain, **query}, **auth).content)
    summary = {row[0]: (row[1], row[3]) for row in report["tables"]["summary"]["rows"]}

    user = django_user_model.objects.create_user("owner", password="pw")
    add_member(site, user, "owner")
    client.force_login(user)
    page = {"period": "custom", **query}
    dashboard = _cards(client.get(f"/dashboard/{site.domain}/", page).content.decode())
    client.logout()
    shared = _cards(client.get(f"/share/{token}/", page).content.decode())

    for metric in METRICS:
        value, why = api[metric]["value"], api[metric].get("estimate", "")
        assert summary[metric] == (value, why), metric
        rate = metric in ("bounce_rate", "visit_duration", "views_per_visit")
        shown = "–" if value is None else shown_as(value, metric) if rate else f"{value:,}"
        assert dashboard[metric] == shared[metric] == (shown, bool(why)), metric
    assert any("estimate" in api[m] for m in METRICS)  # (the range reaches days answered from stored rows)
    if not filters or ";" not in filters:  # (one filter, or none: every visit metric is said)
        assert all(api[m]["value"] is not None for m in METRICS), api

    # A breakdown: the API's rows, the dashboard's panel (its endpoint), the export's table.
    rows = client.get(
        "/api/v1/stats/breakdown", {"site": site.domain, "property": "country", "limit": 100, **query}, **auth
    ).json()
    by_api = {row["country"]: row["visitors"] for row in rows["results"]}
    by_export = {row[0]: row[1] for row in report["tables"]["country"]["rows"]}
    panel = client.get(f"/share/{token}/breakdown", {"property": "country", **page}).json()
    by_panel = {row["value"]: row["count"] for row in panel["rows"]}
    assert by_api == by_export
    assert by_panel == dict(list(by_api.items())[: len(by_panel)]) and by_panel
