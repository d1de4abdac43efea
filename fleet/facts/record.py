"""Assemble the facts record from each source's text, recording (never raising) what cannot be parsed."""

from __future__ import annotations

import math

from fleet.knowledge.cuda_table import compare_versions, cuda_max_for_driver
from fleet.knowledge import platforms
from fleet.facts import fabric, fingerprint, gpu, health, loader, shells
from fleet.facts.scrub import scrub_text
from fleet.facts.sources import BY_NAME

RAW_LIMIT = 4000  # characters of unparsed text kept per source: enough to see what went wrong
# The longest string a fact holds: PATH_MAX (4,096 with its NUL), the longest path or variable a host can mean.
# Longer is a host's noise (issue 49: a 24 KB PRETTY_NAME): its first STRING_LIMIT characters are kept, and said.
STRING_LIMIT = 4096


class _Reader:
    """Runs one parser per source; a failure becomes probe.errors + probe.raw, and a default value."""

    def __init__(self, outputs: dict[str, str], expected: list[str]):
        self.outputs = outputs
        self.errors: list[str] = []
        self.raw: dict[str, str] = {}
        self.notes: list[str] = []  # not errors: what the probe worked around (an old driver's nvidia-smi)
        for name in expected:
            if name not in outputs:
                self.errors.append(f"facts.{name}: no output (the probe was cut short or this source is new)")

    def read(self, name: str, **kwargs):
        """The source's parsed value (fleet/facts/sources.py: its parser), or its default."""
        source = BY_NAME[name]
        if name not in self.outputs:
            return source.empty()
        text = self.outputs[name]
        try:
            return self._bounded(name, source.parser(text, **kwargs))   # NaN, Infinity: null
        except Exception as error:  # a parser bug or a format we have never seen must not stop the gather
            self.errors.append(scrub_text(f"facts.{name}: {error}"))
            self.raw[name] = scrub_text(text[:RAW_LIMIT])
            return source.empty()


    def _bounded(self, name: str, value):
        """The value with each string past STRING_LIMIT cut there (noted once per source), and every non-finite
        number (NaN, Infinity) null, as fleet.jsontext.finite makes it: one walk for both (a probe's 32 sources at
        1,000 hosts walked twice cost the controller ~1 ms a host)."""
        cut: list[int] = []
        value = _walk(value, cut)
        if cut:
            self.notes.append(f"facts.{name}: {len(cut)} value(s) longer than {STRING_LIMIT} characters (the longest "
                              f"{max(cut):,}) kept to their first {STRING_LIMIT}")
        return value


_KEPT = {bool, int, type(None)}   # what the bounded walk keeps as it is (a text may be cut, a float may be NaN)


def _walk(item, cut: list[int]):
    """_Reader._bounded's walk: `item` with its strings cut to STRING_LIMIT (each cut's length noted in `cut`) and its
    non-finite floats null, in new dicts and lists (a tuple made a list). Inside a container, a whole number, null or
    a string within the limit is kept as it is, without a call; a plain dict or list is known by its type first
    (nearly all a parser returns: issue 46)."""
    kind = type(item)
    if kind is dict or kind is not list and isinstance(item, dict):
        return {key: inner if (t := type(inner)) in _KEPT or t is str and len(inner) <= STRING_LIMIT
                else _walk(inner, cut) for key, inner in item.items()}
    if kind is list or isinstance(item, (list, tuple)):
        return [inner if (t := type(inner)) in _KEPT or t is str and len(inner) <= STRING_LIMIT
                else _walk(inner, cut) for inner in item]
    if isinstance(item, str):
        if len(item) <= STRING_LIMIT:
            return item
        cut.append(len(item))
        return item[:STRING_LIMIT]
    if isinstance(item, float) and not math.isfinite(item):
        return None
    return item


