"""The stand-in mirror as lab hosts see it: CUTLASS git tags, PEP 503 indexes, redist tarballs."""

from __future__ import annotations

import json

from helpers import ok


def test_cutlass_stand_in_has_real_tags_and_version_header(lab):
    out = ok(lab, "pod-570", "rm -rf /tmp/cutlass && git clone -q --branch v4.3.0 "
                             "file:///srv/fleet-lab-mirror/git/cutlass.git /tmp/cutlass 2>/dev/null && "
                             "grep -E 'define CUTLASS_(MAJOR|MINOR|PATCH)' /tmp/cutlass/include/cutlass/version.h && "
                             "test -f /tmp/cutlass/include/cute/tensor.hpp && "
                             "git -C /tmp/cutlass tag --sort=-creatordate | head -n 1 && "
                             "git -C /tmp/cutlass tag --sort=-v:refname | head -n 1")
    lines = out.split()
    assert lines[:9] == ["#define", "CUTLASS_MAJOR", "4", "#define", "CUTLASS_MINOR", "3", "#define",
                         "CUTLASS_PATCH", "0"]
    assert lines[9:] == ["v4.2.1", "v4.7.0"]   # the backport is the newest by date, not by version


def test_indexes_and_redist_manifests(lab):
    mirror = "/srv/fleet-lab-mirror"
    out = ok(lab, "thor", f"cat {mirror}/whl/pypi/index.html {mirror}/whl/cu130/torch/index.html; "
                          f"touch {mirror}/x 2>&1 || true")
    for name in ("nvpl-blas", "nvpl-lapack", "nvidia-cudss-cu13", "manylinux_2_28_x86_64", "manylinux_2_28_aarch64"):
        assert name in out
    assert "Read-only file system" in out
    manifest = json.loads(ok(lab, "thor", f"cat {mirror}/redist/nvpl/redistrib_25.5.json"))
    rel = manifest["nvpl_lapack"]["linux-sbsa"]["relative_path"]
    listing = ok(lab, "thor", f"python3 -c 'import sys, tarfile; print(tarfile.open(sys.argv[1]).getnames())' "
                              f"{mirror}/redist/nvpl/{rel}")
    assert "nvpl_lapack-linux-sbsa-0.3.1.1-archive/lib/libnvpl_lapack_lp64_gomp.so.0" in listing
    cudss = json.loads(ok(lab, "pod-570", f"cat {mirror}/redist/cudss/redistrib_0.7.1.json"))
    assert set(cudss["libcudss"]) >= {"linux-x86_64", "linux-sbsa", "version"}
