import html, os, platform, re, sys, urllib.parse, urllib.request
index, reqs = os.environ["FLEET_INDEX"].rstrip("/"), sys.argv[1:]   # the URL may hold a token: never in argv
tag, machine = f"cp{sys.version_info[0]}{sys.version_info[1]}", platform.machine()
def page(project):
    url = f"{index}/{project}/"
    if url.startswith("file:"):
        path = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
        if os.path.isfile(os.path.join(path, "index.html")):
            return open(os.path.join(path, "index.html"), encoding="utf-8", errors="replace").read()
        return " ".join(os.listdir(path)) if os.path.isdir(path) else ""
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode("utf-8", "replace")
absent = []
for req in reqs:
    name, _, want = req.partition("==")
    project = re.sub(r"[-_.]+", "-", name).lower()
    if not want:
        continue
    try:
        text = page(project)
    except Exception as error:
        print(f"could not ask {index} for {name} ({type(error).__name__}): the apply will tell")
        continue
    fits = False
    for found in re.findall(r"([A-Za-z0-9_.+!%-]+\.whl)", html.unescape(text)):
        parts = urllib.parse.unquote(found)[:-4].split("-")
        if len(parts) < 5 or re.sub(r"[-_.]+", "-", parts[0]).lower() != project:
            continue
        version, pythons, platforms = parts[1], parts[-3].split("."), parts[-1].split(".")
        fits = ((version == want or version.startswith(want + "+"))
                and any(t in (tag, "py3", f"py{sys.version_info[0]}{sys.version_info[1]}") for t in pythons)
                and any(p == "any" or p.endswith(machine) for p in platforms))
        if fits:
            break
    if not fits:
        absent.append(f"{name} {want} is not on {index} for {tag} {machine}")
if absent:
    print("; ".join(absent))
    sys.exit(11)
