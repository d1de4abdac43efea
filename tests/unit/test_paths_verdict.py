"""Every path the probe judges comes back with a verdict the controller reads, and a path with no verdict is never
trusted (issue 49, round three's leftover: a path with a newline was refused on the host, but its answer's line
split at the newline, the controller found no verdict, and no verdict counted as trusted)."""

import subprocess

import pytest

from fleet.engine.decided import refuse_untrusted_paths
from fleet.errors import HostError
from fleet.facts import paths
from fleet.facts.sources import BY_NAME
from fleet.inventory import Host
from fleet.shell import define


def test_a_path_with_a_newline_or_tab_gets_its_own_verdict_line(tmp_path):
    """The probe's text run by a real bash (fleet_trust as it ships): one line per path, each path read back as it
    was asked, the newline's refusal its verdict."""
    odd = [f"{tmp_path}/a\nb", f"{tmp_path}/tab\there", f"{tmp_path}/back\\slash\\n"]
    out = subprocess.run(["bash"], input=define(BY_NAME["paths"].needs) + paths.command(["/", *odd]), capture_output=True, text=True).stdout
    assert len(out.splitlines()) == 4, out
    found = paths.parse(out)
    assert set(found) == {"/", *odd}
    assert found[odd[0]] == f"{tmp_path}/a... has a newline in its name"


def test_no_verdict_is_never_trusted():
    host = Host("pod", address="10.0.0.1")
    with pytest.raises(HostError, match=r"python_env /opt/fleet/venv is not safe to run as root: the probe gave no "
                                        r"verdict for it"):
        refuse_untrusted_paths(host, {"python_env": "/opt/fleet/venv"}, {"paths": {"/opt/cutlass": None}})
    refuse_untrusted_paths(host, {"python_env": "/opt/fleet/venv"},            # a verdict each: trusted
                           {"paths": {"/opt/fleet/venv": None, "/opt/cutlass": None}})
