"""Recommendations: each known visitor's Bloom filter of the pages and items they have
seen, and the site's top pages they have not.

An app beside the engine (analytics/), which never imports it: the engine calls the hooks
this app registers in apps.py (analytics/hooks.py names them), and the app reads and
writes through the engine's store, sites and queries like any other part.

    bloom.py      scalable Bloom filters, all of a site's held to its memory budget
    hooks.py      what the filters do as the engine reads a site, counts pageviews with a
                  user id, rolls up a site's days, and unlinks a key
    queries.py    top pages a visitor has not seen, the site's filter stats (the dashboard reads these)
    api.py        POST /api/v1/seen, POST /api/v1/unseen, GET /api/v1/recommendations (urls.py)
    admin.py      the Bloom settings and the filters now, on the admin's site page
    management/commands/recount_bloom.py
"""
