"""fleet's built-in roles: `<name>/role.yaml` (+ `templates/`), at the repository's root as Ansible lays roles out.

This directory is the package `fleet.builtin_roles` (pyproject.toml's package-dir maps that name to roles/):
a wheel ships it as fleet/builtin_roles/, an editable install maps the name here, and fleet.roles finds the
built-in roles through that import alone (BUILTIN_DIR). This file is what makes it a regular package, which
the editable install's import hook needs. It holds no code; nothing else here is Python.
"""
