"""The second User-Agent list (issue 37, item 3): monperrus/crawler-user-agents, vendored in
analytics/ingest/data/crawler-user-agents/. It catches bots crawlerdetect misses, matches no
person's browser, and refreshes only from a file that passes its checks."""

import json
import re

import pytest

from analytics.ingest import crawlers

pytestmark = pytest.mark.one_leg  # (no server involved)

# From Matomo device-detector's bots.yml: crawlerdetect 0.4.2 misses each of them.
MISSED_BY_CRAWLERDETECT = [
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amzn-User/0.1) Chrome/119.0.6045.214 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36; Devin/1.0; +devin.ai",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/132.0.0.0 Safari/537.36; Manus-User/1.0",
    "Google-NotebookLM",
    "meta-externalagent/1.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/132.0.0.0 Safari/537.36 SecurityHeaders",
    "Mozilla/5.0 (compatible; Detectify)",
    "Mozilla/5.0 (Windows NT 6.3; WOW64; Trident/7.0; rv:11.0; Catchpoint) like Gecko",
    "Blackbox Exporter/0.24.0",
    "Overcast/1.0 Podcast Sync (123 subscribers; feed-id=456789; +http://overcast.fm/)",
    "Valve/Steam HTTP Client 1.0 (SteamChatURLLookup)",
]


def browsers() -> list[str]:
    lines = crawlers.BROWSERS.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("agent", MISSED_BY_CRAWLERDETECT)
def test_it_lists_bots_crawlerdetect_misses(agent):
    assert crawlers.listed(agent)


def test_it_lists_no_browser_of_people():
    assert len(browsers()) >= 40
    assert [agent for agent in browsers() if crawlers.listed(agent)] == []


def test_each_pattern_left_out_is_upstream_and_matches_a_browser():
    patterns = crawlers._patterns(crawlers.LIST.read_text(encoding="utf-8"))
    assert set(crawlers.EXCLUDED) <= set(patterns)
    assert [p for p in crawlers.EXCLUDED if not any(re.search(p, agent) for agent in browsers())] == []


def test_every_example_of_a_pattern_left_in_is_listed():
    """The one alternation answers as the patterns one by one would (crawlers._compile groups them)."""
    entries = json.loads(crawlers.LIST.read_text(encoding="utf-8"))
    examples = [i for e in entries if e["pattern"] not in crawlers.EXCLUDED for i in e["instances"]]
    assert len(examples) > 2000
    assert [i for i in examples if not crawlers.listed(i)] == []


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """The vendored list, copied where refresh() may write; the cached pattern follows it."""
    target = tmp_path / "crawler-user-agents.json"
    target.write_text(crawlers.LIST.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(crawlers, "LIST", target)
    crawlers._pattern.cache_clear()
    yield target
    crawlers._pattern.cache_clear()


def entries(target):
    return json.loads(target.read_text(encoding="utf-8"))


def test_refresh_takes_a_good_list(copy):
    fresh = entries(copy)[10:] + [{"pattern": "TallyTestBot", "instances": ["TallyTestBot/1.0"]}]
    assert not crawlers.listed("TallyTestBot/1.0")
    summary = crawlers.refresh(json.dumps(fresh))
    assert summary == "crawler-user-agents.json: 1489 patterns (1 new, 10 gone, 14 left out as browsers'); commit it"
    assert entries(copy) == fresh and crawlers.listed("TallyTestBot/1.0")


@pytest.mark.parametrize(
    "broken, why",
    [
        (lambda old: old + [{"pattern": "Broken(Bot", "instances": []}], "does not compile"),
        (lambda old: old + [{"pattern": "(?i)shoutbot", "instances": []}], "does not compile"),
        (lambda old: old[:1100], "1100 patterns where the copy has 1498"),
        (lambda old: old + [{"pattern": "Chrome\\/", "instances": []}], "people's browsers"),
        (lambda old: [{"pattern": "x"}] * 1498, "people's browsers"),
    ],
    ids=["a bad pattern", "a flag only a lone pattern may have", "a short list", "a browser's pattern", "junk"],
)
def test_refresh_refuses_a_broken_list_and_keeps_the_copy(copy, broken, why):
    before = copy.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match=why):
        crawlers.refresh(json.dumps(broken(entries(copy))))
    assert copy.read_text(encoding="utf-8") == before


@pytest.mark.parametrize("text", ["<html>rate limited</html>", "{}", '[{"name": "x"}]'])
def test_refresh_refuses_what_is_not_a_list(copy, text):
    before = copy.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="not a crawler-user-agents list"):
        crawlers.refresh(text)
    assert copy.read_text(encoding="utf-8") == before
