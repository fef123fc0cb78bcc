"""Running the CLI in-process for tests: exit code, stdout, stderr, and the one-line-error rule."""

from dpcore.cli import main


def run(capsys, *args):
    """``python -m dpcore ARGS`` in this process: (exit code, stdout, stderr)."""
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line(err: str) -> bool:
    """An error the CLI prints: exactly one line on stderr, never a traceback."""
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err
