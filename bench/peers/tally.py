"""Tally as the peers section's engine (issue 38): the stream through the HTTP batch API of
a server started as `make run` starts it, and the dashboard's questions through the read
API, answered in this process (Django's test client: server time, no network), in the
shapes truth.py gives.
"""

import threading
import time
from collections.abc import Iterable
from datetime import date

import orjson

PROPERTIES = {  # the peers' dimension names -> the read API's `property`
    "page": "page",
    "entry_page": "entry_page",
    "exit_page": "exit_page",
    "source": "source",
    "country": "country",
    "browser": "browser",
    "os": "os",
    "device": "device",
    "goal": "goal",
    "prop:plan": "event:props:plan",
}


class TallyPeer:
    def __init__(self, base_url: str, key: str, domain: str):
        from django.test import Client

        self.base_url, self.key, self.domain = base_url, key, domain
        self.client = Client()
        self.estimate = False  # whether the last answer said it had an estimate in it

    def load(self, batches: Iterable[list[dict]], clients: int = 2) -> float:
        """Post every batch over HTTP from `clients` threads; seconds it took."""
        import http.client
        from urllib.parse import urlsplit

        bodies = [orjson.dumps(batch) for batch in batches]
        host = urlsplit(self.base_url)
        errors: list[str] = []

        def post(share: list[bytes]):
            connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
            for body in share:
                connection.request(
                    "POST",
                    "/api/v1/events",
                    body,
                    {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
                )
                answer = connection.getresponse()
                text = answer.read()
                if answer.status != 200 or orjson.loads(text)["rejected"]:
                    errors.append(text[:300].decode(errors="replace"))
            connection.close()

        threads = [threading.Thread(target=post, args=(bodies[n::clients],)) for n in range(clients)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise RuntimeError(f"{len(errors)} batches refused, e.g. {errors[0]}")
        return time.perf_counter() - start

    def _get(self, endpoint: str, start: date, end: date, **params) -> dict:
        answer = self.client.get(
            f"/api/v1/stats/{endpoint}",
            {"site": self.domain, "from": start.isoformat(), "to": end.isoformat(), **params},
            HTTP_AUTHORIZATION=f"Bearer {self.key}",
        )
        if answer.status_code != 200:
            raise RuntimeError(f"{endpoint} {params}: {answer.status_code} {answer.content[:300]!r}")
        found = answer.json()
        self.estimate = bool(found.get("estimate")) or _any_estimate(found.get("results"))  # (what Tally said)
        return found

    def aggregate(self, start: date, end: date, filters=()) -> dict:
        metrics = "visitors,visits,pageviews,bounce_rate,visit_duration"
        found = self._get("aggregate", start, end, metrics=metrics, **_filters(filters))["results"]
        return {metric: found[metric]["value"] for metric in metrics.split(",")}

    def timeseries(self, start: date, end: date, filters=()) -> list[tuple]:
        rows = self._get("timeseries", start, end, interval="day", metrics="visitors", **_filters(filters))["results"]
        return [(date.fromisoformat(row["date"]), row["visitors"]) for row in rows]

    def breakdown(self, dimension: str, start: date, end: date, filters=(), limit: int = 10) -> list[tuple]:
        prop = PROPERTIES[dimension]
        rows = self._get("breakdown", start, end, property=prop, limit=limit, **_filters(filters))["results"]
        key = prop.rsplit(":", 1)[-1]
        metric = "visits" if dimension == "exit_page" else "visitors"  # (Tally counts exits by visit only)
        return [(row[key], row[metric]) for row in rows]

    def retention(self, start: date, end: date) -> list[tuple]:
        periods = min((end - start).days, 30)
        cohorts = self._get("retention", start, end, unit="day", periods=periods)["cohorts"]
        rows = [(date.fromisoformat(c["cohort"]), c["size"], c["retained"]) for c in cohorts]
        return [(day, size, kept[: (end - day).days + 1]) for day, size, kept in rows]  # (days after `end`: not asked)

    def funnel(self, steps, start: date, end: date) -> list[int]:
        """The funnel of these steps, saved on the site by funnel_of() (Tally asks by name)."""
        return [step["visitors"] for step in self._get("funnel", start, end, funnel=FUNNEL_NAME)["steps"]]

    def floor(self, start: date, end: date) -> list:
        """A breakdown of a property no event has: the read API's whole way (auth, the
        parameters, the runner, the stored days, the JSON) with nothing to count."""
        return self._get("breakdown", start, end, property="event:props:peers-floor")["results"]


FUNNEL_NAME = "peers"


def prepare_site(domain: str, steps) -> str:
    """A fresh site for the stream, with the goal and the funnel the questions name; its key."""
    from analytics.models import Funnel, Goal, Site

    Site.objects.filter(domain=domain).delete()
    site = Site.objects.create(domain=domain, timezone="UTC")
    Goal.objects.create(site=site, name="Signup", event_name="Signup")
    lines = [value if kind == "page" else f"event:{value}" for kind, value in steps]
    Funnel.objects.create(site=site, name=FUNNEL_NAME, steps="\n".join(lines))
    return site.create_api_key("peers")


def _any_estimate(results) -> bool:
    """Does an answer's row or metric say it is an estimate (its "estimate" key)?"""
    if isinstance(results, dict):
        return any(isinstance(v, dict) and v.get("estimate") for v in results.values())
    return isinstance(results, list) and any(isinstance(row, dict) and row.get("estimate") for row in results)


def _filters(filters) -> dict:
    return {"filters": ";".join(f"{name}=={value}" for name, value in filters)} if filters else {}
