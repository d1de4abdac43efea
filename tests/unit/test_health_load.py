"""GPU health under load (issue 36): verify's samples of the link and clock-event reasons while every GPU works, the
bandwidths against the platform row's floors, and the verdict that reads them. The rows are nvidia-smi's real layout
(the lent H200's values, tests/data/captured/h200-device/health.txt); the program runs as the verify role runs it."""

from fleet.decide.health import decide_health
from fleet.knowledge.platforms import platform
from fleet.remote.verify import perf
from verify_program import fresh

IDLE = ["0", "5", "5", "16", "16", "0x0000000000000001", "345", "1980", "37", "102.47"]
LOADED = ["0", "5", "5", "16", "16", "0x0000000000000000", "1980", "1980", "52", "690.12"]


def test_samples_fold_to_the_lowest_link_and_every_reason_seen():
    program = fresh(run=False)
    thermal = ["1", "4", "5", "16", "16", "0x0000000000000040", "1410", "1980", "91", "650.0"]
    summary = perf.load_summary([perf.load_sample([IDLE, thermal]),
                                 perf.load_sample([LOADED, ["1", "5", "5", "16", "16", "0x0", "1500",
                                                            "1980", "93", "655.0"]])])
    assert summary[0]["events"] == [] and summary[0]["gen"] == 5 and summary[0]["sm_mhz"] == 1980
    assert summary[1]["events"] == ["hw_thermal_slowdown"] and summary[1]["gen"] == 4 and summary[1]["temperature"] == 93
    perf.judge_load(program, summary)
    checks = {c["name"]: c for c in program.checks}
    assert not checks["clocks_under_load"]["passed"] and "GPU 1: hw_thermal_slowdown" in checks["clocks_under_load"]["detail"]
    assert not checks["pcie_under_load"]["passed"] and "GPU 1: Gen4 x16 of Gen5 x16" in checks["pcie_under_load"]["detail"]


def test_bandwidth_held_against_the_h200_rows_floors():
    row = next(p.as_dict() for p in platform("x86_64-dgpu").perf if p.match == "H200")
    assert (row["memory_tbs"], row["memory_floor_tbs"], row["host_gbs"], row["host_floor_gbs"]) == (4.8, 3.36, 64.0, 38.4)
    program = fresh(run=False)
    # the lent H200's own figures pass; a link trained to Gen4 (about half) fails
    perf.judge_bandwidth(program, {"d2d_traffic_gbs": 4274.0, "h2d_gbs": 55.5, "d2h_gbs": 55.3}, row)
    perf.judge_bandwidth(program, {"d2d_traffic_gbs": 4274.0, "h2d_gbs": 26.1, "d2h_gbs": 26.3}, row)
    passed = [(c["name"], c["passed"]) for c in program.checks]
    assert passed == [("bandwidth_memory", True), ("bandwidth_h2d", True), ("bandwidth_d2h", True),
                      ("bandwidth_memory", True), ("bandwidth_h2d", False), ("bandwidth_d2h", False)]
    assert "26.10 GB/s of the datasheet's 64 GB/s is under the floor of 38.40 GB/s" in program.checks[4]["detail"]


def test_the_verdict_reads_the_last_verify_under_load_unless_stale():
    verify = {"passed": False, "load": {"gpus": [{"index": 0, "gen": 3.0, "gen_max": 5.0, "events": ["sw_power_cap"]},
                                                 {"index": 1, "gen": 5.0, "gen_max": 5.0,
                                                  "events": ["hw_power_brake_slowdown"]}]},
              "bandwidth": {"h2d_gbs": 26.1, "d2h_gbs": 55.0, "d2d_traffic_gbs": 4270.0, "host_floor_gbs": 38.4,
                            "memory_floor_tbs": 3.36}}
    facts = {"health": {"installed": True, "kernel_log": "dmesg", "gpus": [{"index": 0, "name": "NVIDIA H200"},
                                                                          {"index": 1, "name": "NVIDIA H200"}]},
             "verify": verify}
    found = {(f.gpu, f.field): f for f in decide_health(facts).findings}
    assert found[(0, "pcie.link.gen.current")].value == "Gen3 of Gen5 under load"
    assert found[(1, "clocks_event_reasons.hw_power_brake_slowdown")].severity == "degraded"
    assert found[(0, "bandwidth.h2d_gbs")].value == "26.10 GB/s (floor 38.4)"
    assert (0, "bandwidth.d2d_traffic_gbs") not in found
    assert decide_health({**facts, "verify": {**verify, "verdict": "stale"}}).verdict == "healthy"


