"""Cut a torn transaction off the end of an append-only file before a server loads it.

Why: a server killed in the middle of writing a MULTI/EXEC block to its AOF leaves the
block torn at the file's end, and every Lua call that writes more than once is such a
block (Tally's ingest call is one). Redis's loader, up to 8.2 at least, cuts only the
torn command: it keeps the MULTI and the complete commands before the tear in the file,
starts, and appends after them. On the next start those commands run inside the next
transaction: half of a call applied. Found by tests/test_chaos.py on Redis 8.2.3: an
ingest call's exactly-once mark (its first write) kept without its counts, so its replay
counted nothing (a batch lost), and visitor ids handed out twice. Valkey's loader cuts the
whole block (valkey-io/valkey#4342, in Valkey 9.1, the embedded default). Cutting it here,
before any server reads the file, gives every server the same behaviour: a call torn by a
crash is not in the file at all, as if it had never run; its client got no answer (the
server answers after writing), so it spooled the call and replays it.
"""

import mmap
import os
from pathlib import Path

MULTI = b"*1\r\n$5\r\nMULTI\r\n"


def repair_dir(data_dir: Path) -> int:
    """repair() the file a server started with `--dir data_dir` will append to: what `make
    run` and the test servers do before each start. Returns the bytes cut."""
    return repair(append_file(data_dir))


def append_file(data_dir: Path) -> Path | None:
    """The file a server with `--dir data_dir` appends to: the manifest's last incremental
    file (Redis 7+, Valkey), else the single file of Redis 6.2; None when there is none."""
    manifest = data_dir / "appendonlydir" / "appendonly.aof.manifest"
    if manifest.exists():
        lines = [line.split() for line in manifest.read_text().splitlines()]
        increments = [words[1] for words in lines if dict(zip(words[::2], words[1::2])).get("type") == "i"]
        return manifest.parent / increments[-1] if increments else None
    single = data_dir / "appendonly.aof"
    return single if single.exists() else None


def repair(path: Path | None) -> int:
    """Truncate `path` before a MULTI that has no EXEC after it; returns the bytes cut."""
    if path is None or not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "r+b") as file:
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            size = len(data)
            at = data.rfind(MULTI)
            while at != -1:
                state = _transaction(data, at + len(MULTI))
                if state == "closed":
                    return 0
                if state == "open":
                    break
                at = data.rfind(MULTI, 0, at)  # ("bad": those bytes sat inside a value)
        if at == -1:
            return 0
        file.truncate(at)
        file.flush()
        os.fsync(file.fileno())
        return size - at


def _transaction(data, at: int) -> str:
    """Read commands from `at`: "closed" at an EXEC, "open" when the file
    ends first (whole commands or a torn one), "bad" when the bytes are not commands."""
    size = len(data)
    while at < size:
        count, at = _header(data, at, b"*")
        if isinstance(count, str):
            return count
        name = b""
        for argument in range(count):
            length, at = _header(data, at, b"$")
            if isinstance(length, str):
                return length
            if argument == 0:
                name = bytes(data[at : at + length]).upper()
            at += length + 2
            if at > size:
                return "open"
        if name == b"EXEC":
            return "closed"
    return "open"


def _header(data, at: int, marker: bytes) -> tuple[int | str, int]:
    """The number on a `*N` or `$N` line at `at` and where the line ends; "open" instead of
    the number when the file ends first, "bad" when the line is not one."""
    if at >= len(data):
        return "open", at
    if data[at : at + 1] != marker:
        return "bad", at
    line_end = data.find(b"\r\n", at)
    if line_end == -1:
        return "open", at
    try:
        return int(data[at + 1 : line_end]), line_end + 2
    except ValueError:
        return "bad", at
