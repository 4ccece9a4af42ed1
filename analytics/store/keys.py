"""Every Redis key Tally uses is named here, and nowhere else.

Layout: ``tally:{<site id>}:<family>:<bucket>[:<detail>]``.

* The ``{<site id>}`` hash tag puts all of one site's keys in one Redis Cluster slot, so
  multi-key commands (BITOP, PFMERGE, multi-key PFCOUNT, our Lua script) work in a cluster
  while different sites spread over it.
* Days are the site's local dates, ISO formatted (``2026-11-21``): zero-padded, so keys
  sort by date (bitmapist's unpadded dates do not).
* Minutes (realtime) are UTC, ``2026-11-21T09:05``.

Families and their types:

=================  ======  ===============================================================
uv:<day>           HLL     visitors of the site that day (any event)
uv:<day>:page:<p>  HLL     visitors of page <p> that day (pageviews)
uv:<day>:event:<n> HLL     visitors who sent custom event <n> that day
pv:<day>           string  pageviews of the site that day
pv:<day>:page:<p>  string  pageviews of page <p> that day
uv:<day>:hour:<HH> HLL     visitors in local hour HH of that day
pv:<day>:hour:<HH> string  pageviews in local hour HH of that day
pages:<day>        set     the page paths seen that day (the index for top pages)
ev:<day>:<n>       string  count of custom event <n> that day
events:<day>       set     the custom event names seen that day
active:<day>       bitmap  bit <dense id> set: visitor was active that day (DAU)
new:<day>          bitmap  bit set: visitor was first seen that day (new-visitor cohort)
first-day:runs     zset    runs of ids and the day they were first seen ("<first id>:<day>",
                           days since 2000-01-01), so a backfill of an earlier day moves
                           "new" there (lib/firstdays.lua)
first-day:moved:<b> hash   the ids of bucket b whose first day a backfill moved earlier
first-day          string  u16 per id at #<id>: earlier versions' first days (read only, until
                           store/firstdays.py moves them into runs via first-day:runs-aside)
first-day-latest   string  the latest of those days (a chunk not before it skips reading them)
applied:<UTC day>  set     marks of the ingest calls applied that day (exactly once)
idempotency:<h>    set     marks of a client's Idempotency-Key (hashed), kept 24 hours
ids:<day>          hash    visitor digest -> dense id, per day in daily-salt mode
ids:p<n>           string  stable mode: bucket n of the digest -> dense id map (records of
                           the first 7 bytes of the digest and the id; lib/idmap.lua), the
                           set of every visitor ever seen: a visitor is new the day their
                           id is made (or an earlier day backfilled)
ids:buckets        string  the number of those buckets
ids:packed         string  set when no bucket is left in the layout before (ids:b<n>)
ids:id-elements    string  set when the map started empty in a version whose HLLs count
                           dense ids (not digests): only then can a bitmap stand in for
                           a day HLL (record_batch.lua)
ids:b<n>           hash    bucket n as earlier versions kept it: moves to ids:p<n> when read
ids                hash    stable mode, before the buckets: emptied as its visitors return
ids-next[:<day>]   string  the id counter
rt:<minute>        HLL     visitors in that UTC minute (short TTL)
bots:<day>         string  events dropped as bots that day (before dropped:<day>; read as user-agent)
dropped:<day>      hash    events not counted that day: reason -> count (analytics/dropped.py)
pattern:<window>   hash    visitors' pageviews in a 10-minute window (ingest/patterns.py; 20 minutes)
flagged:<day>      set     visitors flagged that day for an inhuman rate (ingest/patterns.py; 2 days)
rate[:ip:<h>]      string  ingest rate-limit buckets (GCRA) of the site and of each client
props:<day>        set     custom property groups "<event>\x1f<prop>\x1f<value>" seen that day
props-sizes:<day>  hash    "<event>\x1f<prop>" -> its number of values in props:<day> (quota);
                           "<event>" -> its number of property names; "" -> the day's names and values
uv:<day>:prop:<g>  HLL     visitors who sent property group <g> that day
ev:<day>:prop:<g>  string  events with property group <g> that day
places:<day>       GEO     the day's visitors' cities at their coordinates (city database only)
revenue:<day>      hash    "<event>\x1f<currency>" -> revenue that day, in hundredths
sess:<generation>  hash    visitor digest -> their open visit's state (lib/visits.lua);
                           one hash per half hour of the clock, read with the one before
sess-parts:<gen>   hash    part id -> a part of visit fields (source, device...), same life
dim:<day>:counts   hash    "<dimension>\x1f<value>" -> its pageviews, visits, bounces,
                           duration (s) and exits that day, packed (dimensions.COUNTS)
dim:<day>:fields   set     the "<dimension>\x1f<value>" fields kept that day (capped per
                           dimension; past the cap, "<dimension>\x1f(other)")
dim:<day>:sizes    hash    dimension -> its number of values in dim:<day>:fields
dim:<day>:v:<field> HLL    visitors of "<dimension>\x1f<value>" that day
dim:<day>:b:<field> bitmap the same visitors by dense id, for the day's first values of
                           each dimension (pages as "page\x1f<path>", custom events as
                           "event\x1f<name>" too): exact filters (lib/segments.lua)
dim:<day>:bitmapped set    the fields that have such a bitmap that day
dim:<day>:bitmap-sizes hash dimension -> its number of bitmaps that day
dim:<day>:bitmap-only set  visit values whose day HLL is not kept: their bitmap holds all
                           their visitors (lib/segments.lua); folded into an HLL when a
                           range needs one, and before the bitmap expires (counts/fold.py)
dim:<day>:folding  set     values being folded (their HLL is not whole yet)
fold-due           zset    ISO days with bitmap-only values, scored by the day (days since
                           2000-01-01): the nightly rollup folds them before their bitmaps
                           expire
pinned             set     fields that always get a bitmap (goals, funnel steps)
page-merge:<day>   hash    a sealed day's new page keys (path -> "<pageviews> <visitors>"),
                           between their removal and their addition to the stored rows
                           (scripts/merge_pages.lua)
page-search        zset    page paths, score 0, for prefix search (ZRANGEBYLEX); capped
page-rank          zset    the same paths scored by pageviews: the least visited leave first
tick               string  set for a second after ingest published a live tick
bloom:<d>          string  visitor d's scalable Bloom filter of seen items (plain Redis: the
                   or BF   bits; with RedisBloom, the module's own type); d hashes the user id
bloom:<d>:shape    hash    its shape, plain Redis only (scripts/bloom.lua)
bloom-live         zset    d -> when its filter expires (ms): every live filter of the site,
                           kept by the scripts that touch one (lib/bloombudget.lua)
bloom-sizes        hash    d -> the bytes its filter is charged against the site's budget
bloom-budget       hash    bytes (all filters' charges), full-since (ms) and refused (adds
                           refused since): the site's Bloom memory budget
inbox              list    single events accepted and not yet counted (capture/inbox.py)
inbox-claim        hash    the batch of the inbox a drainer is counting: id, lease end, server run id
inbox-claimed      list    that batch's events (counted again, once, if its drainer dies)
inbox-claims       string  the claim id counter (a claim's id names its calls' marks)
inbox-marks        set     marks of the claims' calls already counted (exactly once)
inbox-streams      hash    a pushing process's stream -> the number of its last push applied
=================  ======  ===============================================================

Keys of no site (one for the whole server or cluster, ``tally:<family>``):

=================  ======  ===============================================================
inbox-waiting      set     ids of the sites pushed into since a drainer last looked
=================  ======  ===============================================================

Pub/sub channel ``tally:{<site id>}:live``: ingest publishes there (at most once a second
per site) when new events arrive; live dashboards listen.

Rollup keys (written by analytics.rollups, expiring with the daily keys they summarise):

=======================  ======  =========================================================
uv-week:<monday>:page:<p>     HLL  PFMERGE of page <p>'s day HLLs in the week
uv-month:<first>:page:<p>     HLL  PFMERGE of page <p>'s day HLLs in the month
active-week:<monday>     bitmap  BITOP OR of the week's active bitmaps
new-week:<monday>        bitmap  BITOP OR of the week's new-visitor bitmaps
lock:<job>               string  a job's lock (store/locks.py)
tmp:<token>:<name>       any     scratch results of BITOP/PFMERGE, with a short TTL
closed-epochs            hash    ISO day -> a counter that moves when the day may count otherwise
kept:<token>:<name>      any     breakdown parts kept ready over closed days
kept-read                hash    "<days back>:<part>" -> when it was last read, ms (the warm-up's list)
kept-warmed              string  the day the parts were last warmed up for
=======================  ======  =========================================================
"""

