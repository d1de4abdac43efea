"""Facts: every source declared once (sources.py: its read-only command, its pure parser, its default), the parsers
per kind of source, and the record assembled from them (record.py). The probe that runs them as one remote
command is fleet/engine/probe.py; records are written by fleet/record/store.py. See docs/ARCHITECTURE.md "Facts
record" for the schema.
"""
