# fleet/remote/shells_python.py: what each distinct python of a kind of shell says (fleet/remote/shells_commands.sh
# runs it as `python -c` with this text, comment lines stripped by fleet/facts/shells.py): its sys.prefix, the torch
# directory it finds (find_spec: no import, no GPU), whether pip would refuse there (PEP 668: EXTERNALLY-MANAGED
# beside a stdlib outside a venv), and why torch is found where it is (site.py's order: PYTHONPATH's entries first,
# then the user site, then site-packages and what their .pth files add):
#   PYTHONPATH            an entry of PYTHONPATH holds it
#   pth:FILE:LINE         line LINE of the .pth file FILE added the directory that holds it (a path line, or an
#                         `import` line that names it: sys.path.insert, an editable install's finder)
#   user                  the user site (~/.local/lib/pythonX.Y/site-packages, or PYTHONUSERBASE's)
#   -                     the prefix's own site-packages, or no torch
# One line, tab-separated; stdlib only (any python3 the user's shell runs).
import importlib.util as u, os, sys, sysconfig
s = u.find_spec("torch")
t = os.path.dirname(s.origin) if s and s.origin else ""
m = sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
w = "-"
if t:
    import site
    r = os.path.realpath
    d = r(os.path.dirname(t))
    sites = [p for p in site.getsitepackages() if os.path.isdir(p)]
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    if any(r(p) == d for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
        w = "PYTHONPATH"
    elif user and r(user) == d:
        w = "user"
    elif d not in [r(p) for p in sites]:
        for sd in sites + ([user] if user and os.path.isdir(user) else []):
            for n in sorted(f for f in os.listdir(sd) if f.endswith(".pth")):
                try:
                    with open(os.path.join(sd, n)) as fh:
                        lines = fh.read().splitlines()
                except (OSError, UnicodeDecodeError):
                    continue
                for i, l in enumerate(lines, 1):
                    if w != "-" or not l.strip() or l.startswith("#"):
                        continue
                    if l.startswith(("import ", "import\t")):
                        hit = d in l or os.path.dirname(t) in l
                    else:
                        hit = r(os.path.join(sd, l.rstrip())) == d
                    if hit:
                        w = "pth:%s:%d" % (os.path.join(sd, n), i)
print(sys.prefix, t or "-", int(m), w, sep="\t")
