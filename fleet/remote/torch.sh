#!/usr/bin/env bash
# fleet/remote/torch.sh (fleet/facts/software.py torch_command): one JSON line about the torch distribution the roles'
# python would import, after trust.sh and select_python.sh. No `import torch` here, and no Python at all: importing
# torch costs seconds on a real GPU host (CUDA initialisation) and takes GPU memory from whatever runs there. The
# version comes from the distribution's METADATA and the CUDA variant from torch/version.py, both plain files found
# where the chosen python keeps its packages; what only an import can tell (CUDA available, the arch list, missing
# libraries) comes from the last verify, which the engine re-runs only when its fingerprint changes
# (fleet/resources/verify_gate.py). The version is torch.__version__ as an import says it, 2.11.0+cu130, where the
# dist-info may say 2.11.0.
# shellcheck disable=SC2154  # env_dir, env_exists, py: set by select_python.sh
[ -n "$py" ] || { echo '{"installed": false, "error": "no python3"}'; exit 0; }
# The venv's own site-packages; without a venv, where Debian/Ubuntu's python3 and pip put packages.
if [ "$env_exists" = yes ]; then set -- "$env_dir"/lib/python3*/site-packages
else set -- "$HOME"/.local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages /usr/local/lib/python3*/site-packages; fi
# PYTHONPATH's directories first, split on its colons
# shellcheck disable=SC2086
if [ -n "${PYTHONPATH:-}" ]; then ifs=$IFS; IFS=:; set -- $PYTHONPATH "$@"; IFS=$ifs; fi
meta=; for d in "$@"; do for m in "$d"/torch-*.dist-info/METADATA; do [ -r "$m" ] && { meta=$m; site=$d; break 2; }; done; done
[ -n "$meta" ] || { echo '{"installed": false}'; exit 0; }
# Read with bash builtins only (sed, head and a printf|sed per JSON string were ~10 processes): the first `Version:`
# line of METADATA, and the first `cuda`/`__version__` assignment of torch/version.py.
json() { j=${1//\\/\\\\}; j=${j//\"/\\\"}; }
version=
while IFS= read -r line || [ -n "$line" ]; do
  case $line in Version:*) version=${line#Version:}; version=${version#"${version%%[! ]*}"}; break;; esac
done < "$meta"
re_cuda="^cuda[^=]*= *[\"']([^\"']*)[\"']" re_version="^__version__[^=]*= *[\"']([^\"']*)[\"']"
if [ -r "$site/torch/version.py" ]; then
  cuda=; v=
  while IFS= read -r line || [ -n "$line" ]; do
    if [ -z "$cuda" ] && [[ $line =~ $re_cuda ]]; then cuda=${BASH_REMATCH[1]}; fi
    if [ -z "$v" ] && [[ $line =~ $re_version ]]; then v=${BASH_REMATCH[1]}; fi
  done < "$site/torch/version.py"
  [ -n "$v" ] && version=$v
  error=
elif [ ! -e "$site/torch/__init__.py" ]; then cuda=; error="torch's files are gone from $site (its dist-info is left, as rm -rf leaves it): the import fails"
else cuda=; error='cannot read torch/version.py'; fi
json "$version"; jv=$j; json "$site/torch"; jp=$j
if [ -n "$cuda" ]; then json "$cuda"; jc="\"$j\""; else jc=null; fi
if [ -n "$error" ]; then json "$error"; je="\"$j\""; else je=null; fi
printf '{"installed": true, "version": "%s", "path": "%s", "cuda": %s, "error": %s}\n' "$jv" "$jp" "$jc" "$je"
