"""Country from the packaged registry data; region, city and coordinates from a city .mmdb."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import maxminddb
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from analytics.ingest import geo
from analytics.ingest.geo import NOWHERE, Location, location_of
from tests.mmdb import write_mmdb

KNOWN = {
    "8.8.8.8": "US",  # Google DNS
    "1.1.1.1": "AU",  # Cloudflare's anycast DNS, lent to it by APNIC (Australia)
    "193.99.144.80": "DE",  # heise.de
    "129.187.1.1": "DE",  # Leibniz-Rechenzentrum, Munich
    "82.64.0.1": "FR",  # Free
    "193.51.1.1": "FR",  # RENATER
    "133.11.0.1": "JP",  # University of Tokyo
    "143.107.1.1": "BR",  # Universidade de São Paulo
    "200.160.2.3": "BR",  # NIC.br
    "2001:4860:4860::8888": "US",  # Google DNS over IPv6
    "2001:638:1::1": "DE",  # DFN, the German research network
    "2001:200::1": "JP",  # WIDE project
    "::ffff:8.8.8.8": "US",  # IPv4-mapped, as a dual-stack socket reports it
}
NOT_PUBLIC = [
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "127.0.0.1",
    "100.64.0.1",
    "169.254.1.1",
    "192.0.2.1",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "::1",
    "fe80::1",
    "fc00::1",
    "2001:db8::1",
    "::ffff:10.0.0.1",
]
GARBAGE = [
    None,
    "",
    "garbage",
    "1.2.3",
    "010.1.1.1",
    "8.8.8.8 ",
    "8.8.8.8/32",
    "256.1.1.1",
    "1.1.1.1\x00",
    "::ffff:nope",
    "\ud800",
    "x" * 100_000,
]


@pytest.fixture(autouse=True)
def fresh_load(settings):
    settings.GEO_CITY_DB = ""
    geo.reset()
    yield
    geo.reset()


@pytest.mark.parametrize("ip, country", KNOWN.items())
def test_it_finds_the_country_of_well_known_addresses(ip, country):
    assert location_of(ip) == Location(country, None, None, None, None)


@pytest.mark.parametrize("ip", NOT_PUBLIC)
def test_it_places_private_loopback_and_reserved_addresses_nowhere(ip):
    assert location_of(ip) is NOWHERE


@pytest.mark.parametrize("ip", GARBAGE, ids=lambda ip: repr(ip)[:24])
def test_it_places_anything_but_an_address_nowhere(ip):
    assert location_of(ip) is NOWHERE


@given(st.one_of(st.text(), st.ip_addresses().map(str)))
def test_it_never_raises(ip):
    assert isinstance(location_of(ip), Location)


def test_it_drops_registry_region_codes(monkeypatch):
    monkeypatch.setattr(geo.iptocc, "country_code", lambda ip: "EU")  # RIPE's code for "somewhere in Europe"
    assert location_of("138.199.64.1") is NOWHERE


CITIES = {
    "81.2.69.0/24": {  # GeoLite2 City's layout
        "city": {"names": {"en": "London", "de": "London"}},
        "country": {"iso_code": "GB", "names": {"en": "United Kingdom"}},
        "location": {"latitude": 51.5142, "longitude": -0.0931},
        "subdivisions": [{"iso_code": "ENG", "names": {"en": "England"}}],
    },
    "129.187.0.0/16": {  # DB-IP city lite's: subdivisions by name only
        "city": {"names": {"en": "Munich"}},
        "country": {"iso_code": "DE"},
        "location": {"latitude": 48.1374, "longitude": 11.5755},
        "subdivisions": [{"names": {"en": "Bavaria"}}],
    },
    "8.8.8.0/24": {"country": {"iso_code": "CH"}},  # the city database disagrees with the registry
    "133.11.0.0/16": {"city": {"names": {"en": "Tokyo"}}},  # no country: the registry's stands
    "2001:638::/32": {"city": {"names": {"en": "Berlin"}}, "country": {"iso_code": "DE"}},
}


@pytest.fixture
def city_db(tmp_path, settings):
    path = tmp_path / "city.mmdb"
    write_mmdb(path, CITIES)
    settings.GEO_CITY_DB = str(path)
    return path


def test_a_city_database_adds_region_city_and_coordinates(city_db):
    assert location_of("81.2.69.142") == Location("GB", "GB-ENG", "London", 51.5142, -0.0931)
    assert location_of("129.187.1.1") == Location("DE", "Bavaria", "Munich", 48.1374, 11.5755)
    assert location_of("2001:638:1::1") == Location("DE", None, "Berlin", None, None)


def test_the_city_databases_country_wins_where_both_answer(city_db):
    assert location_of("8.8.8.8").country == "CH"
    assert location_of("133.11.0.1") == Location("JP", None, "Tokyo", None, None)
    assert location_of("193.99.144.80") == Location("DE", None, None, None, None)  # not in the city database


@pytest.mark.parametrize("ip", NOT_PUBLIC + GARBAGE, ids=lambda ip: repr(ip)[:24])
def test_with_a_city_database_non_addresses_are_still_nowhere(city_db, ip):
    assert location_of(ip) is NOWHERE


@given(st.one_of(st.text(), st.ip_addresses().map(str)))
@hsettings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_with_a_city_database_it_never_raises(city_db, ip):
    assert isinstance(location_of(ip), Location)


def test_the_city_database_is_opened_once_by_concurrent_first_calls(city_db, monkeypatch):
    opened = []
    real_open = maxminddb.open_database
    monkeypatch.setattr(geo.maxminddb, "open_database", lambda *args: opened.append(args) or real_open(*args))
    start = threading.Barrier(8)

    def first_call():
        start.wait()
        location_of("81.2.69.142")

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert opened == [(str(city_db), maxminddb.MODE_AUTO)]


def test_a_city_database_path_that_is_no_file_stops_startup(tmp_path):
    env = {**os.environ, "TALLY_GEO_CITY_DB": str(tmp_path / "missing.mmdb"), "TALLY_VAR_DIR": str(tmp_path)}
    base = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", "import config.settings"], cwd=base, env=env, capture_output=True, text=True
    )
    assert out.returncode != 0 and "TALLY_GEO_CITY_DB must be the path of an .mmdb file" in out.stderr
