"""What operators do with a GPU fault (issue 48 item 3): the Xid catalog with each code's action, the recovery action
the driver asks for, and the ECC / row-remap thresholds, each with its source. Data only; fleet/decide/health.py
judges with it.

Xid: NVIDIA's Xid catalog for Ampere and later ("Analyzing Xid Errors with the Xid Catalog",
docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, the r590 catalog and its spreadsheet Xid-Catalog.xlsx):
each code's "Resolution Bucket (Immediate Action)", "the action that is immediately needed in order to recover the
system and get it back into service". The buckets, as its "Fault Resolution Buckets" sheet defines them:
RESTART_APP (restart the application; no reset needed), IGNORE (no action), RESET_GPU, RESTART_BM (restart the
bare-metal system), RESTART_VM (restart the VM that owns the GPU), CHECK_MECHANICALS (seating and connections),
UPDATE_SWFW, CONTACT_SUPPORT, and workflows for 13, 31, 45, 48, NVLink (74) and NVLink5 (144-150), and XID_154
("Follow XID 154 reported guidance").

A renter cannot reset a GPU, reboot the host or reseat a board: those are the provider's. So each code carries, beside
NVIDIA's bucket, what the renter does (RENTER): restart the job, ask the provider for a GPU reset, ask for a reboot
(or reboot it where the machine is theirs), return the pod, or watch.
"""

from __future__ import annotations

XID_CATALOG = "docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

# What a renter does, by the key each catalog row names.
RENTER = {
    "restart": "restart the job (the GPU is sound)",
    "watch": "watch it: nothing to do unless it repeats",
    "reset later": "restart the job; ask the provider for a GPU reset when convenient (work can go on meanwhile)",
    "reset": "ask the provider for a GPU reset (nvidia-smi -r as the host's root), or return the pod",
    "reboot": "ask the provider to reboot the host (or reboot it where the machine is yours), or return the pod",
    "return": "return the pod: the provider must repair or replace the GPU",
}

# severity of each renter key in fleet's verdict (decide/health.py): "return" the pod, "degraded", or a "note"
SEVERITY = {"restart": "note", "watch": "note", "reset later": "degraded", "reset": "return", "reboot": "return", "return": "return"}

