"""`fleet serve`'s ingest, over real HTTP (aiohttp's test server on a loopback port), into both engines: a good
report is stored once however often it is sent; every hostile one is refused with a sentence, or stored inert."""

import asyncio
import json
import time
import uuid

import pytest

from fleet.store import open_store, query
from fleet.store.serve import ROUTE, make_app
from store_helpers import record

TOKEN = "t0ken-for-the-tests-0123456789"


def sent(host="pod-a", **change):
    report = {"schema": 1, "report_id": uuid.uuid4().hex, "host": host, "kind": "script",
              "at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "fleet_version": "0.1.0",
              "status": "ok", "exit": 0, "changed": 0, "facts": record(host)}
    report.update(change)
    return report


def post_all(store, bodies, *, token=TOKEN, content_type="application/json"):
    """Each body POSTed in turn: [(status, answer)]."""
    from aiohttp import ClientSession
    from aiohttp.test_utils import TestServer

    async def go():
        server = TestServer(make_app(store, TOKEN, retain=30 * 86400), host="127.0.0.1")
        await server.start_server()
        answers = []
        try:
            async with ClientSession() as session:
                for body in bodies:
                    data = body if isinstance(body, bytes) else json.dumps(body).encode()
                    headers = {"Content-Type": content_type}
                    if token is not None:
                        headers["Authorization"] = f"Bearer {token}"
                    async with session.post(server.make_url(ROUTE), data=data, headers=headers) as answer:
                        answers.append((answer.status, await answer.json()))
        finally:
            await server.close()
        return answers

    return asyncio.run(go())


@pytest.fixture
def store(store_url):
    with open_store(store_url) as opened:
        yield opened


def stored(store):
    return store.rows("SELECT COUNT(*) FROM reports")[0][0]


def test_a_report_is_stored_once_however_often_it_is_sent(store):
    report = sent()
    answers = post_all(store, [report, report, sent()])
    assert answers == [(200, {"outcome": "stored"}), (200, {"outcome": "duplicate"}),
                       (200, {"outcome": "unchanged"})]
    assert stored(store) == 1
    (row,) = query.hosts(store)
    assert (row.host, row.kind, row.status) == ("pod-a", "script", "ok")


@pytest.mark.parametrize("token", [None, "", "wrong-token-0123456789", TOKEN + "x", TOKEN[:-1]])
def test_no_or_a_wrong_token_is_refused(store, token):
    ((status, answer),) = post_all(store, [sent()], token=token)
    assert status == 401 and "token" in answer["error"]
    assert stored(store) == 0


def test_an_oversized_report_is_refused_before_it_is_stored(store):
    big = sent()
    big["facts"]["padding"] = "x" * (600 * 1024)
    ((status, answer),) = post_all(store, [big])
    assert status == 413 and "at most" in answer["error"]
    assert stored(store) == 0


@pytest.mark.parametrize("change, says", [
    ({"schema": 2}, "schema must be 1"),
    ({"extra": "field"}, "unknown field(s) 'extra'"),
    ({"host": "../../etc/passwd"}, "host '../../etc/passwd' is not valid"),
    ({"host": "pod\x1b[31m"}, "is not valid"),
    ({"report_id": "short"}, "report_id 'short' is not valid"),
    ({"kind": "<script>"}, "kind '<script>' is not one of"),
    ({"status": "ok; rm -rf /"}, "status 'ok; rm -rf /' is not one of"),
    ({"exit": "0"}, "exit must be a whole number"),
    ({"at": "yesterday"}, "is not an ISO 8601 time"),
    ({"at": "2999-01-01T00:00:00+00:00"}, "lies more than a day ahead"),
    ({"at": "2001-01-01T00:00:00+00:00"}, "older than the store keeps history"),
    ({"facts": ["not", "a", "mapping"]}, "facts must be a JSON object"),
])
def test_a_report_of_the_wrong_shape_is_refused_with_its_sentence(store, change, says):
    ((status, answer),) = post_all(store, [sent(**change)])
    assert status == 422 and says in answer["error"]
    assert stored(store) == 0


def test_a_report_naming_another_host_is_refused(store):
    other = sent("pod-a")
    other["facts"]["host"] = "pod-b"
    verify_other = sent("pod-a")
    verify_other["facts"]["verify"] = {"host": "pod-b", "passed": True}
    answers = post_all(store, [other, verify_other])
    assert [status for status, _ in answers] == [422, 422]
    assert all("names another host" in answer["error"] for _, answer in answers)
    assert stored(store) == 0


def test_bodies_that_are_not_json_reports_are_refused(store):
    deep = b"[" * 100_000 + b"]" * 100_000
    nested = sent()
    nested["facts"]["a"] = json.loads("[" * 40 + "1" + "]" * 40)
    answers = post_all(store, [b"not json", b"[1, 2]", deep, nested])
    assert [status for status, _ in answers] == [400, 422, 400, 422]
    assert "deeper than" in answers[3][1]["error"]
    ((status, _),) = post_all(store, [sent()], content_type="text/plain")
    assert status == 415
    assert stored(store) == 0


