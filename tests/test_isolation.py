"""A test run keeps to what is its own: its test database, this machine, a deadline per test, and any order."""

from __future__ import annotations

import socket

import pytest
from pytest_socket import SocketConnectBlockedError

from tests.conftest import own_database, pytest_collection_modifyitems


@pytest.mark.parametrize(
    "name", ["test_hatlab_test_123", "/tmp/test_demo.sqlite3", ":memory:", None, "postgres"]
)
def test_a_run_may_use_its_test_database(name):
    assert own_database(name)


@pytest.mark.parametrize(
    "name", ["hatlab", "hatlab_test", "/srv/hatlab/demo.sqlite3", "production_test_copy"]
)
def test_a_run_may_not_use_a_real_database(name):
    assert not own_database(name)


def test_no_connection_leaves_this_machine():
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("192.0.2.1", 443), timeout=0.1)  # TEST-NET-1: refused before any packet


def test_this_machine_is_reachable():
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname(), timeout=1):
        pass


def test_every_test_has_a_deadline(pytestconfig):
    assert float(pytestconfig.getini("timeout")) > 0


def test_reverse_runs_the_collected_order_backwards():
    class Config:
        def __init__(self, reverse: bool) -> None:
            self.reverse = reverse

        def getoption(self, name: str) -> bool:
            assert name == "--reverse"
            return self.reverse

    items = ["a", "b", "c"]
    pytest_collection_modifyitems(Config(False), items)
    assert items == ["a", "b", "c"]
    pytest_collection_modifyitems(Config(True), items)
    assert items == ["c", "b", "a"]