# code -> (meaning, NVIDIA's immediate action bucket, the renter's key). The codes the catalog marks applicable to
# A100/H100/B100/GB200 and not "Unused"; a few entries are refined by the bucket's workflow (noted inline).
XID = {
    8: ("GPU stopped processing", "RESTART_APP", "restart"),
    11: ("invalid or corrupted push buffer stream", "RESTART_APP", "restart"),
    13: ("graphics engine exception (usually the application's out-of-bounds access)", "RESTART_APP", "restart"),
    14: ("fake or injected error", "IGNORE", "watch"),
    25: ("invalid or illegal push buffer stream", "RESTART_APP", "restart"),
    31: ("GPU memory page fault (usually the application's illegal address)", "RESTART_APP", "restart"),
    32: ("invalid or corrupted push buffer stream (PCIe quality, not the application)", "RESTART_APP", "watch"),
    37: ("driver firmware error", "IGNORE", "watch"),
    38: ("driver firmware error", "IGNORE", "watch"),
    39: ("copy engine exception", "RESTART_APP", "restart"),
    40: ("copy engine exception", "RESTART_APP", "restart"),
    41: ("copy engine exception", "RESTART_APP", "restart"),
    43: ("GPU stopped processing (the application's fault; the GPU stays healthy)", "IGNORE", "restart"),
    44: ("graphics engine fault during context switch", "IGNORE", "watch"),
    45: ("preemptive cleanup after an earlier error (or Ctrl-C, a kill)", "WORKFLOW_XID_45", "watch"),
    46: ("GPU stopped processing", "RESET_GPU", "reset"),
    # WORKFLOW_XID_48: "Solo: RESET_GPU"; SRAM errors go to the RMA flow when the SRAM threshold is exceeded
    48: ("double-bit (uncorrectable) ECC error", "WORKFLOW_XID_48", "reset"),
    54: ("auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS", "return"),
    60: ("video processor exception", "RESTART_APP", "restart"),
    61: ("internal micro-controller breakpoint", "RESET_GPU", "reset"),
    62: ("internal micro-controller halt", "RESET_GPU", "reset"),
    63: ("GPU memory remapping event (a row marked for remap: applied at the next reset)", "IGNORE", "watch"),
    64: ("GPU memory remapping failure", "RESET_GPU", "return"),   # a failed remap: the RMA policy's case
    66: ("illegal access by driver", "IGNORE", "watch"),
    67: ("illegal access by driver", "IGNORE", "watch"),
    68: ("NVDEC0 exception", "RESTART_APP", "restart"),
    69: ("graphics engine class error", "RESTART_APP", "restart"),
    # WORKFLOW_NVLINK_ERR: "A GPU reset or node reboot is needed to clear this error"
    74: ("NVLink error (this GPU's link, or the device at its other end)", "WORKFLOW_NVLINK_ERR", "reset"),
    78: ("vGPU start error", "UPDATE_SWFW", "return"),
    79: ("GPU has fallen off the bus", "RESTART_BM", "reboot"),
    80: ("corrupted data sent to GPU", "RESTART_APP", "restart"),
    92: ("high single-bit ECC error rate", "IGNORE", "watch"),
    94: ("contained memory error (one application hit; reset when convenient)", "RESTART_APP", "reset later"),
    95: ("uncontained memory error (every application on the GPU hit)", "RESET_GPU", "reset"),
    109: ("context switch timeout", "RESET_GPU", "reset"),
    110: ("security fault", "RESET_GPU", "reset"),
    119: ("GSP RPC timeout", "RESET_GPU", "reset"),
    120: ("GSP error", "RESET_GPU", "reset"),
    121: ("corrected errors on the C2C link to the Grace CPU", "IGNORE", "watch"),
    136: ("NVLink training failed", "RESET_GPU", "reset"),
    137: ("NVLink privilege error (the application's illegal peer access)", "IGNORE", "restart"),
    140: ("unrecovered ECC error (the driver could not remap or retire it)", "RESET_GPU", "reset"),
    141: ("CUDA fast path error", "IGNORE", "watch"),
    143: ("GPU initialization error", "RESET_GPU", "reset"),
    # WORKFLOW_NVLINK5_ERR: the message's intrInfo/errorStatus decide; a fatal one is a reset
    144: ("NVLink5 SAW error", "WORKFLOW_NVLINK5_ERR", "reset"),
    145: ("NVLink5 RLW error", "WORKFLOW_NVLINK5_ERR", "reset"),
    146: ("NVLink5 TLW error", "WORKFLOW_NVLINK5_ERR", "reset"),
    147: ("NVLink5 TREX error", "WORKFLOW_NVLINK5_ERR", "watch"),
    148: ("NVLink5 NVLPW_CTRL error", "WORKFLOW_NVLINK5_ERR", "watch"),
    149: ("NVLink5 NETIR error (link down)", "WORKFLOW_NVLINK5_ERR", "reset"),
    150: ("NVLink5 MSE error", "WORKFLOW_NVLINK5_ERR", "reset"),
    151: ("key rotation error", "RESTART_VM", "reboot"),
    154: ("GPU recovery action changed (summarises the action other Xids need)", "XID_154", "watch"),
    155: ("NVLink SW-defined error (an intentional link down)", "RESET_GPU", "reset"),
    156: ("resource retirement event", "RESET_GPU", "reset"),
    157: ("resource retirement failure (no repair left)", "IGNORE", "return"),   # "no possible repairs"
    158: ("GPU fatal timeout", "RESET_GPU", "reset"),
    171: ("uncorrectable DRAM error (the detail of an Xid 48)", "WORKFLOW_XID_48", "reset"),
    172: ("uncorrectable SRAM error (the detail of an Xid 48)", "WORKFLOW_XID_48", "return"),
}

# Xid 154's text and NVML's nvmlGpuRecoveryAction_t (nvml.h: NONE 0, GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3,
# DRAIN_AND_RESET 4): "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)". The catalog lists
# the texts "None", "Drain P2P", "Drain and Reset", "GPU Reset Required", "Node Reboot Required"; kernels in the wild
# also print "0x1 (PF FLR)" and "0x2 (OS Reboot)", so the number decides. nvidia-smi's query prints the short names
# (None, Reset, Reboot, Drain P2P, Drain and Reset).
RECOVERY_CODES = {0: "none", 1: "reset", 2: "reboot", 3: "drain p2p", 4: "drain and reset"}
RECOVERY_RENTER = {"reset": "reset", "reboot": "reboot", "drain and reset": "reset", "drain p2p": "reset"}
RECOVERY_SEVERITY = {"reset": "return", "reboot": "return", "drain and reset": "return", "drain p2p": "degraded"}

# ECC and row remapping as Azure grades them (Azure/azurehpc-health-checks customTests/azure_gpu_ecc.nhc, check_ecc;
# conf/nd96isr_h200_v5.conf and nd96isr_h100_v5.conf: `check_gpu_ecc 20000000 10000`): a node fails on a remap pending
# or failed, more than 512 uncorrectable remapped rows, any SRAM uncorrectable error (volatile or aggregate), SRAM
# correctable errors above 10,000, or DRAM errors (correctable or uncorrectable, volatile or aggregate) above
# 20,000,000. NVIDIA's Xid 48 flow adds the SRAM RMA gate: "check for SRAM DBE thresholds and follow RMA flow if
# exceeded (nvidia-smi <sram_threshold_exceeded>)".
REMAP_UNCORRECTABLE_MAX = 512
SRAM_CORRECTABLE_MAX = 10_000
DRAM_ERRORS_MAX = 20_000_000
ECC_SOURCE = "Azure azurehpc-health-checks azure_gpu_ecc.nhc (check_gpu_ecc 20000000 10000)"
