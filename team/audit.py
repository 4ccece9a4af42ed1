"""The audit log: record() after each change a member makes to a site (members, roles,
invitations, settings, goals, funnels, segments, notes, share links, API keys, reports,
alerts), read on the settings page by owners and admins."""

from analytics.models import Site

from .models import AuditEvent


def record(site: Site, user, action: str, detail: str = "") -> AuditEvent:
    """One line of the site's log: `action` a short verb phrase ("member.invited"),
    `detail` what it was about, in words."""
    actor = user if user is not None and user.is_authenticated else None
    return AuditEvent.objects.create(
        site=site,
        actor=actor,
        actor_name=actor.get_username() if actor else "",
        action=action,
        detail=detail[:500],
    )
