"""The start of a program fleet ships as one file of several modules (fleet/remote/__init__.py bundle): the text
before this holds _BUNDLED, {module: its source} for fleet/remote's modules the program needs (dotted, relative to
fleet/remote: "trace", "verify", "verify.runner"), and _MAIN, the module whose main(argv, program) runs.

Each is served as a real module of a package named PACKAGE, so their relative imports (`from .. import trace`,
`from . import kinds`) resolve on the host as they do in fleet's source. Standalone and stdlib only: the host's
python runs it where fleet is not installed.
"""

import importlib.util
import os
import sys

PACKAGE = "fleet_remote"


class Bundled:
    """A finder and loader for the modules in `sources`: PACKAGE itself (empty), and PACKAGE.NAME for each NAME."""

    def __init__(self, sources):
        self.sources = {"": "", **sources}
        self.packages = {""} | {name.rpartition(".")[0] for name in sources}

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != PACKAGE or name not in self.sources:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=f"<fleet {name or PACKAGE}>",
                                               is_package=name in self.packages)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__[len(PACKAGE) + 1:]
        exec(compile(self.sources[name], module.__spec__.origin, "exec"), module.__dict__)


sys.meta_path.insert(0, Bundled(globals()["_BUNDLED"]))

if __name__ == "__main__":
    main = importlib.import_module(f"{PACKAGE}.{globals()['_MAIN']}").main
    sys.exit(main(sys.argv[1:], program=os.path.abspath(__file__)))
