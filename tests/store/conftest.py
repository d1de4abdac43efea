"""The store's tests run on both engines: SQLite in the test's directory, and a real PostgreSQL (a temporary
cluster on a Unix socket, one per test session; a new database per test)."""

import itertools

import pytest

_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg_cluster():
    from fleet_lab.postgres import TempCluster

    cluster = TempCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite3'}"
    return request.getfixturevalue("pg_cluster").database(f"t{next(_numbers)}")
