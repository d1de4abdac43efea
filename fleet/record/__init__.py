"""The record stage: each host's facts written atomically as JSON (`store`), the previous one kept for drift.
Every command writes through `fleet.engine.session.record`."""
