"""Lua scripts, one file each (KEYS/ARGV documented at the top), with typed wrappers.

Scripts are sent with EVALSHA inside the caller's pipeline so a batch stays one round
trip; a NOSCRIPT reply (the server restarted or was flushed) loads the script and retries
just that call.
"""

import bisect
import hashlib
import re
from pathlib import Path

import redis

from ..protocol import lua_prelude
from .keynames import lua_key_functions

PRELUDE = lua_prelude() + "\n" + lua_key_functions()  # (the constants and key names every script shares)

_LINE = re.compile(r"user_script:(\d+)")


class Script:
    """A script from `<name>.lua`, after the library modules it names (lib/<lib>.lua, each
    returning a table of its functions, which the script calls as `<lib>.<name>(...)`:
    Redis scripts cannot require each other, so they are pasted in, each wrapped in a
    function), all after the protocol's one-line prelude (store/protocol.py: the constants
    Python shares with them)."""

    def __init__(self, name: str, libs: tuple[str, ...] = (), body: str | None = None):
        """`body`: the script's own text, when it is not a file here (the bench's)."""
        here = Path(__file__).parent
        files = [
            "(generated prelude: protocol.py, scripts/keynames.py)",
            *(f"lib/{lib}.lua" for lib in libs),
            f"{name}.lua",
        ]
        texts = [PRELUDE, *((here / file).read_text() for file in files[1:-1]), body or (here / files[-1]).read_text()]
        # Each library is a module: its text runs inside a function of its own (its locals
        # are that function's, not the script's: Lua allows 200 a function) and returns
        # the table of what it exports, which the script names after the library.
        parts = [
            texts[0],
            *(f"local {lib} = (function()\n{text}\nend)()" for lib, text in zip(libs, texts[1:])),
            texts[-1],
        ]
        self.source = "\n".join(parts)
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()
        self._starts, self._files, line = [], files, 1  # (each file's first line in the source)
        for n, part in enumerate(parts):
            wrapped = 0 < n < len(parts) - 1  # (a library's first line follows its wrapper's)
            self._starts.append(line + wrapped)
            line += part.count("\n") + 1

    def where(self, line: int) -> str:
        """The file and line of a line of the pasted source ("lib/visits.lua:120")."""
        at = bisect.bisect_right(self._starts, line) - 1
        return f"{self._files[at]}:{line - self._starts[at] + 1}" if at >= 0 else f"?:{line}"

    def located(self, error: Exception) -> Exception:
        """A script's error with each "user_script:N" (a line of the pasted source) followed
        by the file and line it is in: "user_script:1688 (lib/visits.lua:120)"."""
        message = str(error)
        if not isinstance(error, redis.exceptions.ResponseError) or not _LINE.search(message):
            return error
        return type(error)(_LINE.sub(lambda m: f"{m.group(0)} ({self.where(int(m.group(1)))})", message))

    def queue(self, pipe, keys, args):
        """Add an EVALSHA of this script to a pipeline (or run it on a client)."""
        return pipe.evalsha(self.sha, len(keys), *keys, *args)

    def run(self, client: redis.Redis, keys, args):
        """Run it now, loading it first if the server does not know it."""
        try:
            try:
                return client.evalsha(self.sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                client.script_load(self.source)
                return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as e:
            raise self.located(_as_full(e)) from None

    def run_many(self, client: redis.Redis, calls: list[tuple[list, list]], after: tuple = ()) -> list:
        """Run (KEYS, ARGV) calls in one round trip; their answers, in order. `after`:
        commands (tuples) sent after them in the same round trip, answers dropped."""
        if len(calls) == 1 and not after:
            return [self.run(client, *calls[0])]  # (no pipeline needed)
        pipe = client.pipeline(transaction=False)
        for keys, args in calls:
            self.queue(pipe, keys, args)
        for command in after:
            pipe.execute_command(*command)
        results = pipe.execute(raise_on_error=False)[: len(calls)]
        return self.rerun_unloaded(client, results, calls)

    async def run_in_loop(self, client, calls: list[tuple[list, list]], after: tuple = ()) -> list:
        """run_many() on the event loop, over a LoopClient (store/loop_client.py)."""
        results = (await client.execute(*(self._command(*call) for call in calls), *after))[: len(calls)]
        unloaded = _unloaded(results, self)
        if unloaded:
            await client.execute(("SCRIPT", "LOAD", self.source))
            again = await client.execute(*(self._command(*calls[i]) for i in unloaded))
            _unloaded(again, self)  # (raises a real error; NOSCRIPT again cannot be, the script was just loaded)
            for i, result in zip(unloaded, again):
                results[i] = result
        return results

    def _command(self, keys, args) -> tuple:
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    def rerun_unloaded(self, client: redis.Redis, results: list, calls: list[tuple[list, list]]) -> list:
        """The answers of queued calls of this script: raise the first real error; rerun only
        the calls the server did not know the script for (every other command already ran,
        and rerunning an INCRBY would double-count)."""
        for i in _unloaded(results, self):
            results[i] = self.run(client, *calls[i])
        return results


def _unloaded(results: list, script: Script) -> list[int]:
    """The indexes of script calls the server did not know the script for; raises the
    first other error among the answers."""
    for result in results:
        if isinstance(result, Exception) and not isinstance(result, redis.exceptions.NoScriptError):
            raise script.located(_as_full(result))
    return [i for i, result in enumerate(results) if isinstance(result, redis.exceptions.NoScriptError)]


RECORD_BATCH = Script("record_batch", libs=("chunk", "gcra", "util", "idmap", "firstdays", "visits", "segments"))
LOCK_RELEASE = Script("lock_release")
MERGE_PAGES = Script("merge_pages")
LOCK_RENEW = Script("lock_renew")
BLOOM = Script("bloom", libs=("bloombudget",))
BLOOM_NATIVE = Script("bloom_native", libs=("bloombudget",))
BLOOM_BOOKS = Script("bloom_books", libs=("bloombudget",))
SEMAPHORE = Script("semaphore")
THROTTLE = Script("throttle", libs=("gcra",))
IDMAP_MIGRATE = Script("idmap_migrate", libs=("idmap",))
IDMAP_PACK = Script("idmap_pack", libs=("idmap",))
FIRSTDAYS_MIGRATE = Script("firstdays_migrate", libs=("firstdays",))
INBOX_PUSH = Script("inbox_push", libs=("gcra",))
INBOX_CLAIM = Script("inbox_claim")
INBOX_RELEASE = Script("inbox_release")
COMPACT = Script("compact")
SCREEN_VISITORS = Script("screen_visitors")
COUNT_KEYS = Script("count_keys")
EXPIRE_DAY = Script("expire_day")
AND_ROWS = Script("and_rows")


def _as_full(error: Exception) -> Exception:
    """A script refused at the server's maxmemory, as OutOfMemoryError whatever the server:
    Redis 6.2 reports it as the script's error ("Error running script ... -OOM command not
    allowed"), later servers refuse the call before it runs (-OOM). Either way nothing was
    written (a script is refused only before its first write), and ingest spools the call
    (store/connection.py OUTAGE)."""
    if (
        isinstance(error, redis.exceptions.ResponseError)
        and not isinstance(error, redis.exceptions.OutOfMemoryError)
        and "OOM command not allowed" in str(error)
    ):
        return redis.exceptions.OutOfMemoryError(str(error))
    return error