class _FakeTensor:
    def __init__(self, torch, size):
        self.torch, self.size = torch, size

    def copy_(self, other, non_blocking=False):
        self.torch.copied.append((other.size, self.size))
        return self

    def __matmul__(self, other):
        self.torch.matmuls += 1
        return self


class _FakeCuda:
    def __init__(self, torch):
        self.torch = torch

    def mem_get_info(self):
        return (100 << 30, 141 << 30)

    def synchronize(self, device=None):
        pass

    def device_count(self):
        return 2

    def get_device_name(self, i=0):
        return "NVIDIA H200"


class FakeTorch:
    """Just what verify's bandwidth and under-load steps call (no GPU here); the copies and matmuls are counted."""
    uint8, bfloat16 = "uint8", "bfloat16"

    def __init__(self):
        self.copied, self.matmuls = [], 0
        self.cuda = _FakeCuda(self)

    def empty(self, size, dtype=None, device=None, pin_memory=False):
        return _FakeTensor(self, size)

    def empty_like(self, other):
        return _FakeTensor(self, other.size)

    def randn(self, *shape, device=None, dtype=None):
        return _FakeTensor(self, shape)


def test_the_steps_time_their_copies_and_sample_nvidia_smi_while_every_gpu_works(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"   # the lent H200's layout, two GPUs, at work
    smi.write_text("#!/bin/sh\necho '0, 5, 5, 16, 16, 0x0000000000000000, 1980, 1980, 52, 690.12'\n"
                   "echo '1, 5, 5, 16, 16, 0x0000000000000004, 1755, 1980, 61, 699.80'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    program = fresh({"perf_table": [p.as_dict() for p in platform("x86_64-dgpu").perf]}, run=False)
    torch = FakeTorch()
    perf.bandwidth(program, torch, "NVIDIA H200")
    perf.under_load(program, torch, seconds=0.3)
    out = program.out
    size = 1 << 30                                   # capped at 1 GiB (10 % of 100 GB free / 2 is more)
    assert out["bandwidth"]["bytes"] == size and out["bandwidth"]["host_floor_gbs"] == 38.4
    assert torch.copied.count((size, size)) == 3 * 3 + 5 + 5 + 10   # 3 warm-ups each, then 5, 5 and 10 timed
    assert torch.matmuls > 0 and len(out["load"]["samples"]) == 2
    assert [(g["index"], g["events"], g["sm_mhz"]) for g in out["load"]["gpus"]] == [(0, [], 1980.0),
                                                                                   (1, ["sw_power_cap"], 1755.0)]
    checks = {c["name"]: c["passed"] for c in program.checks}
    assert checks["clocks_under_load"] and checks["pcie_under_load"]   # power cap at full load is not a slowdown
    assert set(checks) >= {"bandwidth_memory", "bandwidth_h2d", "bandwidth_d2h"}


class _Stuck(FakeTorch):
    """A GPU whose work never finishes a batch in the sampled window (a hung or far too slow GPU), or whose
    tensors cannot be made: the readings were not taken under load, so nothing may pass on them."""

    def __init__(self, fail=False):
        super().__init__()
        self.fail = fail

    def randn(self, *shape, device=None, dtype=None):
        if self.fail:
            raise RuntimeError("CUDA error: out of memory")
        import time
        time.sleep(2)
        return _FakeTensor(self, shape)


def test_readings_taken_while_no_matmul_ran_prove_nothing(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"   # an idle GPU's reading: no slowdown, the link at rest
    smi.write_text("#!/bin/sh\necho '" + ", ".join(IDLE) + "'\necho '" + ", ".join(["1"] + IDLE[1:]) + "'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    for torch, says in ((_Stuck(), "GPU 0: no matmul finished in the 0.3 s sampled"),
                        (_Stuck(fail=True), "GPU 1: the load did not run (RuntimeError: CUDA error: out of memory)")):
        program = fresh({}, run=False)
        perf.under_load(program, torch, seconds=0.3)
        checks = {c["name"]: c for c in program.checks}
        assert not checks["under_load"]["passed"] and says in checks["under_load"]["detail"], checks
        assert "clocks_under_load" not in checks and "pcie_under_load" not in checks
