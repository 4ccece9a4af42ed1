"""A MaxMind DB (.mmdb) writer just big enough for tests: maps, arrays, strings, doubles.

The format (maxmind.github.io/MaxMind-DB): a binary search tree over the address bits,
each node two 24-bit records (another node, "no data", or a pointer into the data
section), 16 zero bytes, the data section, then a marker and a metadata map. The tree is
an IPv6 one; IPv4 networks sit at ::a.b.c.d, where readers look them up.
"""

import ipaddress
import struct
import time

METADATA_MARKER = b"\xab\xcd\xefMaxMind.com"
UINT16, UINT32, UINT64 = 5, 6, 9


def write_mmdb(path, networks: dict[str, dict]) -> None:
    data = bytearray()
    root = [None, None]
    for network, record in networks.items():
        net = ipaddress.ip_network(network)
        bits, depth = int(net.network_address), net.prefixlen + (96 if net.version == 4 else 0)
        node = root
        for i in range(depth - 1):
            bit = bits >> (127 - i) & 1
            if not isinstance(node[bit], list):
                node[bit] = [None, None]
            node = node[bit]
        node[bits >> (128 - depth) & 1] = len(data)  # an int: an offset into the data section
        data += _encode(record)
    nodes = [root]
    for node in nodes:  # breadth first, so the root is node 0
        nodes.extend(child for child in node if isinstance(child, list))
    index = {id(node): i for i, node in enumerate(nodes)}

    def record_value(child):
        if child is None:
            return len(nodes)
        if isinstance(child, list):
            return index[id(child)]
        return len(nodes) + 16 + child

    tree = b"".join(
        record_value(left).to_bytes(3, "big") + record_value(right).to_bytes(3, "big") for left, right in nodes
    )
    metadata = {
        "binary_format_major_version": (UINT16, 2),
        "binary_format_minor_version": (UINT16, 0),
        "build_epoch": (UINT64, int(time.time())),
        "database_type": "Tally-Test-City",
        "description": {"en": "Tally's test city database"},
        "ip_version": (UINT16, 6),
        "languages": ["en"],
        "node_count": (UINT32, len(nodes)),
        "record_size": (UINT16, 24),
    }
    with open(path, "wb") as f:
        f.write(tree + bytes(16) + data + METADATA_MARKER + _encode(metadata))


def _encode(value) -> bytes:
    if isinstance(value, dict):
        return _control(7, len(value)) + b"".join(_encode(k) + _encode(v) for k, v in value.items())
    if isinstance(value, list):
        return _control(11, len(value)) + b"".join(_encode(v) for v in value)
    if isinstance(value, str):
        raw = value.encode()
        return _control(2, len(raw)) + raw
    if isinstance(value, float):
        return _control(3, 8) + struct.pack(">d", value)
    if isinstance(value, tuple):  # (type, unsigned integer)
        kind, number = value
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return _control(kind, len(raw)) + raw
    raise TypeError(f"cannot encode {type(value).__name__}")


def _control(kind: int, size: int) -> bytes:
    """The control byte: type in the top 3 bits (7 and up: 0, then the type less 7 in the next byte), size in the low 5."""
    assert size < 285, "longer values need the 2- and 3-byte size forms"
    extra = bytes([size - 29]) if size >= 29 else b""
    size = min(size, 29)
    if kind <= 7:
        return bytes([kind << 5 | size]) + extra
    return bytes([size, kind - 7]) + extra