from datetime import date, datetime

from . import protocol

FIELD_VALUE_SEP = protocol.FIELD_VALUE_SEP  # between a field's kind and its value, "page\x1f/path"

PREFIX = "tally"


def site_prefix(site_id: int) -> str:
    """The part every key of a site starts with, hash tag included (for SCAN patterns)."""
    return f"{PREFIX}:{{{site_id}}}:"


def site_pattern(site_id: int, pattern: str = "*") -> str:
    """A SCAN MATCH pattern for a site's keys: the prefix with its glob characters escaped
    (so the caller's `pattern` can only narrow the site's keys, never reach another's)."""
    escaped = "".join("\\" + c if c in "\\*?[]" else c for c in site_prefix(site_id))
    return escaped + pattern


def day_str(day: date) -> str:
    return day.isoformat()


def minute_str(moment: datetime) -> str:
    """A UTC minute bucket; `moment` must already be in UTC."""
    return moment.strftime("%Y-%m-%dT%H:%M")


def site_visitors(site_id: int, day: date) -> str:
    """HLL: the site's visitors that day (any event)."""
    return f"{PREFIX}:{{{site_id}}}:uv:{day.isoformat()}"


def page_visitors(site_id: int, day: date, path: str) -> str:
    """HLL: the visitors of page <path> that day (pageviews)."""
    return f"{PREFIX}:{{{site_id}}}:uv:{day.isoformat()}:page:{path}"


