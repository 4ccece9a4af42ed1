"""Why an event was not counted, as ingest records it and readers show it.

Every event that reaches a site but is not counted is counted here instead, by reason, in
the day's `dropped` hash (store/keys.py) and, once the day is rolled up, in its
DailyMetrics row: an owner sees the filters working, and which one to switch off if it
misfires (the dashboard's "Not counted" line, the read API's /stats/dropped).
"""

USER_AGENT = "user-agent"  # a crawler's User-Agent (crawlerdetect, crawler-user-agents)
DATACENTER = "datacenter"  # from a cloud or hosting provider's address
REFERRER_SPAM = "referrer-spam"  # from a known referrer spammer
PATTERN = "pattern"  # a visitor past a rate no person reaches (flagged for the day)
EXCLUSION = "exclusion"  # the site's own exclusions: an address, a path, a host

REASONS = (USER_AGENT, DATACENTER, REFERRER_SPAM, PATTERN, EXCLUSION)

LABELS = {
    USER_AGENT: "bots by user agent",
    DATACENTER: "data-centre addresses",
    REFERRER_SPAM: "referrer spam",
    PATTERN: "past an inhuman rate",
    EXCLUSION: "your exclusions",
}


def reason_of(bot: bool | str) -> str | None:
    """A hit's `bot` value as a reason: True (its User-Agent, as before reasons) or a reason."""
    if not bot:
        return None
    return USER_AGENT if bot is True else str(bot)
