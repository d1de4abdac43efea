"""`python bench/_fleet_cprofile.py OUT.txt fleet-args...`: one fleet command under cProfile in every thread (the
main thread and each host's), the profiles summed, the top functions by cumulative and by own time written to
OUT.txt. For finding where a no-op's controller time goes (bench/h200/profile.sh); never used in timed runs."""

import cProfile
import pstats
import sys
import threading
import time

_profiles: list[cProfile.Profile] = []
_run = threading.Thread.run


def _profiled_run(self):
    profile = cProfile.Profile(time.thread_time)   # CPU of this thread: waiting on the network costs nothing
    _profiles.append(profile)
    profile.runcall(_run, self)


threading.Thread.run = _profiled_run


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    main_profile = cProfile.Profile(time.thread_time)
    rc = 0
    try:
        from fleet.cli import main as fleet_main   # noqa: PLC0415 (the import is part of what is measured)
        rc = main_profile.runcall(fleet_main, argv) or 0
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        main_profile.disable()
        with open(out, "w") as fh:
            stats = pstats.Stats(main_profile, stream=fh)
            for profile in _profiles:
                try:
                    profile.disable()
                    stats.add(profile)
                except (TypeError, ValueError):   # a thread that never ran anything to profile
                    pass
            stats.sort_stats("cumulative").print_stats(80)
            stats.sort_stats("tottime").print_stats(50)
    return rc


if __name__ == "__main__":
    sys.exit(main())
