"""A real SMTP server for the tests (aiosmtpd on 127.0.0.1, a free port): what Tally's
mails (invitations, reports, alerts) meet, parsed back into email messages."""

import email
import email.policy
import socket
import threading
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller


class Inbox:
    """The messages the server received, in order, as email.message.EmailMessage."""

    def __init__(self):
        self.messages: list[EmailMessage] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.arrived:
            self.messages.append(message)  # type: ignore[arg-type]
            self.arrived.notify_all()
        return "250 OK"

    def wait(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, timeout)
        return list(self.messages)


def body(message: EmailMessage, kind: str = "plain") -> str:
    part = message.get_body(preferencelist=(kind,))
    return part.get_content() if part is not None else ""


@pytest.fixture
def smtp(settings):
    """Start the server; Django sends to it (settings as EMAIL_URL would set them)."""
    inbox = Inbox()
    with socket.socket() as probe:  # (a free port: aiosmtpd's start-up check cannot take port 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_URL = f"smtp://127.0.0.1:{port}"
        yield inbox
    finally:
        controller.stop()
