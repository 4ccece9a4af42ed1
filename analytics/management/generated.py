"""What the commands that write a generated docs page share (keys_doc, env_doc): the page
is rendered from the code, `--check` fails when the file differs (tests/test_docs.py),
otherwise it is written."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

DOCS = Path(settings.BASE_DIR) / "docs"


def first_sentence(doc: str | None) -> str:
    """A docstring's or comment's first sentence, on one line."""
    text = " ".join((doc or "").split())
    cut = text.find(". ")
    return text[: cut + 1] if cut >= 0 else text


class GeneratedPage(BaseCommand):
    """A command that writes docs/<page> from render(); --check only compares."""

    page = ""  # the file under docs/

    def render(self) -> str:
        raise NotImplementedError

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true")

    def handle(self, *args, check=False, **options):
        path, text = DOCS / self.page, self.render()
        name = self.__module__.rpartition(".")[2]
        if check:
            if not path.exists() or path.read_text() != text:
                raise CommandError(f"docs/{self.page} is out of date: run manage.py {name}")
            return
        path.write_text(text)
        self.stdout.write(f"wrote {path}")
