"""Where a visit came from: analytics.sources (pure functions, no Redis)."""

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.sources import CHANNELS, DATA, DIRECT, MAX_TAG, Acquisition, acquisition

PAGE = "https://example.com/pricing"
SITE = "example.com"


def from_referrer(referrer, page=PAGE, site=SITE):
    return acquisition(page, referrer, site)


@pytest.mark.parametrize(
    "referrer, host",
    [
        ("https://www.google.com/", "google.com"),
        ("https://google.com/search?q=tally", "google.com"),
        ("https://www.google.co.uk/", "google.co.uk"),
        ("http://google.de", "google.de"),
        ("https://www.google.com.au/url?sa=t", "google.com.au"),
        ("HTTPS://WWW.Google.COM:443/", "google.com"),
    ],
)
def test_it_groups_google_as_organic_search(referrer, host):
    got = from_referrer(referrer)
    assert (got.referrer, got.source, got.channel) == (host, "Google", "Organic Search")


@pytest.mark.parametrize(
    "referrer, source",
    [
        ("https://www.bing.com/", "Bing"),
        ("https://duckduckgo.com/", "DuckDuckGo"),
        ("https://de.search.yahoo.com/search?p=x", "Yahoo!"),
        ("https://yandex.ru/", "Yandex"),
    ],
)
def test_it_knows_other_search_engines(referrer, source):
    got = from_referrer(referrer)
    assert (got.source, got.channel) == (source, "Organic Search")


@pytest.mark.parametrize(
    "referrer, source",
    [
        ("https://news.ycombinator.com/item?id=1", "Hacker News"),
        ("https://old.reddit.com/r/django/", "Reddit"),
        ("https://l.facebook.com/l.php?u=x", "Facebook"),
        ("https://www.facebook.com/", "Facebook"),  # also in Matomo's search engines
        ("https://t.co/abc", "Twitter"),
        ("https://x.com/someone", "Twitter"),
        ("https://www.linkedin.com/feed/", "LinkedIn"),
    ],
)
def test_it_groups_social_networks(referrer, source):
    got = from_referrer(referrer)
    assert (got.source, got.channel) == (source, "Organic Social")


@pytest.mark.parametrize(
    "referrer, source",
    [
        ("https://chatgpt.com/", "ChatGPT"),
        ("https://chat.openai.com/c/123", "ChatGPT"),
        ("https://www.perplexity.ai/search/x", "Perplexity"),  # also in Matomo's search engines
        ("https://gemini.google.com/app", "Gemini"),  # not Google the search engine
        ("https://claude.ai/", "Claude"),
        ("https://phind.com/", "Phind"),  # ours, not Matomo's
        ("https://x.com/i/grok?conversation=1", "Grok"),  # a Matomo entry with a path
    ],
)
def test_it_knows_ai_assistants(referrer, source):
    got = from_referrer(referrer)
    assert (got.source, got.channel) == (source, "AI Assistants")


@pytest.mark.parametrize(
    "referrer",
    [
        "https://example.com/blog/",
        "https://www.example.com/",
        "https://EXAMPLE.com:8443/x",
        "https://blog.example.com/post",
        "http://a.b.example.com",
    ],
)
def test_it_counts_the_sites_own_pages_and_subdomains_as_direct(referrer):
    assert from_referrer(referrer, site="www.example.com") == from_referrer(None)
    assert from_referrer(referrer).channel == "Direct"


def test_it_does_not_count_a_lookalike_host_as_the_site():
    got = from_referrer("https://notexample.com/")
    assert (got.referrer, got.channel) == ("notexample.com", "Referral")


def test_it_is_direct_with_no_referrer_and_no_tags():
    assert from_referrer(None) == Acquisition(DIRECT, DIRECT, "Direct", None, None, None, None, None)
    assert from_referrer("") == from_referrer(None)


@pytest.mark.parametrize(
    "referrer",
    ["https://docs.google.com/document/d/1", "https://sites.google.com/view/x", "https://developer.duckduckgo.com/"],
)
def test_it_counts_a_search_engines_other_subdomains_as_referrals(referrer):
    got = from_referrer(referrer)
    assert (got.source, got.channel) == (got.referrer, "Referral")


