"""Data-centre addresses (issue 37, item 1): an address in a vendored provider's published
ranges is named by its provider, any other address (or no address) by None; the ranges
refresh through a checked command that writes nothing unless every file passes."""

import io
import ipaddress
import re
import shutil
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analytics.ingest import datacenters
from analytics.ingest.datacenters import is_datacenter, provider

pytestmark = pytest.mark.one_leg  # (no Redis involved)


def vendored_blocks():
    """Every vendored block with its provider, read with ipaddress: the tests' own reading."""
    for name in datacenters.PROVIDERS:
        for file in datacenters.FAMILIES:
            path = datacenters.DATA / name / f"{file}.txt"
            if path.exists():
                for line in path.read_text().split():
                    yield ipaddress.ip_network(line), name


@pytest.mark.parametrize(
    "ip, expected",
    [
        # amazon/ipv4.txt: 1.178.1.0/24 (nothing vendored at 1.178.0.255 or 1.178.2.0)
        ("1.178.0.255", None), ("1.178.1.0", "amazon"), ("1.178.1.128", "amazon"), ("1.178.1.255", "amazon"), ("1.178.2.0", None),
        # oracle/ipv4.txt: 51.170.128.0/20
        ("51.170.127.255", None), ("51.170.128.0", "oracle"), ("51.170.136.0", "oracle"), ("51.170.143.255", "oracle"), ("51.170.144.0", None),
        # amazon/ipv6.txt: 2a01:578:0:7a00::/56 (right after Amazon's 2a01:578:0:7800::/55)
        ("2a01:578:0:7a00::", "amazon"), ("2a01:578:0:7a80::1", "amazon"), ("2a01:578:0:7aff:ffff:ffff:ffff:ffff", "amazon"), ("2a01:578:0:7b00::", None),
        # google/ipv6.txt: 2600:1900::/28
        ("2600:18ff:ffff:ffff:ffff:ffff:ffff:ffff", None), ("2600:1900::", "google"), ("2600:1908::", "google"), ("2600:190f:ffff:ffff:ffff:ffff:ffff:ffff", "google"), ("2600:1910::", None),
        # linode/ipv6.txt: 2400:8907::/32, written in full
        ("2400:8907:0000:0000:0000:0000:0000:0001", "linode"),
        # github/ipv4.txt lists 4.148.0.0/14, inside microsoft/ipv4.txt's 4.128.0.0/9: the owner names it
        ("4.148.0.1", "microsoft"),
        # github/ipv4.txt: 140.82.112.0/20, GitHub's own network
        ("140.82.112.1", "github"), ("140.82.127.255", "github"), ("140.82.128.0", None),
    ],
)  # fmt: skip
def test_it_names_the_provider_of_an_address_in_its_ranges(ip, expected):
    assert provider(ip) == expected
    assert is_datacenter(ip) is (expected is not None)


def test_every_vendored_block_is_found_from_its_first_to_its_last_address():
    for block, name in vendored_blocks():
        owners = {"github", "microsoft", "amazon"} if name == "github" else {name}  # (GitHub lists Azure's blocks)
        for address in (block.network_address, block.broadcast_address):
            assert provider(str(address)) in owners, (block, name)


@pytest.mark.parametrize(
    "mapped, expected",
    [("::ffff:1.178.1.5", "amazon"), ("::FFFF:51.170.128.1", "oracle"), ("::ffff:1b2:105", "amazon"), ("::ffff:81.2.69.160", None)],
)  # fmt: skip
def test_an_ipv4_mapped_ipv6_address_is_looked_up_as_ipv4(mapped, expected):
    assert provider(mapped) == expected  # (::ffff:1b2:105 is ::ffff:1.178.1.5 in hex)


@pytest.mark.parametrize(
    "ip",
    [
        "81.2.69.160",
        "2a02:c7c::1",
        "86.1.2.3",
        "2a00:23c4::1",
        "127.0.0.1",
        "10.0.0.1",
        "192.168.1.1",
        "::1",
        "::",
        "0.0.0.0",
    ],
)
def test_residential_and_private_addresses_are_not_matched(ip):
    address = ipaddress.ip_address(ip)
    assert not any(address in block for block, _ in vendored_blocks())  # (checked against the files themselves)
    assert provider(ip) is None and not is_datacenter(ip)


@pytest.mark.parametrize(
    "garbage",
    ["", " ", "not an ip", "1.178.1", "1.178.1.256", "01.178.1.5", "1.178.1.5 ", " 1.178.1.5", "1.178.1.0/24",
     "1.178.1.5:443", "[2a01:578:0:7a00::1]", "2a01:578:0:7a00::1%eth0", "2a01:578::7a00::1", "1.178.1.5\x00", "\ud800",
     "::ffff:1.178.1.5.6"],
)  # fmt: skip
def test_garbage_is_no_datacenter_and_never_raises(garbage):
    assert provider(garbage) is None
    assert is_datacenter(garbage) is False


def test_no_address_is_no_datacenter():
    assert is_datacenter(None) is False


def test_the_data_has_a_date():
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", datacenters.data_date())


def test_blocks_inside_and_beside_others_flatten_to_ranges_named_by_the_outer_block():
    blocks = [
        (0, 255, "a"), (16, 31, "b"),  # b inside a: a's
        (256, 511, "a"),  # right after a, a's own: one range
        (512, 767, "b"), (512, 767, "a"),  # equal blocks: the first listed names them
        (1024, 1027, "c"), (1028, 1031, "d"),  # adjoining, two providers: two ranges
    ]  # fmt: skip
    assert datacenters._flatten(blocks) == ([0, 512, 1024, 1028], [511, 767, 1027, 1031], ["a", "b", "c", "d"])


