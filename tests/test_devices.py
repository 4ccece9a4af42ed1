"""Browser, OS and device kind from real User-Agents; Plausible's screen-width buckets."""

import pytest

from analytics.ingest.devices import MAX_USER_AGENT, Device, device_of, screen_of

CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
U = "(unknown)"

REAL = [
    (CHROME_WINDOWS, Device("Chrome", "131", "Windows", "10", "Desktop")),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15",
        Device("Safari", "17", "macOS", "10.15", "Desktop"),
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
        Device("Safari", "18", "macOS", "14.6", "Desktop"),
    ),
    (
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 "
            "Mobile/15E148 Safari/604.1"
        ),
        Device("Mobile Safari", "17", "iOS", "17.4", "Mobile"),
    ),
    (
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1"
        ),
        Device("Chrome Mobile iOS", "131", "iOS", "17.5", "Mobile"),
    ),
    (
        (
            "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 "
            "Safari/604.1"
        ),
        Device("Mobile Safari", "16", "iOS", "16.6", "Tablet"),
    ),
    (
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
        Device("Chrome Mobile", "131", "Android", "10", "Mobile"),
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        Device("Chrome", "131", "Android", "13", "Tablet"),
    ),
    (
        "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0",
        Device("Firefox Mobile", "133", "Android", "14", "Mobile"),
    ),
    (
        "Mozilla/5.0 (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0",
        Device("Firefox Mobile", "133", "Android", "14", "Tablet"),
    ),
    (
        (
            "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) Silk/131.3.1 like "
            "Chrome/131.0.6778.200 Safari/537.36"
        ),
        Device("Amazon Silk", "131", "Android", "9", "Tablet"),
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        Device("Firefox", "133", "Linux", U, "Desktop"),
    ),
    (
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 "
            "Edg/131.0.0.0"
        ),
        Device("Edge", "131", "Windows", "10", "Desktop"),
    ),
    (
        (
            "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 "
            "Chrome/121.0.0.0 Mobile Safari/537.36"
        ),
        Device("Samsung Internet", "25", "Android", "14", "Mobile"),
    ),
    (
        "Mozilla/5.0 (Windows NT 6.1; Win64; x64; rv:115.0) Gecko/20100101 Firefox/115.0",
        Device("Firefox", "115", "Windows", "7", "Desktop"),
    ),
    (
        "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; Tablet PC 2.0)",
        Device("IE", "8", "Windows", "7", "Desktop"),
    ),
]
UNKNOWN = Device(U, U, U, U, "Desktop")


@pytest.mark.parametrize("user_agent, expected", REAL, ids=[e.browser + " " + e.os + " " + e.device for _, e in REAL])
def test_it_reads_real_user_agents(user_agent, expected):
    assert device_of(user_agent) == expected


@pytest.mark.parametrize("user_agent", [None, "", "asdf qwerty 123 \x00 \u2603", "Mozilla/5.0 " + "x" * 1988])
def test_it_answers_unknown_for_nothing_garbage_and_junk_padding(user_agent):
    assert device_of(user_agent) == UNKNOWN


def test_it_reads_a_long_user_agent_by_its_beginning():
    padded = CHROME_WINDOWS + " " + "x" * 2000
    assert device_of(padded) == device_of(CHROME_WINDOWS)
    assert device_of(padded[: MAX_USER_AGENT + 1]) is device_of(padded)  # one cache entry for both


def test_it_caches_answers_per_user_agent():
    assert device_of(CHROME_WINDOWS) is device_of("".join(CHROME_WINDOWS))


@pytest.mark.parametrize(
    "width, bucket",
    [
        (None, None),
        (0, None),
        (1, "Mobile"),
        (575, "Mobile"),
        (576, "Tablet"),
        (991, "Tablet"),
        (992, "Laptop"),
        (1439, "Laptop"),
        (1440, "Desktop"),
        (3840, "Desktop"),
    ],
)
def test_it_buckets_screen_widths_like_plausible(width, bucket):
    assert screen_of(width) == bucket


def test_an_unknown_browsers_version_row_is_unknown_not_unknown_twice():
    from analytics.ingest.visit import _device_fields

    fields = dict(part.split("\x1f") for part in _device_fields("asdf qwerty 123").split("\x1e"))
    assert fields["browser_version"] == U and fields["os_version"] == U
    fields = dict(part.split("\x1f") for part in _device_fields(CHROME_WINDOWS).split("\x1e"))
    assert fields["browser_version"] == "Chrome 131" and fields["os_version"] == "Windows 10"
