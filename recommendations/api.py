"""Recommendation dedup API: `POST /api/v1/seen`, `POST /api/v1/unseen`,
`GET /api/v1/recommendations`. Bearer key of the site; bad input is a 4xx JSON error
(the engine's API helpers: analytics/api/http.py, params.py)."""

from typing import Annotated

from django.conf import settings
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analytics.api import params
from analytics.api.http import ApiError, bearer_site, json_errors, json_response, methods, read_body
from analytics.ingest import schemas
from analytics.store.connection import get_redis

from . import bloom
from .queries import unseen_top_pages

Item = Annotated[str, Field(min_length=1, max_length=2048)]


class SeenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: Annotated[str, Field(min_length=1, max_length=256)]
    items: Annotated[list[Item], Field(min_length=1, max_length=bloom.MAX_ITEMS)]


def _request(request) -> tuple:
    site = bearer_site(request)
    body = read_body(request, settings.MAX_BATCH_BODY)
    try:
        payload = SeenRequest.model_validate_json(body)
    except ValidationError as e:
        too_many = any(err["type"] == "too_long" and err["loc"] == ("items",) for err in e.errors())
        raise ApiError(413 if too_many else 400, schemas.describe(e)) from None
    if not payload.user.strip():
        raise ApiError(400, "user: must not be blank")
    return site, payload, bloom.user_digest(site.salt, payload.user)


@csrf_exempt
@methods("POST")
@json_errors
def seen(request):
    """Mark items seen by a user; answers which of them were new. 409 when the user's
    filter cannot take them: full, or the site's filters at their budget."""
    site, payload, digest = _request(request)
    try:
        added = bloom.add(get_redis(), site.id, digest, payload.items, bloom.config_of(site), site_name=site.domain)
    except (bloom.FilterFull, bloom.FilterTooLarge) as e:  # (BudgetFull too: the site's filters at their budget)
        raise ApiError(409, str(e)) from None
    return json_response({"added": added})


@csrf_exempt
@methods("POST")
@json_errors
def unseen(request):
    """The items a user has (certainly) not seen yet, in the order given."""
    site, payload, digest = _request(request)
    flags = bloom.seen(get_redis(), site.id, digest, payload.items, bloom.config_of(site))
    return json_response({"items": [item for item, was_seen in zip(payload.items, flags) if not was_seen]})


@methods("GET")
@json_errors
def recommendations(request):
    """Top pages by visitors over the last `days` that the user has probably not seen
    (their filter is filled by every pageview sent with their user_id)."""
    site = params.SITE.read(request)
    user = params.USER.read(request)
    limit, days = params.RECOMMENDED.read(request), params.RECOMMEND_DAYS.read(request)
    return json_response(
        {"site": site.domain, "user": user, "pages": unseen_top_pages(get_redis(), site, user, limit, days)}
    )
