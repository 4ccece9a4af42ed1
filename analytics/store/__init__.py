"""Redis itself: the client, every key name, the Lua scripts, and the small primitives
built on them (locks, a counting semaphore, scratch keys). Imports nothing else of Tally,
so every other part can build on it."""
