"""Ingestion endpoints: `POST /api/event` (Plausible-compatible) and `POST /api/v1/events`.

Both validate at the edge (`schemas.py`), then hand hits to `ingest.record()`: one Redis
round trip per request, whatever the batch size.
"""

import hashlib
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import orjson
from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError

from .. import sites
from ..capture import spool
from ..dropped import EXCLUSION, PATTERN, REASONS, USER_AGENT, reason_of
from ..ingest import schemas
from ..ingest.checks import Checks
from ..ingest.identity import identity_source
from ..ingest.record import IDEMPOTENCY_KEY_TTL, Hit, Mark, client_mark, idempotency_digest, new_mark
from ..ingest.visit import visit_attrs
from ..store import keys
from ..store.connection import OUTAGE, get_redis
from ..store.limits import Bucket, Limited, Rate
from . import params
from .http import UNREADABLE, ApiError, bearer_site, client_ip, cors, json_errors, json_response, methods, read_body

DROPPED_HEADER = "X-Tally-Dropped"
SPOOLED_HEADER = "X-Tally-Spooled"  # Redis was down: kept on disk, counted when it is back
REPLAYED_HEADER = "Idempotent-Replayed"


@csrf_exempt
@cors
@methods("POST", "OPTIONS")
@json_errors
def event(request):
    """One event from a browser, in Plausible's format. Sent as application/json or as
    text/plain (which spares the browser a CORS preflight); the body is JSON either way.
    (Behind `make run`'s server, config/event_front.py answers this path itself, with the
    same single_event() and group commit; this view serves every other server.)"""
    body = read_body(request, settings.MAX_EVENT_BODY)
    accepted = single_event(body, request.META.get("HTTP_USER_AGENT", ""), client_ip(request))
    response = HttpResponse(b"ok", status=202, content_type="text/plain")
    for site, hit, limits in accepted.targets:
        if _record_or_spool(site, [hit], accepted.now, new_mark(site, accepted.now), limits) is None:
            response[SPOOLED_HEADER] = "1"
    if accepted.dropped:
        response[DROPPED_HEADER] = dropped_header(accepted.dropped)
    return response


def dropped_header(reason: str) -> str:
    """X-Tally-Dropped: why the event was not counted ("bot" for a crawler's User-Agent,
    as it was named before there were other reasons)."""
    return "bot" if reason == USER_AGENT else reason


class SingleEvent(NamedTuple):
    """A browser's event, checked: one (site, hit, rate limits) per site it names. Hits
    dropped carry their reason (Hit.bot) and are counted as dropped, by reason."""

    targets: list[tuple[sites.SiteInfo, Hit, list[Bucket]]]
    now: datetime
    dropped: str | None = None  # why, when no site it names counts it (analytics/dropped.py)


def single_event(body: bytes, user_agent: str, ip: str) -> SingleEvent:
    """Validate a Plausible-style event body (already read and inflated) from a client at
    `ip`; raises ApiError naming what is wrong. No I/O beyond the sites' cached lookup."""
    try:
        payload = schemas.PlausibleEvent.model_validate_json(body)
    except ValidationError as e:
        raise ApiError(400, schemas.describe(e)) from None
    if not user_agent:
        raise ApiError(400, "missing User-Agent header")
    try:
        path = schemas.page_path(payload.url, keep_fragment=bool(payload.hash_mode))
    except schemas.BadEvent as e:
        raise ApiError(400, str(e)) from None

    # Plausible lets one event count for several sites: "domain": "a.com,b.com". Each site
    # counts it once, however often it is listed.
    domains = dict.fromkeys(d for d in (part.strip().lower() for part in payload.domain.split(",")) if d)
    targets = {site.id: site for site in map(sites.site_for_domain, domains) if site is not None}
    if not targets:
        raise ApiError(400, f"unknown domain: {payload.domain!r}; add the site first")

    # A user_id still identifies the visitor, but an anonymous request never writes a named
    # user's recommendation filter (only the Bearer-key APIs do): user=None.
    source = identity_source(payload.user_id, None, ip, user_agent)
    try:
        schemas.check_name(payload.name)
        props, revenue = schemas.check_props(payload.props), schemas.check_revenue(payload.revenue)
    except schemas.BadEvent as e:
        raise ApiError(400, str(e)) from None
    checks = Checks(user_agent, ip, payload.referrer)
    accepted = []
    reasons = set()
    for site in targets.values():
        limits = [*_site_limit(site, 1), *_client_limit(site, ip)]
        why = checks.dropped(site, path, payload.url)
        reasons.add(why)
        attrs = (
            "" if why else visit_attrs(site.domain, payload.url, payload.referrer, user_agent, ip, payload.screen_width)
        )
        accepted.append(
            (
                site,
                Hit(None, path, payload.name, source, why or False, None, attrs, payload.interactive, props, revenue),
                limits,
            )
        )
    dropped = None if None in reasons else min(reasons, key=REASONS.index)
    return SingleEvent(accepted, datetime.now(UTC), dropped)


