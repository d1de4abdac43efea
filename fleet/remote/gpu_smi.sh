#!/usr/bin/env bash
# fleet/remote/gpu_smi.sh (fleet/facts/gpu.py NVIDIA_SMI): the GPUs as nvidia-smi's query lists them. Set before this:
# t (timeout 30, where there is one: a wedged GPU can hang nvidia-smi for minutes) and q (gpu.QUERY_FULL); drivers
# around 470 reject compute_cap: asked again without it (gpu.QUERY_OLD) rather than lose every GPU fact.
# shellcheck disable=SC2154  # t, q: set by the line before this
command -v nvidia-smi >/dev/null 2>&1 || { echo 'nvidia-smi: not installed'; exit 127; }
# shellcheck disable=SC2086  # $t: empty, or the words `timeout 30`
if out=$($t nvidia-smi --query-gpu="$q" --format=csv,noheader,nounits 2>&1); then
  echo "query $q"; printf '%s\n' "$out"
else
  printf 'rejected %s\n' "$(printf '%s' "$out" | head -n 2 | tr '\n' ' ')"
  q=${q/compute_cap,/}; echo "query $q"; $t nvidia-smi --query-gpu="$q" --format=csv,noheader,nounits
fi
