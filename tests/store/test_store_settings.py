"""Where the store is: --store > FLEET_STORE > the inventory's store: > SQLite beside the facts records; a URL
with a password is refused wherever it is written, with where to put the password instead."""

import pytest

from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.store import settings


def inventory(tmp_path, store_text=""):
    path = tmp_path / "inv.yaml"
    path.write_text(f"{store_text}\nhosts:\n  desk: {{connection: local}}\n")
    return path


def test_default_is_sqlite_beside_the_facts_records(tmp_path):
    inv = load_inventory(inventory(tmp_path))
    assert settings(inv, env={}).url == f"sqlite:///{tmp_path / 'facts' / 'history.sqlite3'}"


def test_the_inventory_names_the_store_relative_to_itself(tmp_path):
    inv = load_inventory(inventory(tmp_path, "store: {url: 'sqlite:///db/h.sqlite3', expire_after: 1d, retain: 30d}"))
    got = settings(inv, env={})
    assert (got.url, got.expire_after, got.retain) == (f"sqlite:///{tmp_path / 'db' / 'h.sqlite3'}", 86400, 30 * 86400)
    assert settings(inv, env={"FLEET_STORE": "postgresql://fleet@db.example/fleet"}).url == \
        "postgresql://fleet@db.example/fleet"
    assert settings(inv, url="sqlite:////var/x.db", env={"FLEET_STORE": "sqlite:////y"}).url == "sqlite:////var/x.db"


def test_a_password_in_the_inventory_is_refused_at_its_line(tmp_path):
    path = inventory(tmp_path, "# the team's store\nstore: postgresql://fleet:hunter2@db.example/fleet")
    with pytest.raises(InputError) as caught:
        load_inventory(path)
    message = str(caught.value)
    assert f"{path}:2:" in message and "~/.pgpass" in message and "PGSERVICEFILE" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("url", ["postgresql://fleet:pw@db/fleet", "postgresql://db/fleet?password=pw"])
def test_a_password_in_the_environment_or_a_flag_is_refused(url):
    with pytest.raises(InputError, match="carries a password; remove it and put it where libpq reads it"):
        settings(None, env={"FLEET_STORE": url})
    with pytest.raises(InputError, match="^--store: the store URL carries a password"):
        settings(None, url=url, env={})


@pytest.mark.parametrize("text, says", [
    ("store: mysql://db/fleet", "is not a store URL"),
    ("store: {url: 'sqlite:///h.db', keep: 3d}", "store has no setting 'keep'"),
    ("store: {expire_after: soon}", "store expire_after: 'soon' is not a duration"),
])
def test_bad_store_settings_name_their_line(tmp_path, text, says):
    with pytest.raises(InputError, match=says):
        load_inventory(inventory(tmp_path, text))
