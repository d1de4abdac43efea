import sys
from importlib import metadata
missing = []
for req in sys.argv[1:]:
    name, _, want = req.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        missing.append(f"{req} (absent)"); continue
    if want and have != want and (("+" in want) or have.split("+")[0] != want):
        missing.append(f"{req} (have {have})")
print("; ".join(missing) if missing else "all installed")
sys.exit(10 if missing else 0)
