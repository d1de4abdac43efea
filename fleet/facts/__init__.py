"""Facts: the probe script (one remote command per host), pure parsers per source, atomic JSON records,
and the side-by-side comparison. See docs/ARCHITECTURE.md "Facts record" for the schema.

    probe.script(vars) -> str            probe.parse(sections, host_name) -> record
    gather.gather(conn, host, vars)      store.write / store.read        compare.compare / compare.drift
"""
