"""The ingest script's cost against an earlier commit's, in one run: a change to the
script or its arguments must show it is no slower (issue 33: µs an event in 1,000-event
calls, within noise of the code before).

    .venv/bin/python bench/script_against.py REV [--rounds N]

Checks REV out in a temporary git worktree, then runs bench/run.py's script_cost (Redis's
own time per EVALSHA, from INFO commandstats, for calls of 1, 4, 16 and 1,000 events)
in each tree in turn, N rounds, each in a fresh process against a fresh server, and prints
the medians side by side. Alternating, not one tree then the other: this machine's speed
drifts by several per cent over minutes (other work, thermal), and a ratio of medians
taken in turns cancels most of it."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def measure(tree: Path) -> dict[str, float]:
    """script_cost in `tree` (run in a child process whose cwd and imports are that tree)."""
    code = f"""
import json, os, sys
os.chdir({str(tree)!r}); sys.path[:0] = [{str(tree)!r}, {str(tree / "bench")!r}]
sys.argv = ["run.py"]
os.environ["BENCH_ONLY"] = "none"
import run as B
with B.RedisServer() as server:
    import redis
    os.environ["REDIS_URL"] = server.url
    r = redis.Redis.from_url(server.url)
    site, _ = B.setup_site()
    from analytics.store import connection
    connection.reset()
    _, _, _, bodies = B.engine(r, site, 50)
    r.execute_command("FLUSHALL", "SYNC")
    print(json.dumps({{size: float(per_event) for size, _, per_event, _ in B.script_cost(r, site, bodies)}}))
"""
    with tempfile.TemporaryDirectory(prefix="script-against-") as var:
        env = {**os.environ, "TALLY_VAR_DIR": var}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the commit to compare with (e.g. main~3)")
    parser.add_argument("--rounds", type=int, default=4)
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="script-base-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), options.rev], check=True)
    try:
        (base / ".venv").symlink_to(ROOT / ".venv")
        runs: dict[str, list[dict]] = {"base": [], "here": []}
        for n in range(options.rounds):
            for name, tree in (("base", base), ("here", ROOT)) if n % 2 == 0 else (("here", ROOT), ("base", base)):
                runs[name].append(measure(tree))
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", options.rev], capture_output=True, text=True
        )
        print(f"Ingest script, µs an event (Redis's time per EVALSHA), medians of {options.rounds} alternating runs")
        print(f"| events a call | {rev.stdout.strip()} | this tree | this ÷ {rev.stdout.strip()} |")
        print("|---|---|---|---|")
        for size in runs["base"][0]:
            before = statistics.median(run[size] for run in runs["base"])
            after = statistics.median(run[size] for run in runs["here"])
            print(f"| {size} | {before:.1f} | {after:.1f} | {after / before:.2f} |")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)


if __name__ == "__main__":
    main()
