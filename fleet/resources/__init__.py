"""Resource types, one module each; `TYPES` maps the name a role uses to its class."""

from .apt import Apt
from .archive import Archive
from .assert_ import Assert
from .base import CheckResult, Resource
from .block import Block
from .command import Command
from .directory import Directory
from .file import File
from .git import Git
from .ldconfig import Ldconfig
from .pip import Pip
from .verify import Verify

TYPES: dict[str, type[Resource]] = {cls.type_name: cls for cls in
                                    (Apt, File, Block, Directory, Git, Pip, Archive, Ldconfig, Command, Assert,
                                     Verify)}

__all__ = ["TYPES", "Resource", "CheckResult"]
