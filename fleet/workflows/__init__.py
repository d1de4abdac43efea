"""Compositions of the stages for one whole job: `bootstrap` (an SSH line to a verified pod) and `script` (the
standalone script a pod template runs at start, with `script_runtime` deciding on the host what depends on its
kernel driver). They call the session API and the engine's stages; nothing here is a stage of its own."""
