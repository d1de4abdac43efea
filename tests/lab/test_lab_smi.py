"""The lab's nvidia-smi is a compiled program (fleet_lab/native/nvidia_smi.c, issue 14: a Python stand-in's
interpreter start-up was a third of a lab host's no-op probe). What fleet parses, byte for byte, as the Python
stand-in it replaced printed it (compared on every lab profile before that was removed), and the exit codes of
nvidia-smi(1) RETURN VALUE: 2 invalid argument, 9 driver not loaded; 18 NVML_ERROR_LIB_RM_VERSION_MISMATCH."""

from __future__ import annotations

import shlex

from helpers import ok, sh



def uuid(lab, host: str) -> str:
    return ok(lab, host, "nvidia-smi -L").split("(UUID: ")[1].rstrip(")\n")


def test_the_stand_in_is_an_elf_program_not_a_script(lab):
    # the first bytes of the file a lab host runs: ELF's magic, not "#!" (no interpreter starts)
    assert ok(lab, "pod-570", "head -c 4 /usr/bin/nvidia-smi | od -An -c").split() == ["177", "E", "L", "F"]


def test_every_gpu_field_and_format_as_fleet_parses_them(lab):
    gpu = uuid(lab, "pod-570")
    fields = ("index,name,driver_version,compute_cap,memory.total,memory.used,memory.free,uuid,pci.bus_id,"
              "temperature.gpu,utilization.gpu,power.draw,persistence_mode,count")
    header = ("index, name, driver_version, compute_cap, memory.total [MiB], memory.used [MiB], memory.free [MiB], "
              "uuid, pci.bus_id, temperature.gpu, utilization.gpu [%], power.draw [W], persistence_mode, count\n")
    units = (f"0, NVIDIA H100 80GB HBM3, 570.133.20, 9.0, 81559 MiB, 0 MiB, 81559 MiB, {gpu}, 00000000:00:07.0, "
             "31, 0 %, 69.42 W, Enabled, 1\n")
    bare = (f"0, NVIDIA H100 80GB HBM3, 570.133.20, 9.0, 81559, 0, 81559, {gpu}, 00000000:00:07.0, "
            "31, 0, 69.42, Enabled, 1\n")
    assert ok(lab, "pod-570", f"nvidia-smi --query-gpu={fields} --format=csv") == header + units
    assert ok(lab, "pod-570", f"nvidia-smi --query-gpu={fields} --format=csv,noheader") == units
    assert ok(lab, "pod-570", f"nvidia-smi --query-gpu {fields} --format ' csv , nounits'") == header + bare
    assert ok(lab, "pod-570", "nvidia-smi --query-gpu=gpu_name,gpu_bus_id,compute_capability --format=csv,noheader") \
        == "NVIDIA H100 80GB HBM3, 00000000:00:07.0, 9.0\n"
    # unified memory (Thor): [N/A], no unit, for all three memory fields
    assert ok(lab, "thor", "nvidia-smi --query-gpu=memory.total,memory.used,memory.free,name --format=csv,noheader") \
        == "[N/A], [N/A], [N/A], NVIDIA Thor\n"
    bad = sh(lab, "pod-570", "nvidia-smi --query-gpu=index,,name --format=csv")
    assert (bad.exit, bad.stdout) == (2, 'Field "" is not a valid field to query.\n\n')
    bad = sh(lab, "pod-570", "nvidia-smi --query-gpu=index --format=json")
    assert (bad.exit, bad.stdout) == (2, '"json" is not a valid format. Only "csv" is supported (fleet lab stand-in).\n')


def test_table_header_lines_fleet_reads(lab):
    lines = ok(lab, "spark", "nvidia-smi | head -n 5").splitlines()
    assert lines[1:] == [
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |",
        "| fleet lab stand-in: no GPU here, these figures describe the simulated host              |",
        "+-----------------------------------------+------------------------+----------------------+"]
    table = ok(lab, "spark", "nvidia-smi").splitlines()
    assert table[9] == "|   0  NVIDIA GB10                         On  |   0000000F:01:00.0 Off |                    0 |"
    assert table[10] == "| N/A   31C    P0             69W /  700W |          Not Supported |      0%      Default |"