def event_visitors(site_id: int, day: date, name: str) -> str:
    """HLL: the visitors who sent custom event <name> that day."""
    return f"{PREFIX}:{{{site_id}}}:uv:{day.isoformat()}:event:{name}"


def pageviews(site_id: int, day: date) -> str:
    """Pageviews of the site that day (a counter)."""
    return f"{PREFIX}:{{{site_id}}}:pv:{day.isoformat()}"


def page_pageviews(site_id: int, day: date, path: str) -> str:
    """Pageviews of page <path> that day (a counter)."""
    # A string per page, not a field of one hash per day: a hash of a few hundred fields is
    # a ziplist in Redis 6.2, where HINCRBY scans linearly (measured ~10 µs against 0.4 µs).
    return f"{PREFIX}:{{{site_id}}}:pv:{day.isoformat()}:page:{path}"


def hour_visitors(site_id: int, day: date, hour: int) -> str:
    """Visitors of one local hour of a day (HLL), for the hourly charts."""
    return f"{PREFIX}:{{{site_id}}}:uv:{day.isoformat()}:hour:{hour:02d}"


def hour_pageviews(site_id: int, day: date, hour: int) -> str:
    """Pageviews of one local hour of a day (a counter), for the hourly charts."""
    return f"{PREFIX}:{{{site_id}}}:pv:{day.isoformat()}:hour:{hour:02d}"


def pages_index(site_id: int, day: date) -> str:
    """Set: the page paths seen that day (capped per day; then "(other)"): the index for top pages."""
    return f"{PREFIX}:{{{site_id}}}:pages:{day.isoformat()}"


def event_count(site_id: int, day: date, name: str) -> str:
    """How many times custom event <name> was sent that day (a counter)."""
    return f"{PREFIX}:{{{site_id}}}:ev:{day.isoformat()}:{name}"


def props_index(site_id: int, day: date) -> str:
    """The day's custom property groups, "<event>\x1f<property>\x1f<value>" (capped per site)."""
    return f"{PREFIX}:{{{site_id}}}:props:{day.isoformat()}"


def props_sizes(site_id: int, day: date) -> str:
    """Hash: "<event>\x1f<property>" -> how many of its values props_index kept that day
    (the quota is per property; past it, "<event>\x1f<property>\x1f(other)")."""
    return f"{PREFIX}:{{{site_id}}}:props-sizes:{day.isoformat()}"


