"""CLI subcommands: one module each, discovered by dpcore.cli. Each defines register(subparsers)."""
