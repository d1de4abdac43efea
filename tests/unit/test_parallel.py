"""on_hosts makes room for the connections it opens."""



def test_the_open_files_limit_is_raised_for_a_thousand_hosts():
    """A soft limit of 1024 open files fails hosts past the thousandth: run in a child whose soft limit is 1024,
    on_hosts raises it (within the hard limit) before opening anything."""
    import subprocess
    import sys
    code = ("import resource\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))\n"
            "from fleet.connection.parallel import _room_for_files\n"
            "_room_for_files(1000)\n"
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n")
    soft, hard = (int(x) for x in subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                  check=True).stdout.split())
    assert soft == min(256 + 4 * 1000, hard) and soft > 1024