def prop_visitors(site_id: int, day: date, group: str) -> str:
    """HLL: the visitors who sent custom property group <group> that day."""
    return f"{PREFIX}:{{{site_id}}}:uv:{day.isoformat()}:prop:{group}"


def prop_count(site_id: int, day: date, group: str) -> str:
    """Events with custom property group <group> that day (a counter)."""
    return f"{PREFIX}:{{{site_id}}}:ev:{day.isoformat()}:prop:{group}"


def revenue(site_id: int, day: date) -> str:
    """Hash "<event>\x1f<currency>" -> the day's revenue in hundredths."""
    return f"{PREFIX}:{{{site_id}}}:revenue:{day.isoformat()}"


def events_index(site_id: int, day: date) -> str:
    """Set: the custom event names seen that day (capped per day; then "(other)")."""
    return f"{PREFIX}:{{{site_id}}}:events:{day.isoformat()}"


def active(site_id: int, day: date) -> str:
    """Bitmap: bit <dense id> set for each visitor active that day (DAU, retention)."""
    return f"{PREFIX}:{{{site_id}}}:active:{day.isoformat()}"


def new_visitors(site_id: int, day: date) -> str:
    """Bitmap: bit set for each visitor first seen that day (the new-visitor cohort)."""
    return new_visitors_prefix(site_id) + day.isoformat()


def daily_family(site_id: int, day: date) -> list[str]:
    """A day's keys of the "daily" expiry family, but its custom events' (named by the
    day's events index): bitmaps, site HLL, pageview total, dropped counts, the events index,
    and the hours' HLLs and counters."""
    return [
        active(site_id, day),
        new_visitors(site_id, day),
        site_visitors(site_id, day),
        pageviews(site_id, day),
        bots_dropped(site_id, day),
        dropped(site_id, day),
        events_index(site_id, day),
        props_index(site_id, day),
        props_sizes(site_id, day),
        revenue(site_id, day),
        places(site_id, day),
        *(hour_visitors(site_id, day, hour) for hour in range(24)),
        *(hour_pageviews(site_id, day, hour) for hour in range(24)),
    ]


def sessions(site_id: int, generation: int) -> str:
    """Open visits, by visitor digest; `generation` is the clock's half hour (unix time //
    VISIT_TIMEOUT), so a lookup reads this one and the one before, and each expires."""
    return f"{PREFIX}:{{{site_id}}}:sess:{generation}"


def places(site_id: int, day: date) -> str:
    """GEO set of the cities visitors came from that day (members: city values, placed by
    the city database's coordinates for the city; only with TALLY_GEO_CITY_DB)."""
    return f"{PREFIX}:{{{site_id}}}:places:{day.isoformat()}"


def session_parts(site_id: int, generation: int) -> str:
    """Part id -> the part's fields text, for the open visits of that half hour (lib/visits.lua)."""
    return f"{PREFIX}:{{{site_id}}}:sess-parts:{generation}"


def dimensions_prefix(site_id: int) -> str:
    """The day keys of the dimensions start with this and the ISO day; lib/visits.lua
    names them from it (they share the site's hash tag, so one cluster slot)."""
    return f"{PREFIX}:{{{site_id}}}:dim:"


def dimension_counts(site_id: int, day: date) -> str:
    """Hash: dimension field -> its numbers of the day (dimensions.TABLES, packed as
    dimensions.COUNTS: lib/visits.lua writes them all in one HSET)."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:counts"


def dimension_fields(site_id: int, day: date) -> str:
    """Set of the day's dimension fields ("dimension SEP value"): the values the day's
    quota kept, and "(other)" where it overflowed."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:fields"


def dimension_sizes(site_id: int, day: date) -> str:
    """Hash: dimension -> how many of its values dimension_fields holds (the quota's count)."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:sizes"


def dimension_visitors(site_id: int, day: date, field: str) -> str:
    """HLL: the visitors of a dimension field that day."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:v:{field}"