# manage.py update_bot_data, the data-centre part


@pytest.fixture
def vendored(tmp_path, monkeypatch):
    """The command's target: a copy of the vendored files (the repository's are never written),
    and of the spam list, which a data-centre refresh must leave alone."""
    target = tmp_path / "vendored"
    shutil.copytree(datacenters.DATA, target)
    monkeypatch.setattr("analytics.management.commands.update_bot_data.DATACENTERS", target)
    spam = tmp_path / "spammers.txt"
    spam.write_text("old.example\n")
    monkeypatch.setattr("analytics.management.commands.update_bot_data.SPAM_LIST", spam)
    return target


@pytest.fixture
def upstream(tmp_path):
    """A directory laid out like lord-alfred/ipranges, made from the vendored files."""
    root = tmp_path / "ipranges"
    for name in datacenters.PROVIDERS:
        (root / name).mkdir(parents=True)
        for file in datacenters.FAMILIES:
            path = datacenters.DATA / name / f"{file}.txt"
            if path.exists():
                shutil.copy(path, root / name / f"{file}_merged.txt")
    return root


def files(directory):
    return {path.relative_to(directory): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def refresh(upstream, *args):
    out = io.StringIO()
    call_command("update_bot_data", "--datacenters", str(upstream), *args, stdout=out)
    return out.getvalue()


def test_the_refresh_writes_every_file_and_the_date(vendored, upstream):
    (vendored / "VERSION").write_text("2000-01-01\n")
    amazon = (upstream / "amazon" / "ipv4_merged.txt").read_text().splitlines()
    (upstream / "amazon" / "ipv4_merged.txt").write_text("\n".join(amazon[:-10]) + "\n")
    out = refresh(upstream)
    assert f"amazon/ipv4.txt: {len(amazon) - 10:,} blocks (were {len(amazon):,})" in out
    assert "15 files refreshed" in out
    assert (vendored / "amazon" / "ipv4.txt").read_text().splitlines() == amazon[:-10]
    assert (vendored / "github" / "ipv6.txt").read_bytes() == (datacenters.DATA / "github" / "ipv6.txt").read_bytes()
    assert (vendored / "VERSION").read_text() == datetime.now(UTC).date().isoformat() + "\n"
    assert not (vendored / "oracle" / "ipv6.txt").exists()  # (only the vendored files are refreshed)
    assert (vendored.parent / "spammers.txt").read_text() == "old.example\n"


@pytest.mark.parametrize("kept", [0, 0.5, 0.79])
def test_a_truncated_file_refuses_the_whole_refresh(vendored, upstream, kept):
    before = files(vendored)
    github = (upstream / "github" / "ipv4_merged.txt").read_text().splitlines()
    (upstream / "github" / "ipv4_merged.txt").write_text(
        "".join(line + "\n" for line in github[: int(len(github) * kept)])
    )
    with pytest.raises(CommandError, match="github/ipv4: "):
        refresh(upstream)
    assert files(vendored) == before


def test_a_big_real_change_passes_with_force(vendored, upstream):
    github = (upstream / "github" / "ipv4_merged.txt").read_text().splitlines()
    (upstream / "github" / "ipv4_merged.txt").write_text("\n".join(github[: len(github) // 2]) + "\n")
    assert f"github/ipv4.txt: {len(github) // 2:,} blocks" in refresh(upstream, "--force")


@pytest.mark.parametrize(
    "file, line",
    [("vultr/ipv4_merged.txt", "<html>429 Too Many Requests</html>"), ("vultr/ipv4_merged.txt", "45.63.44.0/33"),
     ("vultr/ipv4_merged.txt", "45.63.44.1/24"), ("vultr/ipv4_merged.txt", "2001:10::/28"), ("vultr/ipv6_merged.txt", "45.63.44.0/24")],
)  # fmt: skip
def test_a_malformed_line_refuses_the_whole_refresh(vendored, upstream, file, line):
    before = files(vendored)
    with (upstream / file).open("a") as f:
        f.write(line + "\n")
    with pytest.raises(CommandError, match="not ipv[46] CIDR blocks"):
        refresh(upstream, "--force")  # (--force accepts a count, never a bad line)
    assert files(vendored) == before


def test_a_missing_file_refuses_the_whole_refresh(vendored, upstream):
    before = files(vendored)
    (upstream / "linode" / "ipv6_merged.txt").unlink()
    with pytest.raises(CommandError, match="ipv6_merged.txt"):
        refresh(upstream)
    assert files(vendored) == before


def test_only_spam_with_a_datacenter_source_is_refused(vendored, upstream):
    with pytest.raises(CommandError, match="--only spam"):
        refresh(upstream, "--only", "spam")


def test_no_vendored_block_is_a_reserved_or_documentation_range():
    """Vultr's feed lists 192.0.2.0/24 and the other documentation ranges: kept, they would
    drop every test and example address as a data centre's (the refresh leaves them out)."""
    reserved = [
        line
        for path in datacenters.DATA.glob("*/ipv*.txt")
        for line in path.read_text(encoding="utf-8").split()
        if not ipaddress.ip_network(line).is_global
    ]
    assert reserved == []
