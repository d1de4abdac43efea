"""Resource types, one module each; `TYPES` maps the name a role uses to its class."""

from fleet.resources.apt import Apt
from fleet.resources.archive import Archive
from fleet.resources.assert_ import Assert
from fleet.resources.base import CheckResult, Resource
from fleet.resources.block import Block
from fleet.resources.command import Command
from fleet.resources.compat_gate import CompatGate
from fleet.resources.directory import Directory
from fleet.resources.file import File
from fleet.resources.git import Git
from fleet.resources.ld_aside import LdAside
from fleet.resources.ldconfig import Ldconfig
from fleet.resources.pip import Pip
from fleet.resources.verify import Verify

TYPES: dict[str, type[Resource]] = {cls.type_name: cls for cls in
                                    (Apt, File, Block, Directory, Git, Pip, Archive, Ldconfig, Command, Assert,
                                     Verify, LdAside, CompatGate)}

__all__ = ["TYPES", "Resource", "CheckResult"]