def field_visitors(site_id: int, day: date, field: str) -> str:
    """The day HLL of a field's visitors, whatever its kind: "page<SEP>path" is the page's,
    "event<SEP>name" the custom event's, "prop<SEP>event<SEP>property<SEP>value" the custom
    property group's, anything else a visit dimension value's."""
    kind, _, value = field.partition(FIELD_VALUE_SEP)
    if kind == "page":
        return page_visitors(site_id, day, value)
    if kind == "event":
        return event_visitors(site_id, day, value)
    if kind == "prop":
        return prop_visitors(site_id, day, value)
    return dimension_visitors(site_id, day, field)


def dimension_bitmap(site_id: int, day: date, field: str) -> str:
    """The visitors (bit per dense id) of a field that day: "<dimension>SEP<value>", where
    pages are "page", custom events "event" and custom property groups "prop" (lib/segments.lua)."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:b:{field}"


def dimension_bitmapped(site_id: int, day: date) -> str:
    """Set of the fields that have a bitmap that day."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:bitmapped"


def dimension_bitmap_sizes(site_id: int, day: date) -> str:
    """Hash: dimension -> its number of bitmaps that day (at most the site's segment_values)."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:bitmap-sizes"


def dimension_bitmap_only(site_id: int, day: date) -> str:
    """Set of the visit values with no day HLL that day: their bitmap holds every visitor
    (lib/segments.lua); analytics.counts.fold makes the HLL when one is needed."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:bitmap-only"


def dimension_folding(site_id: int, day: date) -> str:
    """Set of the values being folded from bitmap-only into an HLL (analytics.counts.fold)."""
    return f"{dimensions_prefix(site_id)}{day.isoformat()}:folding"


def fold_due(site_id: int) -> str:
    """Sorted set of the ISO days that have bitmap-only values, scored by the day's number:
    their values are folded into HLLs before the bitmaps expire (analytics.counts.fold)."""
    return f"{PREFIX}:{{{site_id}}}:fold-due"


def pinned_fields(site_id: int) -> str:
    """Set of fields that get a bitmap every day past the limit: the site's goals' events
    and pages, and its funnels' steps (analytics.segments_pins keeps it)."""
    return f"{PREFIX}:{{{site_id}}}:pinned"


def new_visitors_prefix(site_id: int) -> str:
    """`new_visitors(site_id, day)` is this and the ISO day (record_batch.lua names an older
    day's bitmap with it when a backfill moves a visitor's first day)."""
    return f"{PREFIX}:{{{site_id}}}:new:"


FIRST_DAYS_MOVED = protocol.FIRST_DAYS_MOVED  # ids per hash of moved first days (lib/firstdays.lua)


def first_days(site_id: int) -> str:
    """The base name of the first days' keys (lib/firstdays.lua); itself, where earlier
    versions kept a u16 per id (read for the ids handed out before the first run)."""
    return f"{PREFIX}:{{{site_id}}}:first-day"


def first_days_runs(site_id: int) -> str:
    """Sorted set of runs of ids with their first day: "<first id>:<day>" scored by the id."""
    return f"{first_days(site_id)}:runs"


def first_days_runs_aside(site_id: int) -> str:
    """The runs built from earlier versions' first days while they move (store/firstdays.py),
    joined to the runs when done."""
    return f"{first_days(site_id)}:runs-aside"


def first_days_moved(site_id: int, bucket: int) -> str:
    """Hash of the first days a backfill moved earlier, for ids bucket * FIRST_DAYS_MOVED
    onwards: id mod FIRST_DAYS_MOVED -> day."""
    return f"{first_days(site_id)}:moved:{bucket}"


def latest_first_day(site_id: int) -> str:
    """The latest day any visitor was first seen (days since 2000-01-01): only a chunk of
    an earlier day (a backfill) needs to read the first days of the visitors it knows."""
    return f"{PREFIX}:{{{site_id}}}:first-day-latest"


def applied(site_id: int, day: date) -> str:
    """Marks of the ingest calls applied on a (UTC) day: a retried or replayed call whose
    mark is here is not counted again."""
    return f"{PREFIX}:{{{site_id}}}:applied:{day.isoformat()}"


