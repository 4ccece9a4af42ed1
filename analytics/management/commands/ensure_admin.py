"""Make an `admin` superuser on first run and say how to log in (used by `make run`).

The password is random, printed once (on the start that made it) and kept in
./var/admin-password (mode 0600); later starts say where it is, not what it is. Change it
in the admin and delete that file.
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
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(password + "\n")
            self.stdout.write(f"[tally] admin login: admin / {password}  (kept in {path}, readable by you only)")
        elif path.exists() and User.objects.filter(username="admin").exists():
            self.stdout.write(f"[tally] admin login: admin (the password is in {path})")
