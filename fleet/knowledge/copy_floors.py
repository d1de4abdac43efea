"""Copy-engine bandwidth floors per GPU model (issue 48 item 2), GB/s, each with its source. verify's copies step
(fleet/remote/verify/copies.py) judges every GPU's pinned host copies and every ordered pair's device copies against
the first row whose `match` is in the GPU's name; it reaches the host inside the installed verify program (its
module `tables`: fleet/resources/verify.py tables), named by CONFIG_JSON's copy_table: true.

- H200 (Azure ND H200 v5, 8x H200 NV18 on NVSwitch): `check_gpu_bw 48 335` in Azure/azurehpc-health-checks
  conf/nd96isr_h200_v5.conf: nvbandwidth's host_to_device_memcpy_ce and device_to_host_memcpy_ce at least 48 GB/s
  per GPU, device_to_device_memcpy_read_ce at least 335 GB/s for every pair (customTests/azure_gpu_bandwidth.nhc
  fails the node naming the pair). Measured on the lent H200 (shared/captured/h200-device): pinned 1 GiB copies
  55.5 GB/s host-to-device, 55.3 back.
- H100 SXM (Azure ND H100 v5): `check_cuda_bw 52` in conf/nd96isr_h100_v5.conf (host copies); Azure grades no pair
  there. H100 SXM has the same 18 NVLink4 links per GPU as the H200 (NV18 in `nvidia-smi topo -m`), so the H200's
  pair floor is used.
- Write: Azure grades read only. nvbandwidth's write CE crosses the same links; it is held to half the read floor,
  which a pair whose traffic left NVLink for PCIe (~50 GB/s on Gen5) still fails, so a slow write names a lost link,
  never a run a few percent slower.
"""

from __future__ import annotations

AZURE_H200 = "Azure azurehpc-health-checks conf/nd96isr_h200_v5.conf: check_gpu_bw 48 335"
AZURE_H100 = "Azure azurehpc-health-checks conf/nd96isr_h100_v5.conf: check_cuda_bw 52; pairs as H200 (NV18)"

# "H100 PCIe" first: a PCIe card has no NVLink pairs to hold to the SXM figure (its host floor as the SXM's)
COPY_FLOORS = (
    {"match": "H100 PCIe", "host_floor_gbs": 52.0, "pair_read_floor_gbs": 0.0, "pair_write_floor_gbs": 0.0,
     "source": AZURE_H100.split(";")[0]},
    {"match": "H100", "host_floor_gbs": 52.0, "pair_read_floor_gbs": 335.0, "pair_write_floor_gbs": 167.5,
     "source": AZURE_H100},
    {"match": "H200", "host_floor_gbs": 48.0, "pair_read_floor_gbs": 335.0, "pair_write_floor_gbs": 167.5,
     "source": AZURE_H200},
)


def rows() -> list[dict]:
    return [dict(row) for row in COPY_FLOORS]
