"""What a signed-in user may do on a site: their role there (staff: as owners), and the
check every changing view and settings page makes. Reading is analytics.queries.access's
(a member of any role, or staff, sees the site)."""

import functools

from django.core.exceptions import PermissionDenied

from analytics.models import Site

from .models import RANK, Membership, Role


def role_of(user, site: Site) -> str | None:
    """The user's role on the site: staff are owners everywhere; None for no member."""
    if not user.is_authenticated or not user.is_active:
        return None
    if user.is_staff:
        return Role.OWNER
    return Membership.objects.filter(site=site, user=user, removed__isnull=True).values_list("role", flat=True).first()


def may(user, site: Site, role: str) -> bool:
    """Does the user have at least `role` on the site?"""
    found = role_of(user, site)
    return found is not None and RANK[Role(found)] >= RANK[Role(role)]


def may_add_sites(user) -> bool:
    """Staff, and whoever owns a site, may add sites (and own them)."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or Membership.objects.filter(user=user, role=Role.OWNER, removed__isnull=True).exists()


def was_removed(user, site: Site) -> bool:
    """Was this account a member of the site until removed?"""
    return user.is_authenticated and Membership.objects.filter(site=site, user=user, removed__isnull=False).exists()


def add_member(site: Site, user, role: str) -> Membership:
    """Make the user a member of the site with this role (or change their role to it; a
    removed member comes back)."""
    membership, _ = Membership.objects.update_or_create(site=site, user=user, defaults={"role": role, "removed": None})
    return membership


def requires(role: str):
    """A site view (dashboard.views.site_view's signature) that changes something: a
    share link may not, and a member below `role` is refused (403, saying which role it
    takes)."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, site, info, base, shared, **kwargs):
            if shared:
                raise PermissionDenied("A share link is read-only.")
            if not may(request.user, site, role):
                raise PermissionDenied(f"This takes the {Role(role).label.lower()} role on {site.domain} (or more).")
            return view(request, site, info, base=base, shared=shared, **kwargs)

        return wrapper

    return decorate
