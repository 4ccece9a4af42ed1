"""The OpenID Connect provider fixture: tests/oidc_provider/serve.py in a subprocess on a
free port of 127.0.0.1, stopped after the test."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID, CLIENT_SECRET = "tally-test-client", "tally-test-secret-0123456789"
REDIRECT_URI = "http://testserver/oidc/callback/"


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory):
    """The provider's issuer URL (its accounts: ana, bo, and unverified-cy)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "OIDC_PROVIDER_DB": str(tmp_path_factory.mktemp("oidc") / "provider.sqlite3"),
        "OIDC_PROVIDER_KEY": pem,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_provider.serve", str(port), REDIRECT_URI, CLIENT_ID, CLIENT_SECRET],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}/o"
    finally:
        process.terminate()
        process.wait(10)