def test_escapes_and_markup_in_every_field_are_stored_as_sent_and_printed_inert(store, tmp_path, monkeypatch):
    hostile = "\x1b]0;owned\x07\x1b[2J[bold red]<b>x</b>[/] $(reboot) `id` ${IFS}\u202e\u009b31m"
    report = sent("pod-a", fleet_version=hostile[:60])
    report["facts"]["driver"]["version"] = hostile
    report["facts"]["health"] = {"verdict": hostile, "reason": hostile}
    report["facts"]["verify"] = {"passed": hostile, "summary": hostile}
    report["facts"][hostile] = hostile
    assert post_all(store, [report]) == [(200, {"outcome": "stored"})]
    (row,) = query.hosts(store)
    assert row.shown == {"verify": hostile, "health": hostile, "driver": hostile}     # kept exactly: data

    from tests_cli import fleet_facts
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n  desk: {connection: local}\n")
    monkeypatch.setenv("FLEET_STORE", store.url)
    for argv in (["--where", "host != x"], ["--stale", "0s"], ["--since", "1d"], ["--history", "pod-a"]):
        code, out, err = fleet_facts(tmp_path, inventory, *argv, "--where", "status == ok")
        assert code == 0 and "pod-a" in out
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\u009b" not in text
        if argv[0] in ("--where", "--stale"):
            assert "[bold red]<b>x</b>[/]" in out     # markup printed as the characters it is
    code, out, _ = fleet_facts(tmp_path, inventory, "--history", "pod-a", "--json")
    assert "\x1b" not in out and json.loads(out)["history"][0]["driver"] == hostile


def _framed(name, body, rc=0):
    return f"\n@@fleet:begin {name}@@\n{body}\n@@fleet:end {name} {rc}@@\n"


def _h200_health_sections(gpu_name="NVIDIA H200"):
    """The health sections as a pod's start script sends them: the captured H200's query row (its name replaceable)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
    from test_facts_health import H200_SECTION

    return _framed("facts.health", H200_SECTION.replace("NVIDIA H200", gpu_name)) + _framed("facts.kernel_gpus", "")


def test_a_pods_health_sections_are_judged_as_fleet_health_judges_them_and_the_text_not_kept(store):
    """Issue 46: a pod's report carries its GPU health; `fleet facts` shows the verdict fleet health gives."""
    from fleet import sections
    from fleet.workflows.health import read

    text = _h200_health_sections()
    report = sent("pod-a")
    report["facts"].pop("health", None)
    report["facts"]["health_sections"] = text
    assert post_all(store, [report]) == [(200, {"outcome": "stored"})]
    verdict, found = read(sections.split_sections(text))           # what `fleet health` gives for that output
    (row,) = query.hosts(store)
    assert row.shown["health"] == verdict.verdict == "healthy"
    (document,) = [r[0] for r in store.rows("SELECT document FROM reports")]
    kept = document if isinstance(document, dict) else json.loads(document)
    assert "health_sections" not in kept and "@@fleet:begin" not in json.dumps(kept)
    assert kept["health"]["findings"] == verdict.to_json()["findings"] and kept["health"]["findings"]
    assert kept["health"]["gpus"][0]["name"] == "NVIDIA H200" == found["health"]["gpus"][0]["name"]


@pytest.mark.parametrize("sections_text, says", [
    ({"verdict": "healthy"}, "facts.health_sections must be the health sections' text"),
    ("x" * (256 * 1024 + 1), "facts.health_sections must be the health sections' text, at most 262144"),
])
def test_health_sections_of_the_wrong_kind_are_refused(store, sections_text, says):
    report = sent("pod-a")
    report["facts"]["health_sections"] = sections_text
    ((status, answer),) = post_all(store, [report])
    assert status == 422 and says in answer["error"]
    assert stored(store) == 0


def test_escapes_and_markup_in_a_pods_health_output_are_kept_as_data_and_printed_inert(store, tmp_path, monkeypatch):
    hostile = "\x1b]0;owned\x07\x1b[2J[bold red]<b>x</b>[/] $(reboot) `id`\u202e"
    report = sent("pod-a")
    report["facts"]["health_sections"] = _h200_health_sections(hostile) + "\x1b[2J@@fleet:end \x07 [/]\n"
    assert post_all(store, [report]) == [(200, {"outcome": "stored"})]
    (document,) = [r[0] for r in store.rows("SELECT document FROM reports")]
    kept = document if isinstance(document, dict) else json.loads(document)
    assert kept["health"]["gpus"][0]["name"] == hostile                  # data, exactly as the pod's output said

    from tests_cli import fleet_facts
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n  desk: {connection: local}\n")
    monkeypatch.setenv("FLEET_STORE", store.url)
    for argv in (["--where", "health.verdict == healthy"], ["--history", "pod-a"]):
        code, out, err = fleet_facts(tmp_path, inventory, *argv)
        assert code == 0 and "pod-a" in out
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
