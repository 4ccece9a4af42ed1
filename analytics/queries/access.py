"""Who may read which site: staff see every site, other users the sites they are members
of (team/: each member has a role; what a role may change is team.roles'), and a share
token opens one site read-only to anyone holding it (a segment's token: only that
segment's audience). Saved segments: a user sees their own and the site's shared ones."""

from datetime import UTC, datetime

from django.db.models import Q, QuerySet

from ..models import Segment, ShareLinkOptions, Site


def visible_sites(user) -> QuerySet:
    if not user.is_authenticated or not user.is_active:
        return Site.objects.none()
    if user.is_staff:
        return Site.objects.all()
    return Site.objects.filter(memberships__user=user, memberships__removed__isnull=True)


def site_for_user(user, domain: str) -> Site | None:
    return visible_sites(user).filter(domain=domain.strip().lower()).first()


def share_options(token: str) -> ShareLinkOptions | None:
    """A share link's protections (password, embedding, last day), if it has any."""
    return ShareLinkOptions.objects.filter(token=token).first() if token else None


def expired(token: str) -> bool:
    """Is the link past its last day (in UTC: the link ends for everyone at once)?"""
    options = share_options(token)
    return bool(options and options.expires and options.expires < datetime.now(UTC).date())


def site_for_share_token(token: str) -> Site | None:
    if not token:
        return None
    site = Site.objects.filter(share_token=token).first()
    return None if site is None or expired(token) else site


def segment_for_share_token(token: str) -> Segment | None:
    """The saved segment a share link shows (its site read-only, that audience only)."""
    if not token:
        return None
    segment = Segment.objects.select_related("site").filter(share_token=token).first()
    return None if segment is None or expired(token) else segment


def visible_segments(user, site: Site) -> QuerySet:
    """The segments a user may pick on a site: their own and the shared ones."""
    if not user.is_authenticated:
        return Segment.objects.none()
    return site.segments.filter(Q(owner=user) | Q(shared=True))
