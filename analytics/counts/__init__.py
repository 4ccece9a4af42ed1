"""Counting over the raw keys: the numbers of a day, a page-day or a cohort, computed
straight from Redis.

Both sides of the read path need them: rollups store them for closed days, and queries
compute them live for days no rollup has finished (today, or a range nobody rolled up
yet). Both import this package; it imports neither, which keeps them out of each other.
It reads and writes nothing but scratch keys.
"""
