"""Reports: a site's numbers for a period as CSV, Excel or JSON (tables.py), built at once
or, when large, as background jobs behind a fair semaphore (exports.py)."""
