"""The layout's dependency rules, checked from the import graph (every import statement,
function-level ones included), so they stay true as the code grows.

    store/      imports nothing else of Tally
    ingest/     never imports the read side (queries) or the rollups
    queries/    never imports what writes: ingest, rollups, reports, api, tasks
    counts/     (shared by rollups and queries) imports neither of them
    dashboard/  reads through analytics.queries and analytics.models; besides them it may
                take the Redis client (store.connection), a site's settings (sites) and
                the calendar helpers (periods)
and no import circle anywhere in analytics/, between modules or between its parts.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analytics", "dashboard")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(target: str) -> str | None:
    """The project module an import names (the longest known prefix), or None."""
    while target:
        if target in MODULES:
            return target
        target = target.rpartition(".")[0]
    return None


def _imports(name: str, path: Path) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod when there is one
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _resolve(target)
            if resolved and resolved != name:
                found.add(resolved)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    """analytics.queries.pages -> analytics.queries; analytics.sites -> analytics.sites."""
    return ".".join(module.split(".")[:2])


def _within(module: str, part: str) -> bool:
    return module == part or module.startswith(part + ".")


def _violations(source: str, allowed=None, forbidden=()) -> list[str]:
    bad = []
    for module, targets in GRAPH.items():
        if not _within(module, source):
            continue
        for target in targets:
            if any(_within(target, f) for f in forbidden):
                bad.append(f"{module} -> {target}")
            if allowed is not None and not any(_within(target, a) for a in allowed):
                bad.append(f"{module} -> {target}")
    return sorted(bad)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_it_sees_the_layout():
    for part in ("store", "counts", "ingest", "rollups", "queries", "dedup", "reports", "api"):
        assert f"analytics.{part}" in MODULES, part
    assert "analytics.counts.days" in GRAPH["analytics.queries.days"]
    assert "analytics.counts.days" in GRAPH["analytics.rollups.jobs"]


def test_store_imports_nothing_else_of_tally():
    assert _violations("analytics.store", allowed=("analytics.store",)) == []


def test_ingestion_never_imports_the_read_side():
    assert _violations("analytics.ingest", forbidden=("analytics.queries", "analytics.rollups", "analytics.api")) == []


def test_queries_never_import_what_writes():
    writers = ("analytics.ingest", "analytics.rollups", "analytics.reports", "analytics.api", "analytics.tasks")
    assert _violations("analytics.queries", forbidden=writers) == []


def test_counts_import_neither_rollups_nor_queries():
    assert _violations("analytics.counts", forbidden=("analytics.rollups", "analytics.queries")) == []


def test_the_dashboard_reads_through_queries_and_models():
    allowed = ("analytics.queries", "analytics.models", "analytics.sites", "analytics.store.connection", "analytics.periods")
    allowed += ("dashboard", "config")
    assert _violations("dashboard", allowed=allowed) == []


@pytest.mark.parametrize("level", ["modules", "parts"])
def test_there_is_no_import_circle(level):
    graph = {m: t for m, t in GRAPH.items() if m.startswith("analytics")}
    if level == "parts":
        parts: dict[str, set[str]] = {}
        for module, targets in graph.items():
            here = _part(module)
            parts.setdefault(here, set()).update(_part(t) for t in targets if _part(t) != here)
        graph = parts
    assert _cycle(graph) is None


def test_it_finds_a_circle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