def test_it_knows_the_subdomains_matomo_lists_for_search():
    assert from_referrer("https://images.google.de/").source == "Google Images"
    assert from_referrer("https://scholar.google.com/").source == "Google Scholar"
    assert from_referrer("https://m.bing.com/").source == "Bing"


def test_it_keeps_an_unknown_referrer_as_its_host():
    got = from_referrer("https://www.someones-blog.net:8080/2024/05/post?x=1#top")
    assert (got.referrer, got.source, got.channel) == ("someones-blog.net", "someones-blog.net", "Referral")


def test_it_takes_utm_tags_from_the_page_url():
    page = "https://example.com/?utm_source=newsletter&utm_medium=email&utm_campaign=may&utm_term=t&utm_content=c#x"
    got = from_referrer(None, page=page)
    assert got == Acquisition(DIRECT, "newsletter", "Email", "newsletter", "email", "may", "t", "c")


def test_it_lets_utm_source_name_the_source_over_the_referrer():
    got = from_referrer(
        "https://www.google.com/", page="https://example.com/?utm_source=Spring+Mailing&utm_medium=e-mail"
    )
    assert (got.referrer, got.source, got.channel) == ("google.com", "Spring Mailing", "Email")


def test_it_reads_ref_and_source_as_utm_source():
    assert from_referrer(None, page="https://example.com/?ref=producthunt").utm_source == "producthunt"
    assert from_referrer(None, page="https://example.com/?ref=producthunt").channel == "Referral"
    assert from_referrer(None, page="https://example.com/?ref=a&source=b").utm_source == "b"
    assert from_referrer(None, page="https://example.com/?ref=a&source=b&utm_source=c").utm_source == "c"


@pytest.mark.parametrize(
    "medium",
    ["cpc", "PPC", "paid", "paidsearch", "paid_social", "display", "banner", "cpm", "cpa", "affiliate", "paid-video"],
)
def test_it_counts_paid_media_as_paid(medium):
    got = from_referrer("https://www.google.com/", page=f"https://example.com/?utm_source=google&utm_medium={medium}")
    assert (got.source, got.channel) == ("Google", "Paid")  # (a known source tag shows as the list spells it)


@pytest.mark.parametrize(
    "query, channel",
    [
        ("utm_source=newsletter", "Email"),
        ("utm_source=x&utm_medium=organic", "Organic Search"),
        ("utm_source=x&utm_medium=social", "Organic Social"),
        ("utm_source=x&utm_medium=sm", "Organic Social"),
        ("utm_source=x&utm_medium=referral", "Referral"),
        ("utm_source=x", "Referral"),
        ("utm_medium=referral", "Referral"),
        ("utm_campaign=launch", "Direct"),
        ("utm_source=chatgpt.com", "AI Assistants"),  # ChatGPT tags its links so
        ("utm_source=google", "Organic Search"),
        ("utm_source=Facebook", "Organic Social"),
    ],
)
def test_it_takes_the_channel_from_the_tags(query, channel):
    assert from_referrer(None, page=f"https://example.com/?{query}").channel == channel


@pytest.mark.parametrize(
    "referrer, source",
    [
        ("https://mail.google.com/mail/u/0/", "Gmail"),
        ("https://outlook.live.com/mail/0/", "Outlook.com"),
        ("https://mail.yahoo.com/d/folders/1", "Yahoo! Mail"),
        ("https://mail.yandex.ru/", "Yandex Mail"),  # not Yandex the search engine
        ("android-app://com.google.android.gm", "Gmail"),
    ],
)
def test_it_counts_webmail_as_email(referrer, source):
    got = from_referrer(referrer)
    assert (got.source, got.channel) == (source, "Email")


