import os
import shutil
import sys
from importlib import metadata
drop = sys.argv[1:2] == ["--drop-broken"]
missing = []


def gone(dist):
    tops = (dist.read_text("top_level.txt") or "").split()
    if not tops:
        tops = sorted({f.parts[0] for f in dist.files or () if len(f.parts) == 2 and f.name == "__init__.py"})
    if not tops:
        return None
    for top in tops:
        where = str(dist.locate_file(top))
        if os.path.isdir(where) or os.path.exists(where + ".py") or any(
                n.startswith(top + ".") for n in os.listdir(os.path.dirname(where) or ".")):
            return None
    return "/".join(tops)


for req in sys.argv[1 + drop:]:
    name, _, want = req.partition("==")
    try:
        dist = metadata.distribution(name)
        have = dist.version
    except metadata.PackageNotFoundError:
        missing.append(f"{req} (absent)"); continue
    if want and have != want and (("+" in want) or have.split("+")[0] != want):
        missing.append(f"{req} (have {have})"); continue
    lost = gone(dist)
    if lost:
        # its metadata directory: from its RECORD, else where importlib found it (a RECORD may list no such line)
        entry = next((f for f in dist.files or () if f.parts[0].endswith((".dist-info", ".egg-info"))), None)
        info = str(dist.locate_file(entry.parts[0])) if entry else str(getattr(dist, "_path", "") or "")
        missing.append(f"{req} (its files are gone: no {lost} beside its {os.path.basename(info) or 'metadata'})")
        if drop and info.endswith(".dist-info") and os.path.isdir(info):
            shutil.rmtree(info)
            print(f"removed {info}: {name}'s files were gone, so the installer puts it back")
if not drop:
    print("; ".join(missing) if missing else "all installed")
sys.exit(10 if missing and not drop else 0)