def _site_limit(site, cost: int) -> list[Bucket]:
    if not site.rate_per_minute:
        return []
    return [Bucket(keys.rate_site(site.id), Rate(site.rate_per_minute, site.rate_per_minute), cost)]


def _client_limit(site, ip: str) -> list[Bucket]:
    if not settings.RATE_LIMIT_PER_IP:
        return []
    digest = hashlib.blake2b(ip.encode(), key=site.salt, digest_size=8).hexdigest()  # no raw IP in Redis
    return [
        Bucket(keys.rate_client(site.id, digest), Rate(settings.RATE_LIMIT_PER_IP, settings.RATE_LIMIT_PER_IP_BURST))
    ]


def _record_or_spool(site, hits, now: datetime, mark: Mark, limits: Sequence[Bucket] = ()):
    """spool.record_or_spool(): the Recorded answer, or None when spooled. Over a rate
    limit: 429, nothing counted; no Redis and no spool either: 503."""
    try:
        return spool.record_or_spool(get_redis(), site, hits, now, mark, limits)
    except Limited as e:
        raise ApiError(429, str(e), {"Retry-After": str(e.retry_after)}) from None
    except spool.StorageUnavailable:
        raise ApiError(503, "storage is unavailable; retry later", {"Retry-After": "5"}) from None


@csrf_exempt
@methods("POST")
@json_errors
def events(request):
    """A batch of server-side events for the site of the Bearer key: a JSON array or NDJSON.

    Good events are counted even when others in the batch are bad; the answer lists each
    rejected event's index and reason."""
    site = bearer_site(request)
    body = read_body(request, settings.MAX_BATCH_BODY)
    now = datetime.now(UTC)
    keep_bots = params.BOTS.read(request)  # (then only the site's own exclusions apply)

    items, rejected = _parse_batch(body)
    parsed = batch_hits(site, items, now, rejected, keep_bots)
    # Any day from 2000 on counts, but a day sealed since its rollup, or about to be (sites.refused_days).
    today = site.today()  # (today cannot have been sealed)
    sealed = sites.refused_days(
        site,
        {day for _, hit in parsed if hit.ts is not None for day in [hit.ts.astimezone(site.tz).date()] if day < today},
    )
    hits = []
    for index, hit in parsed:
        day = hit.ts.astimezone(site.tz).date() if hit.ts is not None else None
        if day in sealed:
            rejected.append({"index": index, "error": sites.sealed_reason(day)})
        else:
            hits.append(hit)
    rejected.sort(key=lambda r: r["index"])
    dropped = Counter(reason_of(hit.bot) for hit in hits if hit.bot)
    headers = {}
    if hits:
        key = request.headers.get(params.IDEMPOTENCY_KEY.name, "").strip()
        if "idempotency-key" in request.META.get(
            UNREADABLE, ()
        ):  # (else a retry would count again: ignored is not honoured)
            raise ApiError(400, "Idempotency-Key: has bytes outside visible ASCII; send an ASCII key (a UUID, say)")
        if len(key) > 255:
            raise ApiError(400, "Idempotency-Key: at most 255 characters")
        if key:
            _same_body_as_before(site, key, body)
        mark = client_mark(site, key) if key else new_mark(site, now)
        recorded = _record_or_spool(site, hits, now, mark, _site_limit(site, len(hits)))
        if recorded is None:
            headers[SPOOLED_HEADER] = str(len(hits))
        elif recorded.repeated:
            headers[REPLAYED_HEADER] = "true"  # this Idempotency-Key's events were counted before
        elif recorded.bots > dropped.total():  # (record() dropped visitors past the site's rate: patterns.py)
            dropped[PATTERN] += recorded.bots - dropped.total()
    excluded = dropped.pop(EXCLUSION, 0)
    answer = {"accepted": len(hits) - excluded - dropped.total(), "bots_dropped": dropped.total(), "rejected": rejected}
    if dropped.total() > dropped[USER_AGENT]:
        answer["dropped"] = dict(sorted(dropped.items(), key=lambda item: REASONS.index(item[0])))  # (why, by reason)
    if excluded:
        answer["excluded"] = excluded  # (the site's exclusions: not counted)
    return json_response(answer, headers=headers or None)


