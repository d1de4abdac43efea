"""One module per subcommand. Each defines `register(subparsers)`; the parser it adds sets `func(args, env) -> int`.

Modules here import only argparse-level things at the top, so `fleet --help` stays fast and works where only
PyYAML, Jinja2 and Rich are installed.
"""

# Order is the order `fleet --help` lists them in.
NAMES = ("apply", "verify", "health", "facts", "hosts", "validate", "bootstrap", "forget", "ssh", "run", "decide",
         "script", "serve", "collect", "lab", "completion")
