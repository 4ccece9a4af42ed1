"""Is this User-Agent on monperrus/crawler-user-agents' list (data/crawler-user-agents/, MIT)?
A second opinion beside crawlerdetect (bots.py): the list names some bots crawlerdetect does
not, mostly AI assistants fetching for a person (Perplexity-User, Amzn-User, Devin), uptime
and security checkers, and services that fetch a shared link.

Every tag counts: a link preview, a feed reader, an image proxy (Gmail's, Slack's) or an AI
assistant may act for a person, but the person never sees the page in a browser that runs
our script, so the hit is not a visit. Only patterns that also match people's own browsers
are left out (EXCLUDED). A new list is checked against real browsers' User-Agents (BROWSERS)
before it replaces the copy (refresh()).

The patterns are regular expressions meant for re.search, case-sensitive, as upstream uses
them. They are joined into one alternation, read and compiled on first use (about 70 ms).
Uncached, a call costs 20 to 45 µs for a browser (80 µs for a long in-app one) and 1 to 50 µs
for a bot, a tenth of crawlerdetect's time; bots.py caches the answer per User-Agent.
"""

import json
import os
import re
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "crawler-user-agents"
LIST = DATA / "crawler-user-agents.json"  # the vendored copy, rewritten by refresh()
BROWSERS = DATA / "browsers.txt"  # people's browsers, none of which a pattern may match
MIN_PATTERNS = 1000  # (1,498 at the vendored commit: a short list is a broken download)
CHANGE = 0.2  # a refresh may change the number of patterns by this fraction at most

# Patterns that match people's browsers, and what they would catch (data/crawler-user-agents/README.md).
EXCLUDED = {
    "WhatsApp": "WhatsApp's in-app browser (crawlerdetect already flags its link preview fetcher)",
    "Viber": "Viber's in-app browser (`... Mobile Safari/537.36 Viber/27.4.0.0`)",
    "MetaIAB Facebook": "Facebook's in-app browser since late 2025 (`... Safari/604.1 MetaIAB Facebook`)",
    r"AP3A\.240617\.008": "a build number of OPPO, OnePlus, realme, Infinix and Xiaomi phones, in all their web views",
    "Sogou": "Sogou's mobile browser (`SogouMobileBrowser/5.x`); crawlerdetect knows Sogou's spiders",
    "Sonic": "ViewSonic devices and Slack's desktop app (`Sonic Slack_SSB`)",
    "Butterfly": "HTC Butterfly phones",
    "Fever": "Android devices named Fever",
    "Expanse": "Android devices named Expanse",
    r"008\/": "model numbers ending in 008 (`DESAY TS1008/1.0`)",
    "Fluid": "Fluid, a macOS browser for single sites",
    r"Code\/1\.": "Visual Studio Code's own web views",
    r"Trae\/": "the Trae editor's own web views",
    r"Notion\/": "Notion's desktop app, which shows embedded pages",
}


def listed(user_agent: str) -> bool:
    return _pattern().search(user_agent) is not None


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    return _compile(_patterns(LIST.read_text(encoding="utf-8")))


def _compile(patterns: list[str]) -> re.Pattern[str]:
    """The patterns left in, as one alternation. Python's re tries each alternative at each
    character of the User-Agent: 1,480 side by side made a browser's miss cost 400 µs. Those
    that start with a plain character are grouped under it (`G(?:ooglebot|PTBot|...)`), so
    that most characters are dismissed after one comparison per distinct first character."""
    groups: dict[str, list[str]] = {}
    others = []
    for p in patterns:
        if p in EXCLUDED:
            continue
        if p[:1].isalnum() and p[1:2] not in ("?", "*", "+", "{") and "|" not in p:  # (p == p[0] + p[1:])
            groups.setdefault(p[0], []).append(p[1:])
        else:
            others.append(f"(?:{p})")
    return re.compile("|".join([f"{c}(?:{'|'.join(rest)})" for c, rest in groups.items()] + others))


def _patterns(text: str) -> list[str]:
    try:
        patterns = [entry["pattern"] for entry in json.loads(text)]
    except (TypeError, KeyError):  # (not a list, or not of objects with a pattern)
        patterns = []
    if not patterns or not all(isinstance(p, str) for p in patterns):
        raise ValueError("not a list of {pattern: ...} entries")
    return patterns


def refresh(text: str) -> str:
    """Replace the vendored list with `text` (a downloaded crawler-user-agents.json) if it
    is one: every pattern compiles, there are at least MIN_PATTERNS and no more than CHANGE
    more or fewer than now, and none matches a browser in BROWSERS. Returns a one-line
    summary; raises ValueError, leaving the copy as it was, otherwise."""
    try:
        new = _patterns(text)
        old = _patterns(LIST.read_text(encoding="utf-8"))
        compiled = {p: re.compile(p) for p in new}
        _compile(new)  # (alone or joined: "(?i)" compiles alone only)
    except re.error as error:
        at = error.pos or 0  # (error.pattern may be the whole alternation: quote around the fault)
        where = str(error.pattern)[max(at - 30, 0) : at + 30]
        raise ValueError(f"a pattern does not compile: {error.msg} in {where!r}") from None
    except ValueError as error:  # (json.JSONDecodeError is one)
        raise ValueError(f"not a crawler-user-agents list: {error}") from None
    if len(new) < MIN_PATTERNS or abs(len(new) - len(old)) > CHANGE * len(old):
        raise ValueError(f"{len(new)} patterns where the copy has {len(old)}: a broken download?")
    browsers = [line for line in BROWSERS.read_text(encoding="utf-8").splitlines() if line and line[0] != "#"]
    hits = [(p, ua) for p, rx in compiled.items() if p not in EXCLUDED for ua in browsers if rx.search(ua)]
    if hits:
        raise ValueError(f"{len(hits)} matches on people's browsers (EXCLUDED is for those), e.g. {hits[0]}")
    part = LIST.with_suffix(".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, LIST)  # (never a half-written list)
    _pattern.cache_clear()
    added, gone = len(set(new) - set(old)), len(set(old) - set(new))
    left_out = len(EXCLUDED.keys() & set(new))
    return f"{LIST.name}: {len(new)} patterns ({added} new, {gone} gone, {left_out} left out as browsers'); commit it"
