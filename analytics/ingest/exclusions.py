"""A site's exclusions (analytics.models.Exclusion) as ingest checks them: an event from
an excluded address or network, on an excluded path pattern, or on an excluded host is
not counted (its answer says so: X-Tally-Dropped: exclusion). The site's rows come with
its cached settings (SiteInfo.exclusions); compiled once per set."""

import ipaddress
from functools import lru_cache

from ..models import page_pattern_regex
from .visit import hostname_of


@lru_cache(maxsize=1024)
def _compiled(exclusions: tuple) -> tuple:
    networks, paths, hosts = [], [], set()
    for kind, value in exclusions:
        if kind == "ip":
            try:
                networks.append(ipaddress.ip_network(value, strict=False))
            except ValueError:
                continue
        elif kind == "path":
            paths.append(page_pattern_regex(value).fullmatch)
        elif kind == "host":
            hosts.add(value)
    return tuple(networks), tuple(paths), frozenset(hosts)


def excluded(exclusions: tuple, ip: str | None, path: str, url: str) -> bool:
    """Is an event from `ip`, on `path` of page `url`, excluded by these rows?"""
    if not exclusions:
        return False
    networks, paths, hosts = _compiled(exclusions)
    if hosts and hostname_of(url) in hosts:
        return True
    if paths and any(match(path) for match in paths):
        return True
    if networks and ip:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return False
        return any(address in network for network in networks)
    return False
