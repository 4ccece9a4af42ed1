"""Tally's mails (settings.EMAIL_URL; unset, the console backend writes them to the log):
invitations here; reports and alerts beside them."""

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from .models import Invitation


def link(path: str) -> str:
    """An absolute link for a mail or a command's output (settings.BASE_URL)."""
    return settings.BASE_URL + path


def send(subject: str, to: list[str], template: str, context: dict) -> int:
    """One mail, plain text and HTML from `template`.txt and .html; how many were sent."""
    text = render_to_string(f"{template}.txt", context)
    html = render_to_string(f"{template}.html", context)
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, to)
    message.attach_alternative(html, "text/html")
    return message.send()


def send_invitation(invitation: Invitation, url: str) -> int:
    inviter = invitation.invited_by.get_username() if invitation.invited_by else "Tally"
    return send(
        f"{inviter} invited you to {invitation.site.domain} on Tally",
        [invitation.email],
        "team/mail/invitation",
        {"invitation": invitation, "url": url, "inviter": inviter},
    )
