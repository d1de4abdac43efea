#!/usr/bin/env bash
# fleet/remote/gpu_smi_version.sh (fleet/facts/gpu.py SMI_VERSION): `nvidia-smi --version` (DRIVER version and CUDA
# Version lines); the table's header is asked after it only where it has no DRIVER and CUDA lines or NVML failed (a
# driver whose nvidia-smi has no --version, or one without the CUDA line: what the table says then).
# shellcheck disable=SC2154,SC2086  # t: set before this, empty or the words `timeout 30`
command -v nvidia-smi >/dev/null 2>&1 || exit 0
v=$($t nvidia-smi --version 2>&1); printf '%s\n' "$v"
case $v in *'Failed to initialize NVML'*|*'NVIDIA-SMI has failed'*) ;;
  *'DRIVER version'*'CUDA Version'*) exit 0;; esac
echo '@@header'; $t nvidia-smi 2>&1 | head -n 5
true