def assemble(outputs: dict[str, str], expected: list[str]) -> dict:
    """Source name -> section text, to every record key except host/gathered_at/fleet_version."""
    reader = _Reader(outputs, expected)
    uname = reader.read("uname")
    os_release = reader.read("os_release")
    smi = reader.read("nvidia_smi")
    header = smi_versions(reader, outputs)
    kernel_driver = reader.read("driver")
    tegra = reader.read("tegra")
    model = reader.read("dt_model")

    kernel = reader.read("kernel_gpus")
    gpus = [{key: g[key] for key in ("index", "name", "compute_cap", "memory_mb", "uuid")} for g in smi["gpus"]]
    if not gpus and kernel["gpus"]:
        # nvidia-smi missing or NVML failing: the kernel driver still proves the GPUs (issue 11)
        gpus = [{"index": i, "name": g["name"], "compute_cap": None, "memory_mb": None, "uuid": g["uuid"],
                 "source": "kernel"} for i, g in enumerate(kernel["gpus"])]
    driver = _driver(kernel_driver, smi["gpus"], header, tegra)
    driver["nvml_error"] = smi.get("failure")
    driver["devices"] = kernel["devices"]
    platform = gpu.detect_platform(uname.get("arch"), uname.get("kernel"), [g["name"] for g in gpus],
                                   tegra is not None, driver["version"] is not None, (tegra or {}).get("l4t"), model)
    if smi.get("rejected"):
        reader.notes.append(f"nvidia-smi rejected a field, so it was asked again without it: {smi['rejected']}")
    cuda_facts = _cuda(reader)
    shell_facts = reader.read("shells")
    env = reader.read("env")
    # every startup line (not fleet's) that puts cuda-compat on the path, observed; fleet.decide.loader judges it
    env["compat_lines"] = shells.observed(shells.compat_lines(shell_facts))
    loader_facts = _loader(reader.read("loader"), shell_facts)
    libraries = reader.read("libraries", arch=uname.get("arch"))
    torch = reader.read("torch")
    if isinstance(torch, dict):   # which python3/python of each kind finds it, and any other torch they find
        torch = {**torch, "reached_by": shells.reached_by(shell_facts, torch.get("path"))}
    # the last verify's verdict holds only while what it proved is as the host shows it now (stale: why not)
    verify = reader.read("verify")
    verify = fingerprint.judged(verify, fingerprint.stale_reasons(verify, reader.read("verify_fingerprint"), torch))
    return {
        "system": _system(reader, uname, os_release),
        "platform": platform,
        "gpus": gpus,
        "driver": driver,
        "jetson": _jetson(tegra, model, platform),
        "cuda": cuda_facts,
        "libraries": libraries["libraries"],
        "library_sources": libraries["sources"],
        "python": reader.read("python"),
        "paths": reader.read("paths"),                # path -> None (safe to run as root) or why not
        "torch": with_last_verify(torch, verify),
        "cutlass": reader.read("cutlass"),
        "fabric": fabric_facts(reader.read("fabric"), driver["version"], reader.read("identity").get("container")),
        "health": health.health_facts(reader.read("health"), reader.read("health_xml"), reader.read("xid"),
                                      kernel["gpus"]),
        "env": env,
        "shells": shell_facts,
        "loader": loader_facts,
        "verify": verify,
        "verify_fingerprint": reader.read("verify_fingerprint"),
        "programs": reader.read("programs"),        # fleet's helper programs on the host (fleet/programs.py)
        "probe": {"errors": reader.errors, "raw": reader.raw, "notes": reader.notes},
    }


