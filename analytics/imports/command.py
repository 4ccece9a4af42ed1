"""What `manage.py import KIND DOMAIN FILE...` and `manage.py import_log --site DOMAIN
FILE...` share: the site found, then run.import_files() with the terminal's progress bars."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ..models import Site
from .run import Refused, import_files


class ImportCommand(BaseCommand):
    def import_files(self, kind: str, domain: str, files: list[Path], no_rollup: bool = False):
        site = Site.objects.filter(domain=domain.strip().lower()).first()
        if site is None:
            raise CommandError(f"no site {domain!r}; add it with `manage.py addsite {domain}`")
        try:
            import_files(site, kind, files, say=self.stdout.write, progress=self.stderr._out, rollup=not no_rollup)
        except Refused as e:
            raise CommandError(str(e)) from None
