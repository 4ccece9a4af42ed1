"""The JSON API: ingestion, stats, reports and the OpenAPI document, with the
helpers every endpoint shares (http.py: errors, auth, CORS; params.py: query checks)."""
