"""Who may read which site: staff see every site, other users the sites they own, and a
share token opens one site read-only to anyone holding it."""

from django.db.models import QuerySet

from ..models import Site


def visible_sites(user) -> QuerySet:
    if not user.is_authenticated or not user.is_active:
        return Site.objects.none()
    if user.is_staff:
        return Site.objects.all()
    return user.sites.all()


def site_for_user(user, domain: str) -> Site | None:
    return visible_sites(user).filter(domain=domain.strip().lower()).first()


def site_for_share_token(token: str) -> Site | None:
    if not token:
        return None
    return Site.objects.filter(share_token=token).first()
