"""The JSON API: ingestion, stats, dedup, reports and the OpenAPI document, with the
helpers every endpoint shares (http.py: errors, auth, CORS; params.py: query checks)."""
