"""Lua scripts, one file each (KEYS/ARGV documented at the top), with typed wrappers.

Scripts are sent with EVALSHA inside the caller's pipeline so a batch stays one round
trip; a NOSCRIPT reply (the server restarted or was flushed) loads the script and retries
just that call.
"""
import hashlib
from pathlib import Path

import redis


class Script:
    def __init__(self, name: str):
        self.source = (Path(__file__).parent / f"{name}.lua").read_text()
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def queue(self, pipe, keys, args):
        """Add an EVALSHA of this script to a pipeline (or run it on a client)."""
        return pipe.evalsha(self.sha, len(keys), *keys, *args)

    def run(self, client: redis.Redis, keys, args):
        """Run it now, loading it first if the server does not know it."""
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.source)
            return client.evalsha(self.sha, len(keys), *keys, *args)


RECORD_BATCH = Script("record_batch")
LOCK_RELEASE = Script("lock_release")
LOCK_RENEW = Script("lock_renew")
BLOOM = Script("bloom")
SEMAPHORE = Script("semaphore")
