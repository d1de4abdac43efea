"""Only what pyproject.toml cannot say: the packages the wheel holds (everything else is in pyproject.toml).

pyproject.toml's `packages` is either a fixed list or one `find`, and a find names a package by its directory:
it cannot find the built-in roles, which live at the repository's root as roles/<name>/ (Ansible's layout)
and ship as the package fleet.builtin_roles (pyproject.toml's package-dir maps that name to roles/). So both
are found here: every package of fleet/ and fleet_lab/ (namespace packages included, the directories that
hold package data), and roles/ with each of its directories under the name fleet.builtin_roles, so a new
role or template directory ships without a change here. tests/unit/test_packaging.py builds the wheel
and checks every file of roles/ is in it.
"""

from setuptools import find_namespace_packages, setup

BUILTIN_ROLES = "fleet.builtin_roles"

setup(packages=[
    *find_namespace_packages(include=["fleet", "fleet.*", "fleet_lab", "fleet_lab.*"]),
    BUILTIN_ROLES,
    *(f"{BUILTIN_ROLES}.{name}" for name in find_namespace_packages(where="roles")),
])
