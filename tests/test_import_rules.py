"""The layout's dependency rules (docs/layout.md) are import-linter contracts in
pyproject.toml, checked from the import graph (function-level imports included):

    store/      imports nothing else of Tally
    ingest/     never imports the read side (queries) or the rollups
    queries/    never imports what writes: ingest, rollups, reports, api, tasks
    counts/     (shared by rollups and queries) imports neither of them
    dashboard/  reads through analytics.queries and analytics.models; besides them it may
                take the Redis client (store.connection), a site's settings (sites) and
                the calendar helpers (periods)
and no import circle in analytics/, between its parts or between a part's modules.
.ci/run runs `lint-imports` too; this test makes `make test` hold them as well."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_layout_contracts_hold():
    run = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert ", 0 broken" in run.stdout