def inbox(site_id: int) -> str:
    """Single events accepted (acknowledged) and waiting to be counted in a batch."""
    return f"{PREFIX}:{{{site_id}}}:inbox"


def inbox_claim(site_id: int) -> tuple[str, str, str]:
    """The claim a drainer holds on the inbox (hash: id, lease end), the claimed events
    (list), and the claim id counter."""
    base = f"{PREFIX}:{{{site_id}}}:inbox-"
    return base + "claim", base + "claimed", base + "claims"


def inbox_streams(site_id: int) -> str:
    """The marks of pushes into the inbox: stream -> the number of its last push applied."""
    return f"{PREFIX}:{{{site_id}}}:inbox-streams"


def inbox_waiting() -> str:
    """Set: the ids of sites whose inbox had a push since a drainer last looked. A hint, so
    an idle drainer looks at the inboxes that have something, not at every site's: sent in
    the push's round trip but not in its script (no hash tag: on a cluster it is another
    slot), so a drainer still sweeps every inbox now and then for a hint that got lost."""
    return f"{PREFIX}:inbox-waiting"


def inbox_marks(site_id: int) -> str:
    """Marks of the inbox claims' record() calls already applied."""
    return f"{PREFIX}:{{{site_id}}}:inbox-marks"


def idempotency(site_id: int, key_digest: str) -> str:
    """Marks of a client's `Idempotency-Key` (hashed): its chunks already applied."""
    return f"{PREFIX}:{{{site_id}}}:idempotency:{key_digest}"


def idempotency_body(site_id: int, key_digest: str) -> str:
    """The fingerprint of the first body sent with a client's `Idempotency-Key` (hashed)."""
    return f"{PREFIX}:{{{site_id}}}:idempotency-body:{key_digest}"


def visitor_ids(site_id: int, day: date | None = None) -> str:
    """The digest -> dense id map: one per site, or one per day when the salt rotates daily."""
    suffix = f":{day.isoformat()}" if day else ""
    return f"{PREFIX}:{{{site_id}}}:ids{suffix}"


def visitor_id_bucket(site_id: int, n: int) -> str:
    """Bucket n of the stable visitor-id map (lib/idmap.lua: linear hashing of packed strings)."""
    return f"{visitor_ids(site_id)}:p{n}"


def visitor_id_hash_bucket(site_id: int, n: int) -> str:
    """Bucket n of the stable visitor-id map as earlier versions kept it (a small hash),
    until it moves into visitor_id_bucket()."""
    return f"{visitor_ids(site_id)}:b{n}"


def visitor_id_buckets(site_id: int) -> str:
    """How many buckets the stable visitor-id map has (1 when missing)."""
    return f"{visitor_ids(site_id)}:buckets"


def visitor_id_packed(site_id: int) -> str:
    """Set once no bucket of the stable visitor-id map is left in an earlier layout."""
    return f"{visitor_ids(site_id)}:packed"


def visitor_id_elements(site_id: int) -> str:
    """Set when the site's HLLs count dense ids rather than digests (lib/idmap.lua)."""
    return f"{visitor_ids(site_id)}:id-elements"


def visitor_id_narrow(site_id: int) -> str:
    """The mark of the layout before the packed buckets (deleted when a map is packed)."""
    return f"{visitor_ids(site_id)}:narrow"


def visitor_id_counter(site_id: int, day: date | None = None) -> str:
    """The dense-id counter: the next visitor's id (one per site, or per day when the salt rotates)."""
    suffix = f":{day.isoformat()}" if day else ""
    return f"{PREFIX}:{{{site_id}}}:ids-next{suffix}"


def realtime(site_id: int, minute: datetime) -> str:
    """HLL: the visitors of one UTC minute (a short TTL), for realtime counts."""
    return f"{PREFIX}:{{{site_id}}}:rt:{minute_str(minute)}"


def bots_dropped(site_id: int, day: date) -> str:
    """Events dropped as bots that day (a counter), as ingest kept it before `dropped`:
    read as dropped by their User-Agent."""
    return f"{PREFIX}:{{{site_id}}}:bots:{day.isoformat()}"


