"""Why an event would not be counted, decided at the edge from data held in memory: the
site's exclusions, a crawler's User-Agent, referrer spam, a data centre's address (docs/bots.md).
The single-event and batch endpoints ask it for each event, and `make bench` measures it
(bench/bot_checks_bench.py). A visitor past the site's rate is found later, per batch, in
Redis (patterns.py)."""

from ..dropped import DATACENTER, EXCLUSION, REFERRER_SPAM, USER_AGENT
from ..sites import SiteInfo
from . import exclusions
from .bots import is_bot, referrer_spam
from .datacenters import is_datacenter


class Checks:
    """Why an event from this client would not be counted, site by site (each site has
    its own exclusions and switches): the site's exclusions first (the owner said so),
    then a crawler's User-Agent, referrer spam, a data centre's address (a script on a
    cloud server with a browser's User-Agent). Each check is made once for the event,
    when a site first asks. (A visitor past the site's rate is found later, per batch:
    ingest/patterns.py.)"""

    __slots__ = ("user_agent", "ip", "referrer", "_bot", "_spam", "_datacenter")

    def __init__(self, user_agent: str | None, ip: str | None, referrer: str | None):
        self.user_agent, self.ip, self.referrer = user_agent, ip, referrer
        self._bot: bool | None = None
        self._spam: bool | None = None
        self._datacenter: bool | None = None

    def dropped(self, site: SiteInfo, path: str, url: str) -> str | None:
        if site.exclusions and exclusions.excluded(site.exclusions, self.ip, path, url):
            return EXCLUSION
        if site.drop_crawlers and self.user_agent is not None:
            if self._bot is None:
                self._bot = is_bot(self.user_agent)
            if self._bot:
                return USER_AGENT
        if site.drop_referrer_spam:
            if self._spam is None:
                self._spam = referrer_spam(self.referrer)
            if self._spam:
                return REFERRER_SPAM
        if site.drop_datacenters and self.ip:
            if self._datacenter is None:
                self._datacenter = is_datacenter(self.ip)
            if self._datacenter:
                return DATACENTER
        return None
