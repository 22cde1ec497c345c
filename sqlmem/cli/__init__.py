"""The `sqlmem` command line: `main(argv) -> exit status`.

Exit status 0 on success, 1 when the command failed (or `check` found damage), 2 when the
command line itself was wrong. Every failure is one `sqlmem: error: ...` line on stderr,
never a traceback: people read these, and scripts match on the status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import SqlmemError
from .output import Output, print_error
from .parser import UsageError, build_parser
from .signals import Terminated

__all__ = ["main"]

Handler = Callable[[argparse.Namespace, Output], int]


def _handlers() -> dict[str, Handler]:
    # Imported here so `sqlmem --help` does not pay for the stores and the demo.
    from .commands import run_check, run_history, run_info, run_migrate, run_search
    from .demo import run_demo
    from .docs import run_docs
    from .facts_commands import run_fact_history, run_forget
    from .mcp_server import run_mcp
    from .memory_commands import run_embed, run_maintain, run_pack, run_vacuum
    from .recall import run_recall
    from .sessions import run_sessions
    from .transfer import run_export, run_import
    from .ui_command import run_ui

    return {
        "demo": run_demo,
        "info": run_info,
        "check": run_check,
        "migrate": run_migrate,
        "search": run_search,
        "history": run_history,
        "sessions": run_sessions,
        "export": run_export,
        "import": run_import,
        "docs": run_docs,
        "maintain": run_maintain,
        "vacuum": run_vacuum,
        "embed": run_embed,
        "pack": run_pack,
        "mcp": run_mcp,
        "recall": run_recall,
        "ui": run_ui,
        "fact-history": run_fact_history,
        "forget": run_forget,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `sqlmem` command; returns the exit status instead of exiting."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print_error(f"{exc} (see '{exc.prog} --help')")
        return 2
    except SystemExit as exc:  # --help and --version print, then argparse exits
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except Terminated as exc:  # SIGTERM/SIGHUP during work that cleans up (signals.py)
        print_error("terminated")
        return 128 + exc.signum
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (`sqlmem export db | head`): not an error
        return 1
    except SqlmemError as exc:
        print_error(str(exc))
        return 1
    except OSError as exc:
        print_error(_os_error(exc))
        return 1
    except Exception as exc:  # a bug: still one line, and what to report
        print_error(f"unexpected {type(exc).__name__}: {exc} (this is a bug in sqlmem)")
        return 1


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        sys.stdout.write(f"sqlmem {__version__}\n")
        return 0
    if args.command is None:
        raise UsageError(
            "a command is required: demo, info, check, migrate, search, history, sessions, "
            "export, import, docs, maintain, vacuum, embed, pack, mcp or ui",
            "sqlmem",
        )
    return _handlers()[args.command](args, Output(args.json))


def _os_error(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
