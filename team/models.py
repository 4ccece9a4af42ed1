"""Who works on a site, as what: memberships with a role, invitations by email, and the
site's audit log. An account may belong to many sites; staff keep the Django admin (the
engine's settings) and see every site as owners do."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from analytics.models import Site


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    EDITOR = "editor", "Editor"
    VIEWER = "viewer", "Viewer"


# What each role may do, in order: a role may do everything of the roles below it.
RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2, Role.OWNER: 3}
ROLE_WORDS = {
    Role.OWNER: "everything, members and owners included",
    Role.ADMIN: "settings, goals, funnels, share links, API keys and members (not owners)",
    Role.EDITOR: "goals, funnels, segments and notes",
    Role.VIEWER: "reads the dashboard",
}


class Membership(models.Model):
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    created = models.DateTimeField(auto_now_add=True)
    # Set when the member was removed: the row stays so that their next request is told
    # why it is refused (403), where an account that never was a member finds nothing (404).
    removed = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "user"], name="membership_unique")]
        ordering = ["site", "user__username"]

    def __str__(self):
        return f"{self.user} ({self.get_role_display()} of {self.site})"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Invitation(models.Model):
    """An invitation to join a site: its link holds a token whose hash alone is stored;
    it works once, until it expires or is revoked."""

    DAYS = 7

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Role.choices)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField()
    accepted = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"{self.email} ({self.get_role_display()} of {self.site})"

    @classmethod
    def create(cls, site: Site, email: str, role: str, by=None) -> tuple["Invitation", str]:
        """A new invitation and its token (shown once: in the link, never stored)."""
        token = secrets.token_urlsafe(24)
        invitation = cls.objects.create(
            site=site,
            email=email.strip().lower(),
            role=role,
            token_hash=hash_token(token),
            invited_by=by,
            expires=timezone.now() + timedelta(days=cls.DAYS),
        )
        return invitation, token

    @classmethod
    def open_for(cls, token: str) -> "Invitation | None":
        """The invitation a link's token opens, if it is still open."""
        if not token:
            return None
        return (
            cls.objects.select_related("site")
            .filter(token_hash=hash_token(token), accepted__isnull=True, expires__gt=timezone.now())
            .first()
        )

    @property
    def is_open(self) -> bool:
        return self.accepted is None and self.expires > timezone.now()


class AuditEvent(models.Model):
    """One action on a site: who (kept by name too, should the account go), what, when."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64)
    detail = models.CharField(max_length=500, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self):
        return f"{self.created:%Y-%m-%d %H:%M} {self.actor_name or 'Tally'}: {self.action} {self.detail}"


class Report(models.Model):
    """A recipient of a site's weekly or monthly email report (a member or any address).
    `last_period` names the last period sent ("2026-W47", "2026-10"): a period is sent
    once (sending claims it first: reports.py)."""

    class Frequency(models.TextChoices):
        WEEKLY = "weekly", "Weekly (Monday, for the week before)"
        MONTHLY = "monthly", "Monthly (the 1st, for the month before)"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="reports")
    email = models.EmailField()
    frequency = models.CharField(max_length=10, choices=Frequency.choices)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    last_period = models.CharField(max_length=16, blank=True)
    last_sent = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "email", "frequency"], name="report_unique")]
        ordering = ["site", "email", "frequency"]

    def __str__(self):
        return f"{self.get_frequency_display()} report of {self.site} to {self.email}"


def new_webhook_secret() -> str:
    return secrets.token_hex(32)


class Alert(models.Model):
    """A traffic alert of a site: a spike (visitors of the last five minutes above
    `threshold`) or a drop (today's visitors so far below `threshold` percent of the same
    weekday's average so far, over the four weeks before). Each fires at most once a day
    (the site's), to its mail addresses, a Slack-compatible incoming webhook and a signed
    JSON webhook (alerts.py)."""

    class Kind(models.TextChoices):
        SPIKE = "spike", "Spike: current visitors above a number"
        DROP = "drop", "Drop: today's visitors below a share of the usual"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    threshold = models.PositiveIntegerField(help_text="spike: visitors; drop: percent of the usual")
    emails = models.TextField(blank=True, help_text="addresses, one per line")
    slack_url = models.URLField(blank=True, max_length=500)
    webhook_url = models.URLField(blank=True, max_length=500)
    webhook_secret = models.CharField(max_length=64, default=new_webhook_secret, editable=False)
    enabled = models.BooleanField(default=True)
    last_fired = models.DateTimeField(null=True, blank=True)
    last_day = models.DateField(null=True, blank=True)  # (the site's day it last fired: once a day)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["site", "kind", "pk"]

    def __str__(self):
        return f"{self.get_kind_display()} ({self.threshold}) on {self.site}"

    @property
    def addresses(self) -> list[str]:
        return [line.strip() for line in self.emails.splitlines() if line.strip()]


class Delivery(models.Model):
    """One alert sent to one channel: tried at once, then again with growing waits
    (alerts.BACKOFF) until it goes or the tries run out; the settings page lists them."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to retry"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10)  # email, slack, webhook
    target = models.CharField(max_length=500)
    body = models.TextField()  # (what is sent: the mail's text, or the JSON posted)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    next_try = models.DateTimeField(null=True, blank=True, db_index=True)
    created = models.DateTimeField(auto_now_add=True)
    sent = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]
        verbose_name_plural = "deliveries"

    def __str__(self):
        return f"{self.alert} → {self.channel} {self.target} ({self.status})"
