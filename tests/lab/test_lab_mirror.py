"""The stand-in mirror as lab hosts see it: the real source hostnames over HTTPS, trusted through the host's
own system store (a lab CA), with CUTLASS git tags, PEP 503 indexes and redist tarballs at the real paths."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest

from helpers import ok, sh

NVIDIA = "https://developer.download.nvidia.com/compute"


def test_cutlass_stand_in_has_real_tags_and_version_header(lab):
    out = ok(lab, "pod-570", "rm -rf /tmp/cutlass && git clone -q --branch v4.3.0 "
                             "https://github.com/NVIDIA/cutlass.git /tmp/cutlass 2>/dev/null && "
                             "grep -E 'define CUTLASS_(MAJOR|MINOR|PATCH)' /tmp/cutlass/include/cutlass/version.h && "
                             "test -f /tmp/cutlass/include/cute/tensor.hpp && "
                             "git -C /tmp/cutlass tag --sort=-creatordate | head -n 1 && "
                             "git -C /tmp/cutlass tag --sort=-v:refname | head -n 1")
    lines = out.split()
    assert lines[:9] == ["#define", "CUTLASS_MAJOR", "4", "#define", "CUTLASS_MINOR", "3", "#define",
                         "CUTLASS_PATCH", "0"]
    assert lines[9:] == ["v4.2.1", "v4.7.0"]   # the backport is the newest by date, not by version


def test_indexes_and_redist_manifests_at_the_real_urls(lab):
    out = ok(lab, "thor", "curl -fsS https://pypi.org/simple/ https://pypi.org/simple/nvpl-blas/ "
                          "https://download.pytorch.org/whl/cu130/torch/")
    for name in ("nvpl-blas", "nvpl-lapack", "nvidia-cudss-cu13", "manylinux_2_28_x86_64", "manylinux_2_28_aarch64"):
        assert name in out
    assert 'href="https://files.pythonhosted.org/packages/nvpl-blas/nvpl_blas-0.4.1.1-' in out   # as PyPI links
    manifest = json.loads(ok(lab, "thor", f"curl -fsS {NVIDIA}/nvpl/redist/redistrib_25.5.json"))
    rel = manifest["nvpl_lapack"]["linux-sbsa"]["relative_path"]
    listing = ok(lab, "thor", f"curl -fsSo /tmp/lapack.tar.xz {NVIDIA}/nvpl/redist/{rel} && python3 -c "
                              "'import tarfile; print(tarfile.open(\"/tmp/lapack.tar.xz\").getnames())'")
    assert "nvpl_lapack-linux-sbsa-0.3.1.1-archive/lib/libnvpl_lapack_lp64_gomp.so.0" in listing
    cudss = json.loads(ok(lab, "pod-570", f"curl -fsS {NVIDIA}/cudss/redist/redistrib_0.7.1.json"))
    assert set(cudss["libcudss"]) >= {"linux-x86_64", "linux-sbsa", "version"}


def test_hosts_trust_the_lab_ca_through_their_system_store_only(lab):
    # apt and python see the store; a client told to trust nothing but certifi-like defaults refuses
    out = ok(lab, "pod-580", "python3 -c 'import urllib.request as u; "
                             "print(u.urlopen(\"https://pypi.jetson-ai-lab.io/sbsa/cu130/torch/\").status)'; "
                             "getent hosts github.com; grep -c . /etc/pip.conf")
    assert out.splitlines()[0] == "200"
    assert out.splitlines()[1].split()[0].endswith(".254")
    empty = sh(lab, "pod-580", "curl -sS --cacert /dev/null https://pypi.org/simple/ 2>&1")
    assert empty.exit != 0
    missing = sh(lab, "pod-580", "curl -fsS https://pypi.org/simple/no-such-project/ 2>&1")
    assert missing.exit == 22 and "404" in missing.stdout
    # fleet's host (the controller) never trusts the lab CA: its default context refuses the mirror
    address = out.splitlines()[1].split()[0]
    with pytest.raises(urllib.error.URLError) as refused:
        ssl_context = ssl.create_default_context()
        ssl_context.check_hostname = False
        urllib.request.urlopen(f"https://{address}/simple/", context=ssl_context, timeout=120)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
