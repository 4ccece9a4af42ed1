"""The live counter's engine: one subscription per site and process, fanned out."""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from analytics.ingest import Hit, record
from analytics.ingest.identity import identity_source
from analytics.queries import live
from analytics.sites import SiteInfo


def test_every_listener_gets_the_new_count_after_a_tick(site, r):
    info = SiteInfo.from_model(site)

    async def scenario():
        streams = [live.visitor_counts(info) for _ in range(3)]
        first = [await anext(s) for s in streams]
        assert first == [0, 0, 0]
        assert len(live._channels) == 1  # one subscription for the three
        await asyncio.sleep(0.2)
        await asyncio.to_thread(record, r, info, [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])

        async def until_one(stream):
            while (count := await anext(stream)) != 1:
                pass
            return count

        later = await asyncio.wait_for(asyncio.gather(*(until_one(s) for s in streams)), 5)
        for s in streams:
            await s.aclose()
        await asyncio.sleep(0.05)
        return later

    later = asyncio.run(scenario())
    assert later == [1, 1, 1]
    assert live._channels == {}


def test_a_tick_is_published_at_most_once_a_second(site, r):
    info = SiteInfo.from_model(site)
    pubsub = r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(f"tally:{{{site.pk}}}:live")
    for n in range(5):
        record(r, info, [Hit(None, "/", "pageview", identity_source(None, str(n), None, None))], now=datetime.now(UTC))
    messages, deadline = [], time.monotonic() + 0.5
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.1)
        if message is not None:
            messages.append(message)
    assert len(messages) == 1


@pytest.mark.django_db(transaction=True)
def test_a_revoked_share_link_ends_its_open_streams(r, monkeypatch):
    from analytics.models import Site
    from dashboard import live as live_views

    monkeypatch.setattr(live_views, "RECHECK_SECONDS", 0)
    site = Site.objects.create(domain="example.com", timezone="UTC")
    token = site.enable_sharing()
    info = SiteInfo.from_model(site)

    async def scenario():
        response = await AsyncClient().get(f"/live/share/{token}")
        assert response.status_code == 200
        chunks = aiter(response.streaming_content)
        assert (await anext(chunks)).startswith(b"retry")
        first = await anext(chunks)
        await sync_to_async(site.revoke_sharing)()
        await asyncio.sleep(0.2)
        await asyncio.to_thread(record, r, info, [Hit(None, "/", "pageview", identity_source(None, "b", None, None))])
        rest = await asyncio.wait_for(_drain(chunks), 5)
        return first, rest

    with ThreadPoolExecutor(1) as thread:  # (its own event loop: the browser tests' may be running here)
        first, rest = thread.submit(asyncio.run, scenario()).result()
    assert first == b'data: {"visitors": 0}\n\n'
    assert rest == [b"event: closed\ndata: {}\n\n"]  # and then the stream ended


async def _drain(chunks):
    return [chunk async for chunk in chunks]


@pytest.mark.django_db(transaction=True)
def test_a_segments_link_streams_ticks_without_everyones_count(r, client):
    """A segment's share link shows its audience alone: its page names its own stream (not
    the site's share link, which would show everyone), and that stream says when there
    was a tick but not the site's count; deleting the segment ends it."""
    from analytics.models import Segment, Site
    from dashboard import live as live_views

    site = Site.objects.create(domain="example.com", timezone="UTC")
    site_token = site.enable_sharing()
    segment = Segment.objects.create(site=site, name="Google", filters="source==Google")
    token = segment.share()
    info = SiteInfo.from_model(site)
    record(r, info, [Hit(None, "/", "pageview", identity_source(None, "a", None, None))])
    page = client.get(f"/share/{token}/?period=7d").content.decode()
    assert f"/live/share/{token}" in page and site_token not in page

    async def scenario():
        response = await AsyncClient().get(f"/live/share/{token}")
        assert response.status_code == 200
        chunks = aiter(response.streaming_content)
        assert (await anext(chunks)).startswith(b"retry")
        first = await anext(chunks)
        live_views.RECHECK_SECONDS = 0
        await sync_to_async(segment.delete)()
        await asyncio.sleep(0.2)
        await asyncio.to_thread(record, r, info, [Hit(None, "/", "pageview", identity_source(None, "b", None, None))])
        rest = await asyncio.wait_for(_drain(chunks), 5)
        return first, rest

    recheck = live_views.RECHECK_SECONDS
    try:
        with ThreadPoolExecutor(1) as thread:
            first, rest = thread.submit(asyncio.run, scenario()).result()
    finally:
        live_views.RECHECK_SECONDS = recheck
    assert first == b'data: {"visitors": null}\n\n'
    assert rest == [b"event: closed\ndata: {}\n\n"]


@pytest.mark.django_db(transaction=True)
def test_a_removed_members_open_stream_ends(r, django_user_model, monkeypatch):
    from analytics.models import Site
    from dashboard import live as live_views
    from team.models import Membership
    from team.roles import add_member

    monkeypatch.setattr(live_views, "RECHECK_SECONDS", 0)
    site = Site.objects.create(domain="example.com", timezone="UTC")
    user = django_user_model.objects.create_user("viewer", password="pw-12345678-long")
    add_member(site, user, "viewer")
    info = SiteInfo.from_model(site)

    async def scenario():
        client = AsyncClient()
        await client.aforce_login(user)
        response = await client.get("/live/example.com")
        assert response.status_code == 200
        chunks = aiter(response.streaming_content)
        assert (await anext(chunks)).startswith(b"retry")
        await anext(chunks)
        await Membership.objects.filter(user=user).aupdate(removed=timezone.now())
        await asyncio.sleep(0.2)
        await asyncio.to_thread(record, r, info, [Hit(None, "/", "pageview", identity_source(None, "b", None, None))])
        return await asyncio.wait_for(_drain(chunks), 5)

    with ThreadPoolExecutor(1) as thread:
        rest = thread.submit(asyncio.run, scenario()).result()
    assert rest == [b"event: closed\ndata: {}\n\n"]
