"""NVIDIA's cuda-keyring .deb pinned by sha256, per default repository (issue 26).

The keyring package installs the key apt trusts for everything else from NVIDIA's repository, and dpkg runs its
maintainer scripts as root: it is checked on the host against a digest fleet ships before `dpkg -i`
(fleet/resources/apt.py), a mismatch refused naming both digests.

fleet cannot reach NVIDIA from where it is built, so a digest is pinned only where public scripts that check the
downloaded file with sha256sum agree on it; the sources are named per row. A repository without a row (Debian,
RHEL, Ubuntu 26.04, ubuntu2204/sbsa, ...) gets no pin: there the keyring is still fetched over https only, and
the user may pin it with the role variable `cuda_keyring_sha256` (`sha256sum cuda-keyring_1.1-1_all.deb` on a
copy they trust). A mirror, or the lab, that serves its own keyring at these URLs names its digests in a
digest file (top-level `keyring_pins:` in the inventory, as `sha256sum` writes it: `DIGEST  URL`), which
replaces the shipped row for that URL only (fleet/inventory: `cuda_keyring_pins`).
"""
from __future__ import annotations

NVIDIA_REPOS = "https://developer.download.nvidia.com/compute/cuda/repos/"
KEYRING = "cuda-keyring_1.1-1_all.deb"

# repo path -> (sha256 of cuda-keyring_1.1-1_all.deb there, where the digest was read)
PINS: dict[str, tuple[str, str]] = {
    "ubuntu2404/x86_64": ("d2a6b11c096396d868758b86dab1823b25e14d70333f1dfa74da5ddaf6a06dba",
                          "an NVIDIA-copyrighted NCCL install script (CUDA_KEYRING_SHA256_X86_64, 2026) and three "
                          "other public Dockerfiles/scripts that run `sha256sum -c` on this URL's file"),
    "ubuntu2404/sbsa": ("6ea7d2737648936820e85677177957a0f6521b840d98eb0bbae0a4f003fa7249",
                        "the same NVIDIA NCCL install script (CUDA_KEYRING_SHA256_SBSA) and an NVIDIA-copyrighted "
                        "setup script that pins this URL with CUDA_KEY_FINGERPRINT EB693B3035CD5710..."),
    "ubuntu2204/x86_64": ("d93190d50b98ad4699ff40f4f7af50f16a76dac3bb8da1eaaf366d47898ff8df",
                          "three public scripts/Dockerfiles that run `sha256sum -c` on this URL's file"),
}


def url(repo_path: str) -> str:
    return f"{NVIDIA_REPOS}{repo_path}/{KEYRING}"


SHIPPED: dict[str, str] = {url(path): digest for path, (digest, _source) in PINS.items()}


def pinned(keyring_url: str | None, overrides: dict[str, str] | None = None) -> str | None:
    """The sha256 the keyring at this URL must have; None where fleet knows none."""
    if not keyring_url:
        return None
    if overrides and keyring_url in overrides:
        return overrides[keyring_url]
    return SHIPPED.get(keyring_url)
