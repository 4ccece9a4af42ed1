"""Tally on a real local 3-master Redis Cluster (tests/redis_cluster.py).

The whole suite runs on a cluster with TALLY_TEST_CLUSTER=1 (CI does); these tests run in
every `make test`: routing (a site's keys in one slot, sites spread over the masters, a
pipeline over several sites), and a site end to end: HTTP ingest, rollup, reads, exactly
against brute force."""

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.rollups import jobs
from analytics.sites import SiteInfo
from analytics.store import connection, keys
from analytics.store.cluster import ClusterClient, site_client
from analytics.store.scripts import RECORD_BATCH


@pytest.fixture
def cluster(settings, redis_cluster):
    settings.REDIS_CLUSTER_URL = redis_cluster.url
    connection.reset()
    client = connection.get_redis()
    assert isinstance(client, ClusterClient)
    client.flushall()
    yield client
    connection.reset()


def masters_of(client) -> dict[str, list[bytes]]:
    """Every master's keys (SCAN on each)."""
    return {node.name: list(client.get_redis_connection(node).scan_iter(count=1000)) for node in client.get_primaries()}


def info(site_id: int) -> SiteInfo:
    import zoneinfo

    return SiteInfo(
        id=site_id, domain=f"s{site_id}.example", tz=zoneinfo.ZoneInfo("UTC"), daily_salt=False, salt=b"k" * 16
    )


def test_one_sites_keys_sit_in_one_slot_and_sites_spread_over_the_masters(cluster):
    now = datetime.now(UTC)
    for site_id in range(1, 31):
        hits = [
            Hit(None, f"/p/{n % 7}", "pageview", identity_source(None, f"v{n}", None, None), attrs="source\x1fGoogle")
            for n in range(20)
        ]
        record(cluster, info(site_id), hits, now=now)
    slots_by_site, masters_by_site = {}, {}
    for master, names in masters_of(cluster).items():
        for name in names:
            site_id = int(name.decode().split("{", 1)[1].split("}", 1)[0])
            slots_by_site.setdefault(site_id, set()).add(cluster.keyslot(name))
            masters_by_site.setdefault(site_id, set()).add(master)
    assert sorted(slots_by_site) == list(range(1, 31))
    assert all(len(slots) == 1 for slots in slots_by_site.values())  # a site: one slot, one master
    assert len({m for ms in masters_by_site.values() for m in ms}) == 3  # 30 sites: every master has some


def test_a_pipeline_over_several_sites_answers_in_order(cluster):
    now = datetime.now(UTC)
    for site_id in (1, 2, 3):
        record(
            cluster,
            info(site_id),
            [Hit(None, "/", "pageview", identity_source(None, f"v{n}", None, None)) for n in range(site_id * 10)],
            now=now,
        )
    day = now.date()
    pipe = cluster.pipeline(transaction=False)
    for site_id in (1, 2, 3):
        pipe.pfcount(keys.site_visitors(site_id, day))  # (refused by redis-py's own cluster pipeline)
        pipe.bitcount(keys.active(site_id, day))
        pipe.get(keys.pageviews(site_id, day))
    assert pipe.execute() == [10, 10, b"10", 20, 20, b"20", 30, 30, b"30"]
    assert site_client(cluster, 2).get(keys.pageviews(2, day)) == b"20"  # the master of site 2's slot


def test_a_script_the_masters_forgot_is_loaded_again(cluster):
    cluster.script_flush()
    record(cluster, info(7), [Hit(None, "/", "pageview", identity_source(None, "v", None, None))])
    assert all(
        cluster.get_redis_connection(node).script_exists(RECORD_BATCH.sha)[0] for node in cluster.get_primaries()
    )


@pytest.mark.django_db
def test_a_site_end_to_end_on_the_cluster(client, make_site, cluster):
    """Batches over HTTP, the rollup, then the read API: exact against the events sent."""
    site, key = make_site()
    rng = random.Random(7)
    today = datetime.now(UTC).date() - timedelta(days=1)  # (the last day: 10:00 has passed on it)
    events, seen = [], {}
    for n in range(600):
        day = today - timedelta(days=n % 3)
        visitor, page = f"v{rng.randrange(150)}", f"/p/{rng.randrange(12)}"
        events.append(
            {
                "url": f"https://example.com{page}",
                "visitor": visitor,
                "ts": datetime.combine(day, datetime.min.time(), UTC).replace(hour=10, minute=n % 60).isoformat(),
            }
        )
        seen.setdefault(day, set()).add(visitor)
    response = client.post(
        "/api/v1/events", data=json.dumps(events), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200 and response.json()["accepted"] == 600
    jobs.roll_recent(cluster, site)
    start = today - timedelta(days=2)
    answer = client.get(
        "/api/v1/stats/timeseries",
        {"site": "example.com", "from": start.isoformat(), "to": today.isoformat()},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    rows = {row["date"]: row for row in answer["results"]}
    for day, visitors in seen.items():
        assert rows[day.isoformat()]["dau"] == len(visitors)  # exact: bitmaps on the site's master
        assert rows[day.isoformat()]["pageviews"] == sum(1 for e in events if e["ts"].startswith(day.isoformat()))
    aggregate = client.get(
        "/api/v1/stats/aggregate",
        {"site": "example.com", "from": start.isoformat(), "to": today.isoformat()},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    ).json()
    assert aggregate["results"]["pageviews"]["value"] == 600