def batch_hits(site: sites.SiteInfo, items, now: datetime, rejected: list, keep_bots: bool = False) -> list:
    """The batch's (index, hit) for its valid events, each checked (a dropped one carries
    its reason); the others' errors go to `rejected`."""
    parsed = []
    checked_site = site.never_drops() if keep_bots else site
    for index, item in items:
        try:
            hit = schemas.batch_hit(item, now, site.domain)
        except schemas.BadEvent as e:
            rejected.append({"index": index, "error": str(e)})
            continue
        why = Checks(item.get("user_agent"), item.get("ip"), item.get("referrer")).dropped(
            checked_site, hit.path, item["url"]
        )
        parsed.append((index, hit._replace(bot=why, attrs="") if why else hit))
    return parsed


def _same_body_as_before(site, idempotency_key: str, body: bytes):
    """A retry sends the same body under its Idempotency-Key; another body under a key
    already used is a client's mistake, which would be answered as a replay while none of
    its events were counted: 422, as Stripe answers it. The first body's fingerprint is
    kept as long as the key's marks. Without Redis there is nothing to compare with: the
    batch goes to the spool under its key's mark, as before."""
    name = keys.idempotency_body(site.id, idempotency_digest(site, idempotency_key))
    fingerprint = hashlib.blake2b(body, digest_size=16).hexdigest()
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.set(name, fingerprint, nx=True, ex=IDEMPOTENCY_KEY_TTL)
        pipe.get(name)
        first = pipe.execute()[1]
    except OUTAGE:
        return
    if first is not None and first.decode() != fingerprint:
        raise ApiError(
            422,
            "Idempotency-Key: already used with another body (a retry must send the same body; "
            "use a new key for new events)",
        )


def _parse_batch(body: bytes):
    """Validated (index, event) pairs and the rejected ones, from an array or NDJSON.

    The fast path validates the whole array in pydantic's core at once; only when something
    is wrong does it fall back to event by event, so one bad event costs the others nothing."""
    stripped = body.lstrip()
    if stripped.startswith(b"["):
        try:
            events_ = schemas.batch_adapter.validate_json(body)
            _check_count(len(events_))
            return list(enumerate(events_)), []
        except ValidationError:
            pass
        try:
            raw = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            raise ApiError(400, f"malformed JSON: {e}") from None
        _check_count(len(raw))
        return _validate_each(enumerate(raw), schemas.batch_event_adapter.validate_python)
    if stripped.startswith(b"{"):
        lines = list(enumerate(line for line in body.splitlines() if line.strip()))
        _check_count(len(lines))
        return _validate_each(lines, schemas.batch_event_adapter.validate_json)
    raise ApiError(400, "body must be a JSON array of events or NDJSON (one event object per line)")


def _validate_each(indexed, validate):
    good, bad = [], []
    for index, item in indexed:
        try:
            good.append((index, validate(item)))
        except ValidationError as e:
            bad.append({"index": index, "error": schemas.describe(e)})
    return good, bad


def _check_count(count: int):
    if count > settings.MAX_BATCH_EVENTS:
        raise ApiError(413, f"too many events: {count}, at most {settings.MAX_BATCH_EVENTS} per batch")