def dropped(site_id: int, day: date) -> str:
    """Hash: the events not counted that day, by reason (analytics/dropped.py)."""
    return f"{PREFIX}:{{{site_id}}}:dropped:{day.isoformat()}"


def rate_site(site_id: int) -> str:
    """The site's ingest rate-limit bucket (limits.py)."""
    return f"{PREFIX}:{{{site_id}}}:rate"


def pattern_window(site_id: int, window: int) -> str:
    """Hash: each visitor's pageviews (8 bytes of their digest -> count) in one 10-minute
    window (`window`: its start as a Unix time / 600), for ingest/patterns.py; kept 20 minutes."""
    return f"{PREFIX}:{{{site_id}}}:pattern:{window}"


def pattern_flagged(site_id: int, day: date) -> str:
    """Set: the visitors (8 bytes of their digest) flagged that day for an inhuman rate:
    their further events that day are dropped (ingest/patterns.py)."""
    return f"{PREFIX}:{{{site_id}}}:flagged:{day.isoformat()}"


def rate_client(site_id: int, client_digest: str) -> str:
    """One client's (hashed IP) ingest rate-limit bucket for a site: under the site's hash
    tag, so the ingest script checks it in the same call as it counts."""
    return f"{PREFIX}:{{{site_id}}}:rate:ip:{client_digest}"


def rate_login(kind: str, digest: str) -> str:
    """A failed-login bucket per account or per client IP (kind "user" or "ip", hashed)."""
    return f"{PREFIX}:{{login}}:{kind}:{digest}"


def rate_share(digest: str) -> str:
    """A client's (hashed IP) bucket for share-link pages, across every share link."""
    return f"{PREFIX}:{{share}}:ip:{digest}"


def rate_share_renders(site_id: int) -> str:
    """A share link's bucket of pages computed (not served from the cache), across clients."""
    return f"{PREFIX}:{{share}}:renders:{site_id}"


def lock(site_id: int, job: str) -> str:
    """The lock that keeps two workers from running the same job on a site at once."""
    return f"{PREFIX}:{{{site_id}}}:lock:{job}"


def temporary(site_id: int, token: str, name: str) -> str:
    """Scratch keys for BITOP/PFMERGE results; they carry a TTL and are unlinked after use."""
    return f"{PREFIX}:{{{site_id}}}:tmp:{token}:{name}"


def period_visitors(site_id: int, unit: str, start: date, path: str | None = None) -> str:
    """Merged HLL of a week (`unit` "week", start a Monday) or month ("month", the 1st)."""
    page = f":page:{path}" if path is not None else ""
    return f"{PREFIX}:{{{site_id}}}:uv-{unit}:{start.isoformat()}{page}"


def active_week(site_id: int, monday: date) -> str:
    """Bitmap: the week's active visitors, OR of its days (rollups/windows.py), for WAU."""
    return f"{PREFIX}:{{{site_id}}}:active-week:{monday.isoformat()}"


def new_week(site_id: int, monday: date) -> str:
    """Bitmap: the week's new visitors, OR of its days (rollups/windows.py)."""
    return f"{PREFIX}:{{{site_id}}}:new-week:{monday.isoformat()}"


def page_search(site_id: int) -> str:
    """Sorted set of page paths, score 0, for prefix search (ZRANGEBYLEX); capped by page_rank."""
    return f"{PREFIX}:{{{site_id}}}:page-search"


def page_rank(site_id: int) -> str:
    """Every searchable page path scored by its pageviews (all time): when the search index
    is over its cap, the least visited paths leave it."""
    return f"{PREFIX}:{{{site_id}}}:page-rank"


def live_tick(site_id: int) -> str:
    """Set for a second after ingest published on the live channel (at most once a second a site)."""
    return f"{PREFIX}:{{{site_id}}}:tick"


def live_channel(site_id: int) -> str:
    """Pub/sub channel: ingest publishes there when new events arrive; live dashboards listen."""
    return f"{PREFIX}:{{{site_id}}}:live"


def bloom(site_id: int, user_digest: str) -> str:
    """A visitor's scalable Bloom filter of seen items (bits); the user id is hashed."""
    return f"{PREFIX}:{{{site_id}}}:bloom:{user_digest}"


