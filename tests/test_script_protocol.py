"""The ingest script's arguments are sections (store/protocol.py: one definition, an
encoder in Python, a reader in Lua written out from it): a call that does not follow the
layout is refused, by the encoder before it is sent and by the script before any write."""

from datetime import UTC, datetime

import pytest
import redis

from analytics.ingest import Hit
from analytics.ingest.identity import identity_source
from analytics.ingest.record import prepare
from analytics.sites import SiteInfo
from analytics.store import protocol
from analytics.store.scripts import PRELUDE, RECORD_BATCH

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def prepared_call(site):
    hits = [Hit(NOW, f"/p/{n % 3}", "pageview", identity_source(None, f"visitor-{n}", None, None)) for n in range(5)]
    return prepare(SiteInfo.from_model(site), hits, now=NOW).calls[0]


def test_the_encoder_takes_the_sections_in_order_and_whole():
    call = protocol.Call(protocol.RECORD_BATCH)
    with pytest.raises(ValueError, match="'limits' opened where 'head' comes"):
        call.section("limits")
    head = protocol.RECORD_BATCH["head"]
    with pytest.raises(ValueError, match="takes"):
        call.section("head", {key: "k" for key in head.keys})  # (its named values missing)
    call.section("head", {key: "k" for key in head.keys}, **{field: 1 for field in head.fields})
    call.section("limits")
    call.args += (1000, 10)  # (a bucket's record is three values and a key)
    with pytest.raises(ValueError, match="sections missing"):
        call.done()
    for name, section in list(protocol.RECORD_BATCH.items())[2:]:
        call.section(name, {key: "k" for key in section.keys}, **{field: 1 for field in section.fields})
    with pytest.raises(ValueError, match="section 'limits': 2 values and 0 keys are not whole records"):
        call.done()


def test_the_lua_reader_finds_what_the_encoder_wrote(site, r):
    script_keys, args = prepared_call(site)
    names = list(protocol.RECORD_BATCH)
    source = "\n".join(
        [
            PRELUDE,
            f"local chunk = (function()\n{(RECORD_BATCH.source.split('local chunk = (function()', 1)[1]).split('end)()', 1)[0]}end)()",
            "local S = chunk.read(PROTOCOL.RECORD_BATCH)",
            "return {" + ", ".join(f"S.{name} and S.{name}.n or -1" for name in names) + ", S.v.head_day, "
            "S.k.head_active, chunk.record(S.pages, 1), S.k.visits_parts_before}",
        ]
    )
    answer = r.eval(source, len(script_keys), *script_keys, *args)
    counts = dict(zip(names, answer[: len(names)]))
    assert counts["pages"] == 3 and counts["limits"] == 0 and counts["paths"] == 3 and counts["attrs"] >= 1
    day, active, first_path, parts_before = answer[len(names) :]
    assert day.decode() == NOW.date().isoformat()
    assert active.decode() == script_keys[protocol.RECORD_BATCH["head"].keys.index("active")]
    assert first_path.decode() in {"/p/0", "/p/1", "/p/2"}
    assert parts_before.decode() == script_keys[-1]


@pytest.mark.parametrize("cut", ["a value", "a key"])
def test_a_call_whose_sections_do_not_add_up_writes_nothing(site, r, cut):
    script_keys, args = prepared_call(site)
    if cut == "a value":
        args = args[:-1]  # (the last path's entry part: its record is half there)
    else:
        script_keys = script_keys[:-1]
    before = r.dbsize()
    with pytest.raises(redis.exceptions.ResponseError, match="not whole records"):
        RECORD_BATCH.run(r, script_keys, args)
    assert r.dbsize() == before