def fabric_facts(section: dict, driver_version: str | None, container: bool | None = None) -> dict:
    """facts.fabric (issue 28): the GPUs and the links between them, each GPU's fabric state, whether this host
    manages its own NVSwitch fabric (NVSwitch devices seen and not a container: bare metal or a VM) and its fabric
    manager (service, process, packages) against the driver: they must be the exact same version. A container is
    one by the section's own markers or by facts.system's (`container`)."""
    section = {**section, "container": bool(section.get("container") or container)}
    fm_version = fabric.fabric_manager_version(section.get("packages") or {})
    gpus = [{**g, "ready": fabric.fabric_ready(g)} for g in section.get("fabric") or []]
    return {
        **section, "fabric": gpus,
        "manages_fabric": bool(section.get("nvswitch")) and not section.get("container"),
        "fm_running": section.get("service") == "active" or bool(section.get("process")),
        "fm_version": fm_version, "driver_version": driver_version,
        "fm_matches_driver": None if not fm_version or not driver_version else fm_version == driver_version,
        "not_ready": [i for i, g in enumerate(gpus) if g["ready"] is False],
    }


def _loader(section: dict, shell_facts: dict | None) -> dict:
    """facts.loader: each kind's libcuda.so.1 and the step that put it first (fleet/facts/loader.py), then the ld
    cache's libcuda entries, the ld.so.conf and ld.so.preload lines; each shell's own answer moves here from
    facts.shells (one place)."""
    kinds = loader.explain(section, shell_facts)
    for shell in (shell_facts or {}).values():
        if isinstance(shell, dict):
            shell.pop("loader", None)
    return {"kinds": kinds, **{k: section.get(k) for k in ("cache", "conf", "preload", "use_pam")}}


_FROM_IMPORT = ("cuda_available", "arch_list", "capability", "device_name", "missing_libraries", "from_verify_at")


def with_last_verify(torch: dict | None, verify: dict | None) -> dict | None:
    """What only importing torch can tell (CUDA available, the arch list, the device, missing libraries), taken
    from the last verify when it ran on this very torch version; the probe itself never imports torch.
    A record captured by an older fleet (which imported torch in the probe) keeps what it holds."""
    if not torch or not isinstance(verify, dict) or "from_verify_at" not in torch and torch.get("cuda_available") is not None:
        return torch
    seen = verify.get("torch") if isinstance(verify.get("torch"), dict) else {}
    base = {k: v for k, v in torch.items() if k not in _FROM_IMPORT}
    if seen.get("version") != torch.get("version"):
        return {**base, "cuda_available": None, "arch_list": [], "capability": None, "device_name": None}
    checks = {c.get("name"): c for c in verify.get("checks") or [] if isinstance(c, dict)}
    imported = checks.get("torch_imports", {})
    return {**base, "cuda_available": checks.get("cuda_available", {}).get("passed") if imported.get("passed") else None,
            "arch_list": seen.get("arch_list") or [], "capability": seen.get("capability"),
            "device_name": seen.get("device"), "missing_libraries": verify.get("missing_libraries") or [],
            "error": base.get("error") or (None if imported.get("passed", True) else imported.get("detail")),
            "from_verify_at": verify.get("at")}


def _system(reader: _Reader, uname: dict, os_release: dict) -> dict:
    identity = reader.read("identity")
    cpu = reader.read("cpu")
    memory = reader.read("meminfo")
    disks = reader.read("df")
    # The first disk is the virtual environment's parent: torch and its CUDA wheels are the big write.
    first = disks[0] if disks else {}
    return {
        "hostname": uname.get("hostname"),
        "arch": uname.get("arch"),
        "os_id": os_release.get("ID"),
        "os_version": os_release.get("VERSION_ID"),
        "os_name": os_release.get("PRETTY_NAME"),
        "kernel": uname.get("kernel"),
        "cpus": cpu.get("cpus"),
        "cpu_model": cpu.get("cpu_model"),
        "mem_total_mb": memory.get("mem_total_mb"),
        "mem_available_mb": memory.get("mem_available_mb"),
        "disk_free_gb": first.get("free_gb"),
        "disk_path": first.get("path"),
        "disks": disks,
        "user": identity.get("user"),
        "uid": identity.get("uid"),
        "systemd": identity.get("systemd"),
        "container": identity.get("container"),
        "workspace": identity.get("workspace"),      # a /workspace volume (RunPod): user roles gate on it
        "git": identity.get("git"),                  # git on PATH (slim images lack it): the cutlass role gates on it
        "resources": reader.read("resources"),       # /dev/shm, memlock and open files, the memory limit (issue 45)
    }