HOLD = ("import os, sys, time; fds = [os.open(p, os.O_RDONLY) for p in sys.argv[1:]]; "
        "open('/run/held-%d' % os.getpid(), 'w').close(); time.sleep(3600)")


def test_compute_processes_are_those_holding_a_lab_gpu_handle(lab):
    """Files under /run/fleet-lab/gpu-jobs count only while a process holds them open; their content is the
    MiB. One not held, or one whose content is not a number, counts nothing."""
    jobs = "/run/fleet-lab/gpu-jobs"
    try:
        empty = ok(lab, "pod-570", f"mkdir -p {jobs}; nvidia-smi --query-gpu=memory.used,utilization.gpu "
                                   "--format=csv,noheader; nvidia-smi --query-compute-apps=pid --format=csv")
        assert empty == "0 MiB, 0 %\npid\n"
        ok(lab, "pod-570", f"echo 1000 > {jobs}/a; echo 24 > {jobs}/b; echo lots > {jobs}/c; echo 5 > {jobs}/idle; "
                           "cp /usr/bin/python3 /tmp/trainer; "
                           f"for set in '{jobs}/a' '{jobs}/b {jobs}/c'; do "
                           f"setsid /tmp/trainer -c {shlex.quote(HOLD)} $set </dev/null >/dev/null 2>&1 & done; "
                           "for i in $(seq 600); do [ $(ls /run/held-* 2>/dev/null | wc -l) = 2 ] && break; sleep 0.1; done")
        pids = sorted(int(p.rsplit("-", 1)[1]) for p in ok(lab, "pod-570", "ls /run/held-*").split())
        gpu = uuid(lab, "pod-570")
        apps = ok(lab, "pod-570", "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv")
        assert apps == (f"pid, process_name, used_gpu_memory [MiB], gpu_uuid\n{pids[0]}, trainer, 1000 MiB, {gpu}\n"
                        f"{pids[1]}, trainer, 24 MiB, {gpu}\n")
        assert ok(lab, "pod-570", "nvidia-smi --query-gpu=memory.used,memory.free,utilization.gpu "
                                  "--format=csv,noheader,nounits") == "1024, 80535, 100\n"
        assert "|    1024MiB /  81559MiB |" in ok(lab, "pod-570", "nvidia-smi")
    finally:
        lab.reset(["pod-570"])


def test_no_kernel_driver_fails_as_nvidia_smi_does(lab):
    # the kernel module gone: /proc/driver/nvidia empty (a private mount namespace on the host)
    res = sh(lab, "pod-580", "unshare -m sh -c 'mount -t tmpfs none /proc/driver/nvidia && nvidia-smi -L'")
    assert res.exit == 9 and res.stdout == (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n")


def test_a_driver_library_of_another_version_is_nvml_mismatch(lab):
    """libcuda.so.1 in the driver's directory names a version the kernel module is not: exit 18, with the
    NVML version NVML prints (two parts of a three-part version, a two-part one whole)."""
    lib = "/usr/lib/x86_64-linux-gnu"
    try:
        for version, shown in (("575.51.02", "575.51"), ("575.51", "575.51")):
            res = sh(lab, "pod-570", f"cp {lib}/libcuda.so.570.133.20 {lib}/libcuda.so.{version} && "
                                     f"ln -sf libcuda.so.{version} {lib}/libcuda.so.1 && nvidia-smi")
            assert res.exit == 18 and res.stdout == (
                f"Failed to initialize NVML: Driver/library version mismatch\nNVML library version: {shown}\n")
    finally:
        lab.reset(["pod-570"])
