# The peers' facts, in ONE remote command (as generous to them as we can be): what fleet's decisions read.
# Prints one JSON object. The kernel driver comes from /proc/driver/nvidia/version, never from nvidia-smi's
# "CUDA Version" (it follows whichever libcuda loads: shared/DOMAIN.md, NVIDIA forward-compatibility doc).
arch=$(uname -m)
tegra=false; [ -e /etc/nv_tegra_release ] && tegra=true
driver=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+(\.[0-9]+)?$/) {print $i; exit}}' \
  /proc/driver/nvidia/version 2>/dev/null)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
nvcc=false; [ -x /usr/local/cuda-13.0/bin/nvcc ] && nvcc=true
py=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
printf '{"arch": "%s", "tegra": %s, "driver": "%s", "gpu": "%s", "cuda_present": %s, "python": "%s"}\n' \
  "$arch" "$tegra" "$driver" "$gpu" "$nvcc" "$py"