def smi_versions(reader: _Reader, outputs: dict[str, str]) -> dict:
    """nvidia-smi's driver and CUDA versions, from the smi_version section (`nvidia-smi --version`, else the table's
    header). A record assembled again from an earlier probe's output reads where that probe had them: its health_xml
    section's `-q -x` (83fa5ab..e611fe2), else the table's header in a section of its own (before)."""
    if "smi_version" in outputs:
        return reader.read("smi_version")
    try:
        versions = gpu.parse_smi_versions(outputs.get("health_xml") or "")
    except ValueError:   # an XML without the versions (a filtered one before 83fa5ab, an error)
        versions = {"driver_version": None, "cuda_version": None}
    if versions["cuda_version"] is None and outputs.get("nvidia_smi_header"):
        try:
            versions = gpu.parse_smi_header(outputs["nvidia_smi_header"])
        except ValueError:
            pass
    return versions


def _driver(kernel: dict, smi_gpus: list[dict], header: dict, tegra: dict | None) -> dict:
    """The KERNEL driver decides (DOMAIN.md): proc/sysfs first, nvidia-smi's driver_version after."""
    version, source = kernel.get("version"), kernel.get("source")
    if version is None:
        smi_version = next((g["driver_version"] for g in smi_gpus if g.get("driver_version")), None)
        version, source = smi_version, ("nvidia-smi" if smi_version else None)
    cuda_max = cuda_max_for_driver(version)
    release = platforms.jetpack_release(tegra.get("jetpack"), tegra.get("l4t")) if tegra else None
    ships = release.cuda if release else "13.0"   # a JetPack 7 the table lacks: 7.0's
    if tegra and (tegra.get("jetpack") or "").startswith("7.") and (cuda_max is None
                                                              or compare_versions(cuda_max, ships) < 0):
        # JetPack ships its own CUDA with its driver (JETPACK_RELEASES); the desktop table does not apply.
        cuda_max = ships
    return {"version": version, "source": source, "cuda_max": cuda_max,
            "smi_cuda_version": header.get("cuda_version")}


def _jetson(tegra: dict | None, model: str | None, platform: str) -> dict | None:
    if tegra is None and not platforms.platform(platform).jetson:
        return None
    tegra = tegra or {}
    return {"l4t": tegra.get("l4t"), "l4t_full": tegra.get("l4t_full"),
            "jetpack": tegra.get("jetpack"), "model": model}


def _cuda(reader: _Reader) -> dict:
    toolkits = reader.read("cuda_toolkits")
    compat = reader.read("cuda_compat")
    default = toolkits["links"].get("/usr/local/cuda")
    if default is None and any(t["path"] == "/usr/local/cuda" for t in toolkits["toolkits"]):
        default = "/usr/local/cuda"
    return {"toolkits": toolkits["toolkits"], "default": default,
            "nvcc_on_path": toolkits["nvcc_on_path"], "compat": compat}


# The sources of GPU health alone (issue 36): `fleet health` runs them (fleet/workflows/health.py), and so does a
# reporting pod's start script, whose output the controller reads (fleet/store/pod_health.py).
HEALTH_SOURCES = ("kernel_gpus", "health", "health_xml", "xid", "resources")   # resources: /dev/shm and kin (45)


def health_facts(outputs: dict[str, str]) -> dict:
    """The health sources' texts -> {"health": facts.health, "system": {"resources"}, "probe": {errors...}}."""
    record = assemble(outputs, expected=list(HEALTH_SOURCES))
    return {"health": record["health"], "system": {"resources": record["system"]["resources"]},
            "probe": record["probe"]}
