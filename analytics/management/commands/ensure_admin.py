"""Make an `admin` superuser on first run and say how to log in (used by `make run`).

The password is random and kept in ./var/admin-password (mode 0600) so it can be shown
again on later runs; change it in the admin and delete that file to stop the reminder.
"""
import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the first admin user if there is none, and print the login."

    def handle(self, **options):
        User = get_user_model()
        path = settings.VAR_DIR / "admin-password"
        if not User.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser("admin", "", password)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(password + "\n")
        if path.exists() and User.objects.filter(username="admin").exists():
            self.stdout.write(f"[tally] admin login: admin / {path.read_text().strip()}  (from {path})")
