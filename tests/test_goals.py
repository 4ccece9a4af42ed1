"""manage.py addgoal and the Goal model's rules."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analytics.models import Goal, Site


def test_it_adds_event_and_page_goals(db):
    Site.objects.create(domain="example.com")
    out = io.StringIO()
    call_command("addgoal", "example.com", "--event", "Signup", stdout=out)
    call_command("addgoal", "example.com", "--page", "/docs/**", stdout=out)
    assert [(g.name, g.event_name, g.page_pattern) for g in Goal.objects.all()] == [
        ("Signup", "Signup", ""),
        ("Visit /docs/**", "", "/docs/**"),
    ]
    assert "Added goal 'Signup'" in out.getvalue()


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope.example", "--event", "Signup"], "no site"),
        (["example.com", "--page", "blog/*"], "starts with /"),
    ],
)
def test_it_says_what_is_wrong(db, args, message):
    Site.objects.create(domain="example.com")
    with pytest.raises(CommandError, match=message):
        call_command("addgoal", *args, stdout=io.StringIO())


def test_page_patterns_match_within_and_across_segments():
    goal = Goal(page_pattern="/blog/*")
    assert goal.matches("/blog/a") and not goal.matches("/blog/a/b") and not goal.matches("/blogs")
    assert Goal(page_pattern="/docs/**").matches("/docs/a/b/c")
    assert Goal(page_pattern="/a.b").matches("/a.b") and not Goal(page_pattern="/a.b").matches("/axb")


def test_page_patterns_match_as_the_plain_regex_would_without_its_backtracking():
    """The matcher agrees with the obvious regex (`**` = .*, `*` = [^/]*) on random
    patterns and paths, and a pattern that made that regex backtrack for minutes on a
    long path answers at once (review finding 7)."""
    import random
    import re

    from analytics.models import page_pattern_regex

    rng = random.Random(4)
    for _ in range(3000):
        pattern = "/" + "".join(rng.choice(["a", "b", "/", "*", "**"]) for _ in range(rng.randint(0, 6)))
        obvious = re.compile(".*".join(re.escape(p).replace(r"\*", "[^/]*") for p in pattern.split("**")))
        for _ in range(5):
            path = "/" + "".join(rng.choice("ab/") for _ in range(rng.randint(0, 8)))
            assert page_pattern_regex(pattern).fullmatch(path) == bool(obvious.fullmatch(path)), (pattern, path)
    assert not page_pattern_regex("/**a**a**a**a**b").fullmatch("/" + "a" * 1000)
