"""What an all-reduce over a host's GPUs should reach: bus bandwidth per GPU model, GPU count, link and NVLink SHARP
(NVLS), with the line under which it is degraded and the floor under which it fails (issue 48), each row with its
source. verify's program (fleet/remote/verify/allreduce.py) carries these rows (its module `tables`:
fleet/resources/verify.py tables), takes them where its config's `allreduce` is true (the dGPU platforms) and judges its own measurement against the first that matches.

Bus bandwidth is NCCL's busbw (algbw * 2(n-1)/n for all-reduce: nccl-tests doc/PERFORMANCE.md), GB/s.

Sources:
- Measured here, NVLS off (NCCL_NVLS_ENABLE=0 in every process on the lent machines), fleet verify's all-reduce
  (torch.distributed over NCCL, fp32, 1 GiB, 10 timed iterations), driver 580.159.04, every pair NV18:
  2x H200: 20 runs 323.8-328.6 GB/s, median 326.4, stdev 1.4 (tests/data/h200-multi/verify20/runs.jsonl);
  4x H200: 352-353 GB/s (../shared/captured/h200-multi/README.md, x4). A user's own 256 MiB all-reduce got 296 and
  335: smaller messages stay under peak.
- NVIDIA/nccl-tests issue #212 (sjeaugey, NCCL's maintainer, 2024-05-06): on H100, 450 GB/s is NVLink's line
  rate; with the protocol's ~20 % NCCL's effective NVLink bandwidth is ~370 GB/s busbw (ring, i.e. NVLS off); with
  NVLink SHARP on 8 GPUs the peak busbw is ~480 GB/s; "256M is too small to reach peak bandwidth".
- Azure/azurehpc-health-checks conf/nd96isr_h200_v5.conf: `check_nccl_allreduce 431.0 1 16G` (8x H200 fails under
  431 GB/s at 16 GB); conf/nd96isr_h100_v5.conf: `check_nccl_allreduce 460.0 1 ... 16G` (8x H100 under 460). Both
  NVLS on (NCCL's default on an NVSwitch board): 90 % and 96 % of the ~480 peak.

The lines: a row's `floor` is where it fails (a weak link, not only a lost one: Azure's 90-96 % of peak; ours 90 %
of the measured median where we measured, Azure's own figure where they publish one); `warn` (95 % of peak)
is where it is degraded. The measured spread (stdev 1.4 on 326, the lowest of 20 runs 99.2 % of the median) puts
the warning line 11 standard deviations under the median: no false verdict from run-to-run noise.
`size` is the message the row was measured or published at; verify asks for that much (or what the GPUs' free
memory and the time budget allow: it says the size it ran) since a smaller message stays under peak.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30
WARN_SHARE = 0.95
FLOOR_SHARE = 0.90


@dataclass(frozen=True)
class Row:
    match: str          # a substring of the GPU's name (first match wins, so "H100 PCIe" would come before "H100")
    link: str           # nvlink4 (Hopper, 18 links), nvlink3 (A100), pcie
    gpus: int           # GPUs in the all-reduce
    nvls: bool          # NVLink SHARP in use for the run
    peak: float         # busbw a large all-reduce reaches, GB/s
    size: int           # bytes it was measured or published at
    source: str
    floor: float = 0.0  # under it: failed (0: FLOOR_SHARE of peak)
    warn: float = 0.0   # under it: degraded (0: WARN_SHARE of peak)

    def as_dict(self) -> dict:
        floor = self.floor or round(self.peak * FLOOR_SHARE, 1)
        warn = max(self.warn or round(self.peak * WARN_SHARE, 1), floor)
        return {"match": self.match, "link": self.link, "gpus": self.gpus, "nvls": self.nvls, "peak": self.peak,
                "warn": warn, "floor": floor, "size": self.size, "source": self.source}


_MEASURED_2 = "measured: fleet verify on 2x H200 (NV18, NVLS off), 20 runs at 1 GiB: 323.8-328.6, median 326.4"
_MEASURED_4 = "measured: fleet verify on 4x H200 (NV18, NVLS off) at 1 GiB: 352-353"
_RING_8 = "NVIDIA/nccl-tests#212: ~370 effective NVLink busbw without NVLS (ring); 256M too small for peak"
_NVLS_8 = "NVIDIA/nccl-tests#212: ~480 peak busbw with NVLS on 8 GPUs"

# H100 SXM and H200 share NVLink 4 (18 links, 900 GB/s per GPU both ways: their datasheets), so a row measured on one
# stands for the other; H800 (8 links) and H100 PCIe (NVLink bridges) have no rows.
ROWS: tuple[Row, ...] = tuple(
    row for gpu in ("H200", "H100") for row in (
        Row(gpu, "nvlink4", 2, False, 326.4, GIB, _MEASURED_2),
        Row(gpu, "nvlink4", 4, False, 352.5, GIB, _MEASURED_4),
        Row(gpu, "nvlink4", 8, False, 370.0, 16 * GIB, _RING_8),
        Row(gpu, "nvlink4", 8, True, 480.0, 16 * GIB,
            _NVLS_8 + ("; Azure nd96isr_h200_v5.conf fails under 431 at 16G" if gpu == "H200" else
                       "; Azure nd96isr_h100_v5.conf fails under 460 at 16G"),
            floor=431.0 if gpu == "H200" else 460.0),
    ))

# No row (another GPU, count or link): only a lost link fails, against half of what the link kind gives (the rule
# before issue 48: NVLink4 ~450 line rate, NVLink3 (A100, 600 GB/s both ways) ~230, PCIe Gen4 ~25 GB/s).
LINK_BUSBW = {"nvlink4": 450.0, "nvlink3": 230.0, "nvlink": 100.0, "pcie": 25.0}
LINK_FLOOR_SHARE = 0.5


def config() -> dict:
    """What verify's config carries (Config.allreduce): the rows, first match wins, and the rule where none does."""
    return {"rows": [row.as_dict() for row in ROWS], "link_busbw": dict(LINK_BUSBW), "floor_share": LINK_FLOOR_SHARE}