def test_it_names_android_apps_by_package():
    known = from_referrer("android-app://com.google.android.googlequicksearchbox/https/www.google.com")
    assert (known.referrer, known.source, known.channel) == (
        "com.google.android.googlequicksearchbox",
        "Google",
        "Organic Search",
    )
    unknown = from_referrer("android-app://com.Example.Reader/")
    assert (unknown.referrer, unknown.source, unknown.channel) == (
        "com.example.reader",
        "com.example.reader",
        "Referral",
    )


def test_it_decodes_utm_values():
    page = "https://example.com/?utm_campaign=Spring%20Sale+2024&utm_source=%E2%9C%89%20mail&utm_term=%zz&utm_content=caf%C3%A9"
    got = from_referrer(None, page=page)
    assert (got.utm_campaign, got.utm_source, got.utm_term, got.utm_content) == (
        "Spring Sale 2024",
        "✉ mail",
        "%zz",
        "café",
    )


def test_it_strips_caps_and_drops_empty_utm_values():
    got = from_referrer(
        None, page=f"https://example.com/?utm_source=+%20+&utm_medium=&utm_campaign=%20{'x' * 500}&utm_term"
    )
    assert (got.utm_source, got.utm_medium, got.utm_term) == (None, None, None)
    assert got.utm_campaign == "x" * MAX_TAG
    assert from_referrer(None, page="https://example.com/?utm_source=&utm_source=second").utm_source == "second"


@pytest.mark.parametrize(
    "referrer",
    [
        "not a url",
        "javascript:alert(1)",
        "ftp://example.org/file",
        "https://",
        "https:///path",
        "http://exa mple.com/",
        "https://user:pass@evil.com/",
        "https://[::1",
        "https://example.com:port/",
        "http://" + "a" * 300 + ".com/",
        "https://" + "x." * 50_000 + "com/",
        "https://" + "?" * 100_000,
        "\x00\ud800\n",
    ],
)
def test_it_treats_garbage_referrers_as_none(referrer):
    assert from_referrer(referrer) == from_referrer(None)


def test_it_reads_a_huge_referrer_by_its_host():
    assert from_referrer("https://www.google.com/" + "a/?#" * 100_000).source == "Google"


def test_it_knows_every_host_in_the_lists():
    """Every host of every list, placeholders filled in, comes out under its own name."""
    ours = yaml.safe_load((DATA / "Tally.yml").read_text())
    renames = ours["names"]
    lists = [
        ours["email"],
        ours["ai"],
        yaml.safe_load((DATA / "AIAssistants.yml").read_text()),
        yaml.safe_load((DATA / "Socials.yml").read_text()),
    ]
    engines = yaml.safe_load((DATA / "SearchEngines.yml").read_text())
    lists.append({name: [url for config in configs for url in config["urls"]] for name, configs in engines.items()})
    checked = 0
    for groups in lists:
        for name, urls in groups.items():
            for url in urls:
                if url.startswith("android-app//"):
                    continue
                for filled in {url.replace("{}", "de"), url.replace("{}", "co.uk" if url.endswith("{}") else "fr")}:
                    got = from_referrer(f"https://{filled}", site="tally.invalid")
                    assert got.source == renames.get(name, name), filled
                    checked += 1
    assert checked > 900


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(), st.one_of(st.none(), st.text()), st.text())
def test_it_never_raises_on_any_text(page_url, referrer, site_host):
    check(acquisition(page_url, referrer, site_host))


urlish = st.text(alphabet=st.sampled_from("aw.:/?#&=%+@[]- 0Eé_"), max_size=40)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(urlish, urlish, urlish, st.sampled_from(["http://", "https://", "android-app://", "HTTP://", ""]))
def test_it_never_raises_on_url_like_text(query, host, site_host, scheme):
    check(acquisition(f"https://example.com/?{query}", f"{scheme}{host}", site_host))


def check(got):
    assert got.channel in CHANNELS
    assert isinstance(got.referrer, str) and got.referrer
    assert isinstance(got.source, str) and got.source
    for value in (got.utm_source, got.utm_medium, got.utm_campaign, got.utm_term, got.utm_content):
        assert value is None or (0 < len(value) <= MAX_TAG and value == value.strip())
