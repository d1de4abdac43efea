"""verify's copy-engine bandwidths (issue 48 item 2): the floors the role hands the program (fleet/knowledge/
copy_floors.py, Azure's figures) and the program's judgement of every GPU and every ordered pair, naming what falls
short and why from the topology `nvidia-smi topo -m` prints (the real layouts, tests/data/fabric). The copies
themselves need GPUs: bench/h200/copies.sh on the lent H200s; tests/unit/test_h200_copies_records.py loads what it
recorded."""

import pytest

from fleet.remote.verify import copies, links

from test_verify_links import load, program  # noqa: F401  (the role's rendered config, a stand-in nvidia-smi)

H200_HOST = {"index": 0, "h2d_gbs": 55.5, "d2h_gbs": 55.3}   # the lent H200's pinned 1 GiB copies (captured)


def figures(n, pair=lambda src, dst: (370.0, 360.0), host=(55.5, 55.3)):
    return {"gpus": [{"index": i, "h2d_gbs": host[0], "d2h_gbs": host[1]} for i in range(n)],
            "pairs": [{"src": s, "dst": d, "read_gbs": pair(s, d)[0], "write_gbs": pair(s, d)[1]}
                      for s in range(n) for d in range(n) if s != d]}


def test_the_role_hands_the_program_azures_floors(program):  # noqa: F811
    rows = {row["match"]: row for row in program["copy_table"]}
    assert rows["H200"]["pair_read_floor_gbs"] == 335.0 and rows["H200"]["host_floor_gbs"] == 48.0
    assert "nd96isr_h200_v5.conf" in rows["H200"]["source"]
    assert rows["H100"]["host_floor_gbs"] == 52.0 and list(rows)[0] == "H100 PCIe"   # first match wins


def _judge(program, tmp_path, monkeypatch, topo, name, figs):  # noqa: F811
    v = load(program, tmp_path, monkeypatch, topo)
    copies.judge(v, figs, v.config.copy_row(name), links.topology())
    return {c["name"]: c for c in v.checks}


def test_one_h200_as_captured_passes_its_host_copies(program, tmp_path, monkeypatch):  # noqa: F811
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H200",
                    {"gpus": [H200_HOST], "pairs": []})
    assert list(checks) == ["copies_host"] and checks["copies_host"]["passed"]
    assert "lowest 55.3 GB/s, floor 48" in checks["copies_host"]["detail"]


def test_eight_nv18_gpus_at_their_figures_pass(program, tmp_path, monkeypatch):  # noqa: F811
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H200", figures(8))
    assert checks["copies_pairs"]["passed"] and "56 ordered pairs" in checks["copies_pairs"]["detail"]


def test_a_gpu_off_the_fabric_names_its_pairs_on_pcie(program, tmp_path, monkeypatch):  # noqa: F811
    slow = lambda s, d: (48.0, 47.0) if 3 in (s, d) else (370.0, 360.0)
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-gpu3-off.txt", "NVIDIA H100 80GB HBM3", figures(8, slow))
    detail = checks["copies_pairs"]["detail"]
    assert not checks["copies_pairs"]["passed"]
    assert "GPU 0 -> GPU 3 read 48 GB/s under 335: the pair is on PCIe (NODE in nvidia-smi topo -m)" in detail
    assert "(and 20 more)" in detail   # 14 ordered pairs, read and write: 28 shortfalls, 8 named


def test_a_gpu_short_with_every_peer_is_named_not_each_pair(program, tmp_path, monkeypatch):  # noqa: F811
    slow = lambda s, d: (120.0, 110.0) if 5 in (s, d) else (370.0, 360.0)
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H200", figures(8, slow))
    assert "GPU 5 is short with every peer: its NVLinks" in checks["copies_pairs"]["detail"]


def test_one_slow_nvlink_pair(program, tmp_path, monkeypatch):  # noqa: F811
    slow = lambda s, d: (200.0, 360.0) if (s, d) == (1, 6) else (370.0, 360.0)
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H200", figures(8, slow))
    assert checks["copies_pairs"]["detail"] == ("GPU 1 -> GPU 6 read 200 GB/s under 335: an NVLink pair (NV18) slower "
                                                "than it should be (Azure azurehpc-health-checks conf/nd96isr_h200_v5."
                                                "conf: check_gpu_bw 48 335)")


@pytest.mark.parametrize("h2d, d2h, passed", [(55.5, 55.3, True), (48.0, 48.0, True), (26.1, 25.9, False)])
def test_host_copies_against_the_floor(program, tmp_path, monkeypatch, h2d, d2h, passed):  # noqa: F811
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H200",
                    figures(2, host=(h2d, d2h)))
    assert checks["copies_host"]["passed"] is passed
    if not passed:
        assert "GPU 0 host-to-device 26.1 GB/s; GPU 0 device-to-host 25.9 GB/s; GPU 1" in checks["copies_host"]["detail"]
        assert "PCIe link trained down" in checks["copies_host"]["detail"]


def test_a_pcie_card_has_no_pair_floor(program, tmp_path, monkeypatch):  # noqa: F811
    slow = lambda s, d: (40.0, 40.0)
    checks = _judge(program, tmp_path, monkeypatch, "topo-8-nv18.txt", "NVIDIA H100 PCIe", figures(2, slow))
    assert checks["copies_pairs"]["passed"] and "no floor known" in checks["copies_pairs"]["detail"]


class _Buf:
    """What copies.measure asks of a tensor, logging each copy (no GPU here: the order and the shape, not speed)."""

    def __init__(self, log, where):
        self.log, self.where = log, where

    def __getitem__(self, _):
        return self

    def copy_(self, other, non_blocking=False):
        self.log.append(("copy", other.where, self.where))

    def data_ptr(self):
        return id(self)


def _torch(log):
    import contextlib
    import types

    def empty(size, dtype=None, pin_memory=False, device=None):
        return _Buf(log, device or "host")
    cuda = types.SimpleNamespace(device=lambda i: contextlib.nullcontext(), synchronize=lambda d=None: None,
                                 current_stream=lambda i: types.SimpleNamespace(cuda_stream=0))
    return types.SimpleNamespace(empty=empty, uint8="uint8", cuda=cuda)


def test_every_peer_access_is_enabled_before_the_first_read(monkeypatch):
    """The reads pull over peer access torch enables at a first copy in each direction: all of those come before the
    first read, else the driver stages the early pairs' reads through the host and they read as PCIe."""
    log = []
    monkeypatch.setattr(copies, "_driver_copy", lambda: lambda dst, src, size, stream: log.append(("read",)) or 0)
    figures = copies.measure(_torch(log), 3, 64 << 20)
    assert [g["index"] for g in figures["gpus"]] == [0, 1, 2]
    assert [(p["src"], p["dst"]) for p in figures["pairs"]] == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert all(p["read_gbs"] and p["write_gbs"] for p in figures["pairs"])
    first_read = log.index(("read",))
    enabled = {(src, dst) for kind, *rest in log[:first_read] if kind == "copy"
               for src, dst in [rest] if src != "host" and dst != "host"}
    assert enabled == {(f"cuda:{s}", f"cuda:{d}") for s in range(3) for d in range(3) if s != d}