def bloom_shape(site_id: int, user_digest: str) -> str:
    """Hash: the shape of a plain-Redis Bloom filter, its sub-filters' sizes (scripts/bloom.lua)."""
    return f"{PREFIX}:{{{site_id}}}:bloom:{user_digest}:shape"


def bloom_registry(site_id: int) -> tuple[str, str, str]:
    """The site's Bloom filters against its memory budget (lib/bloombudget.lua): a sorted
    set of the live filters' digests by the moment each expires (ms), a hash of what each
    is charged (bytes), and a hash of the totals (bytes, full-since, refused)."""
    base = f"{PREFIX}:{{{site_id}}}:bloom-"
    return base + "live", base + "sizes", base + "budget"


def bloom_recounted(site_id: int) -> str:
    """Set once the nightly rollup has put the filters made before the budget's books
    existed on them (recommendations.bloom.recount): an upgrade needs no manual step."""
    return f"{PREFIX}:{{{site_id}}}:bloom-recounted"


def bloom_digest(site_id: int, key: bytes | str) -> str | None:
    """The visitor digest of one of the site's filter keys (bloom() or bloom_shape()), or
    None for any other key."""
    name = key.decode(errors="replace") if isinstance(key, bytes) else key
    prefix = f"{PREFIX}:{{{site_id}}}:bloom:"
    if not name.startswith(prefix):
        return None
    digest = name[len(prefix) :].removesuffix(":shape")
    return digest if digest and ":" not in digest else None


# Exports: one semaphore for the whole installation (its own hash tag), a job per export.


def page_merge(site_id: int, day: date) -> str:
    """Staging hash of a sealed day's new page keys, between their removal from Redis and
    their addition to the stored page rows (scripts/merge_pages.lua)."""
    return f"{PREFIX}:{{{site_id}}}:page-merge:{day.isoformat()}"


def closed_epochs(site_id: int) -> str:
    """Hash: ISO day -> a counter that moves whenever what that day counts may change after
    it closed: an event of a day before the writer's today (record_batch.lua), a visit
    adding to an older day (lib/visits.lua), a rollup of a closed day. The breakdown parts
    kept ready name the counters of their days (queries/kept.py): a part over other days
    is not touched."""
    return f"{PREFIX}:{{{site_id}}}:closed-epochs"


def kept(site_id: int, token: str, name: str) -> str:
    """A breakdown part kept ready over closed days (queries/kept.py): "sums:<dimension>"
    (hash: value -> its summed counts), "exact" (hash: field -> "1" where its bitmaps are
    complete), "u:<field>" (HLL: its visitors), "b:<field>" (bitmap: the same, exact).
    `token` names the days, their state and their epochs; each key has a TTL."""
    return f"{PREFIX}:{{{site_id}}}:kept:{token}:{name}"


def kept_read(site_id: int) -> str:
    """Hash: "<days back>:<part name>" -> when it was last read (ms since the epoch), for
    parts over a head ending the day before yesterday (a range ending today or yesterday):
    the nightly warm-up makes them again for the new day (queries/warm.py)."""
    return f"{PREFIX}:{{{site_id}}}:kept-read"


def kept_warmed(site_id: int) -> str:
    """The day number the site's parts were last warmed up for (queries/warm.py): once a day."""
    return f"{PREFIX}:{{{site_id}}}:kept-warmed"


def dirty_days(site_id: int) -> str:
    """Days before yesterday that got events after they may have been rolled up (backfills);
    the recent-rollup job rolls them again."""
    return f"{PREFIX}:{{{site_id}}}:dirty-days"


def export_semaphore() -> tuple[str, str, str]:
    """The export semaphore's keys: arrival order, last signs of life, arrival counter."""
    tag = f"{PREFIX}:{{exports}}:semaphore"
    return f"{tag}:order", f"{tag}:seen", f"{tag}:counter"


def export_job(job_id: str) -> str:
    """Hash: an export job's state (status, format, site, error)."""
    return f"{PREFIX}:{{exports}}:job:{job_id}"


def export_file(job_id: str) -> str:
    """The file an export job made, kept until it is fetched or expires."""
    return f"{PREFIX}:{{exports}}:job:{job_id}:file"
