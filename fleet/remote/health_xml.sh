#!/usr/bin/env bash
# fleet/remote/health_xml.sh (fleet/facts/health.py HEALTH_XML): `fleet health`'s only: the lines of `nvidia-smi -q -x`
# holding a GPU's id or one of the keys (an ERE alternation set before this in xml_keys), else its first 3 lines.
# shellcheck disable=SC2154,SC2086  # t, xml_keys: set by the lines before this; $t is split on purpose
command -v nvidia-smi >/dev/null 2>&1 || exit 0
x=$($t nvidia-smi -q -x 2>&1)
printf '%s\n' "$x" | grep -E "<gpu id=|<($xml_keys)>" || printf '%s\n' "$x" | head -n 3
true
