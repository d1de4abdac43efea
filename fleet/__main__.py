from fleet.cli import entry

entry()
