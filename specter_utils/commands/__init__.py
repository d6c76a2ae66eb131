"""One module per ``specter-utils`` subcommand; each exposes ``register(subparsers)``."""
