"""The SSH line a provider shows, pasted whole (or typed short), read into user, address, port and key."""

from __future__ import annotations

import pytest

from fleet.workflows.pod_entry import derive_name
from fleet.workflows.ssh_line import Target, parse_target
from fleet.errors import InputError


@pytest.fixture
def key(isolated_home):
    path = isolated_home / ".ssh" / "id_ed25519"
    path.parent.mkdir()
    path.write_text("not a real key; only its existence is checked here\n")
    return path


GOOD = [
    # line as pasted                                                  user    address          port   key
    ("ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519",          "root", "203.0.113.10", 17322, "~/.ssh/id_ed25519"),
    ("ssh -i ~/.ssh/id_ed25519 -p 17322 root@203.0.113.10",          "root", "203.0.113.10", 17322, "~/.ssh/id_ed25519"),
    ("$ ssh root@203.0.113.10 -p17322 -i~/.ssh/id_ed25519",          "root", "203.0.113.10", 17322, "~/.ssh/id_ed25519"),
    ("ssh -o StrictHostKeyChecking=no root@203.0.113.10 -p 17322",   "root", "203.0.113.10", 17322, None),
    ("ssh -tt -o 'Port 2200' ubuntu@pod.example.com",                "ubuntu", "pod.example.com", 2200, None),
    ("ssh -l ubuntu 198.51.100.7",                                   "ubuntu", "198.51.100.7", 22, None),
    ("/usr/bin/ssh root@198.51.100.7 -p 22",                         "root", "198.51.100.7", 22, None),
    ("root@203.0.113.10:17322",                                      "root", "203.0.113.10", 17322, None),
    ("203.0.113.10",                                                 "root", "203.0.113.10", 22, None),
    ("ssh://admin@[2001:db8::7]:2222",                               "admin", "2001:db8::7", 2222, None),
    ("root@2001:db8::7",                                             "root", "2001:db8::7", 22, None),
    ("ssh root@203.0.113.10 \\\n  -p 17322",                          "root", "203.0.113.10", 17322, None),
]


@pytest.mark.parametrize("line,user,address,port,key_text", GOOD)
def test_reads_the_lines_providers_show(line, user, address, port, key_text, key):
    target = parse_target(line)
    assert (target.user, target.address, target.port, target.key) == (user, address, port, key_text)


def test_ignored_options_are_noted_not_dropped_silently():
    target = parse_target("ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -t root@203.0.113.10")
    assert any("StrictHostKeyChecking=no" in n for n in target.notes)
    assert any("-t" in n for n in target.notes)


def test_fleet_flags_may_repeat_the_line_but_not_contradict_it(key):
    assert parse_target("root@203.0.113.10:17322", port=17322).port == 17322
    assert parse_target("root@203.0.113.10", port=2200, key="~/.ssh/id_ed25519").key == "~/.ssh/id_ed25519"
    with pytest.raises(InputError, match="17322.*2200"):
        parse_target("ssh root@203.0.113.10 -p 17322", port=2200)


def test_a_relative_key_is_made_absolute(tmp_path):
    (tmp_path / "pod.key").write_text("x")
    assert parse_target("root@203.0.113.10 -i pod.key", cwd=tmp_path).key == str(tmp_path / "pod.key")


BAD = [
    ("", "no host"),
    ("ssh", "no host"),
    ("ssh -p 17322", "no host"),
    ("ssh root@203.0.113.10 -p", "-p .* has no value"),
    ("ssh root@203.0.113.10 -p http", "port 'http'"),
    ("ssh root@203.0.113.10 -p 70000", "port '70000'"),
    ("root@203.0.113.10:", "port ''"),
    ("ssh root@203.0.113.10 nvidia-smi", "runs a command"),
    ("ssh -J jump@198.51.100.1 root@10.0.0.5", r"jump host .*~/\.ssh/config .*ProxyJump"),
    # options that route the connection elsewhere: never ignored (that would connect straight to the address)
    ("ssh -o ProxyJump=jump@198.51.100.1 root@10.0.0.5", r"-o ProxyJump=jump@198\.51\.100\.1, which changes where"),
    ("ssh -oProxyJump=jump@198.51.100.1 root@10.0.0.5", r"ProxyJump.*~/\.ssh/config"),
    ("ssh -o 'ProxyCommand ssh -W %h:%p jump' root@10.0.0.5", r"-o ProxyCommand ssh -W %h:%p jump, which changes where"),
    ("ssh -o HostName=198.51.100.7 root@10.0.0.5", r"-o HostName=198\.51\.100\.7, which changes where"),
    ("ssh -o hostname=198.51.100.7 root@10.0.0.5", r"hostname=198\.51\.100\.7, which changes where"),
    ("ssh -Z root@203.0.113.10", "unknown ssh option -Z"),
    ("ssh 'root@203.0.113.10", "single quotes"),
    ("ssh root@bad_host!", "not a host name"),
    ("ssh 'ro ot'@203.0.113.10", "not a user name"),
    ("ssh root@203.0.113.10 -p 1 -p 2", "two ports"),
    ("ssh root@203.0.113.10 -i /nonexistent/key", "key file '/nonexistent/key' does not exist"),
    # RunPod's basic (proxied) SSH: no SCP/SFTP, a shell only (docs.runpod.io/pods/configuration/use-ssh)
    ("ssh 8yyqbbs9xz8xbc-64410f8e@ssh.runpod.io -i ~/.ssh/id_ed25519", r"RunPod's proxied SSH line .*exposed TCP.*"
                                                                       r"ssh root@IP -p PORT"),
    ("ssh abc-123@SSH.RunPod.io", "RunPod's proxied SSH line"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_a_bad_line_is_one_sentence_naming_what_is_wrong(line, message):
    with pytest.raises(InputError, match=message) as info:
        parse_target(line)
    assert info.value.exit_status == 2
    assert "\n" not in str(info.value)


def test_the_connect_line_reads_back_as_the_same_target(key):
    target = parse_target("ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519")
    assert target.ssh_line() == "ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519"
    again = parse_target(target.ssh_line())
    assert (again.user, again.address, again.port, again.key) == (target.user, target.address, target.port, target.key)


@pytest.mark.parametrize("address,port,taken,name", [
    ("203.0.113.10", 17322, set(), "pod-10-17322"),
    ("127.0.2.13", 22, set(), "pod-13"),
    ("203.0.113.10", 17322, {"pod-10-17322"}, "pod-10-17322-2"),
    ("203.0.113.10", 17322, {"pod-10-17322", "pod-10-17322-2"}, "pod-10-17322-3"),
    ("gpu-7.example.com", 2200, set(), "gpu-7-2200"),
    ("2001:db8::7", 22, set(), "pod-7"),
])
def test_derived_names_are_unique_and_valid(address, port, taken, name):
    assert derive_name(Target("root", address, port), taken) == name
