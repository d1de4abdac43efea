"""Facts: the probe script (one remote command per host), pure parsers per source, atomic JSON records,
and the side-by-side comparison. See docs/ARCHITECTURE.md "Facts record" for the schema.

    probe.script(vars) -> str            probe.parse(sections, host_name) -> record
    store.write / store.read (fleet.engine.session gathers and records)        compare.compare / compare.drift
"""
