"""Fixtures: clients of a running system whose addresses and tokens come from ONTOLOOP_TEST_*
variables. tests/tests/python_client.rs (cargo test -p ontoloop-tests --test python_client)
starts the system, loads the world these tests expect and sets them:

- ONTOLOOP_TEST_{RETRIEVAL,FIREWALL,TELEMETRY,ANALYST}: a system with auth.mode = "jwt";
- ONTOLOOP_TEST_TOKEN: an agent + integration token of ONTOLOOP_TEST_TENANT /
  ONTOLOOP_TEST_PRINCIPAL for it; ONTOLOOP_TEST_FORGED_TOKEN: the same claims, another secret;
- ONTOLOOP_TEST_OPEN_{RETRIEVAL,...}: a system with auth off (the request's caller is trusted),
  serving mTLS only: ONTOLOOP_TEST_OPEN_CA_FILE is its CA, ONTOLOOP_TEST_OPEN_CLIENT_{CERT,KEY}
  a client certificate it accepts.
"""

import os

import pytest

from ontoloop_client import Client

SERVICES = ("RETRIEVAL", "FIREWALL", "TELEMETRY", "ANALYST")


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(
            f"{name} is not set: these tests run against a running system; run them with "
            "`cargo test -p ontoloop-tests --test python_client`",
            pytrace=False,
        )
    return value


def urls(prefix: str) -> dict:
    """The four addresses of one system, as Client's arguments."""
    retrieval, firewall, telemetry, analyst = (env(f"{prefix}_{s}") for s in SERVICES)
    return {"url": retrieval, "firewall": firewall, "telemetry": telemetry, "analyst": analyst}


@pytest.fixture
def secured() -> dict:
    """Client arguments for the system with authentication on, without a token."""
    return urls("ONTOLOOP_TEST")


@pytest.fixture
def token() -> str:
    """The agent + integration token."""
    return env("ONTOLOOP_TEST_TOKEN")


@pytest.fixture
def client(secured, token):
    with Client(token=token, **secured) as c:
        yield c


@pytest.fixture
def open_system() -> dict:
    """Client arguments for the system with authentication off (https:// URLs), without the
    TLS files."""
    return urls("ONTOLOOP_TEST_OPEN")


@pytest.fixture
def open_tls() -> dict:
    """The TLS arguments the open system accepts: its CA and a client certificate."""
    return {
        "ca_file": env("ONTOLOOP_TEST_OPEN_CA_FILE"),
        "client_cert_file": env("ONTOLOOP_TEST_OPEN_CLIENT_CERT"),
        "client_key_file": env("ONTOLOOP_TEST_OPEN_CLIENT_KEY"),
    }


@pytest.fixture
def tenant() -> str:
    return env("ONTOLOOP_TEST_TENANT")


@pytest.fixture
def principal() -> str:
    return env("ONTOLOOP_TEST_PRINCIPAL")


@pytest.fixture
def forged_token() -> str:
    return env("ONTOLOOP_TEST_FORGED_TOKEN")
