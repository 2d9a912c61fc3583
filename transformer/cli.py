"""Entry points of the installed commands (`pip install .`), beside `python -m transformer.training` and the others.

    attention-explorer [STREAMLIT OPTIONS]    the app: `streamlit run app.py` with .streamlit/config.toml's settings
    transformer-translate ...   python -m transformer.decoding.translate ...   (transformer.decoding.translate:main)
    transformer-train ...       python -m transformer.training ...             (transformer.training.cli:main)
    transformer-evaluate ...    python -m transformer.decoding.evaluate ...    (transformer.decoding.evaluate:main)

A wheel puts the app (app.py, pages/, ui/, .streamlit/config.toml) and the shipped checkpoints in an
`attention_explorer` folder beside this package, as they sit beside it in the repository; see
[tool.hatch.build] in pyproject.toml. The app runs as `python -m streamlit run ...` (exec'd on POSIX), so this
package still never imports streamlit.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

APP_PACKAGE = "attention_explorer"  # where a wheel puts the app's files (pyproject.toml, [tool.hatch.build])
APP_SCRIPT = "app.py"


def app_dir() -> Path:
    """The folder holding app.py: the repository checkout this package runs from, or the installed app."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / APP_SCRIPT).is_file():
        return checkout
    spec = importlib.util.find_spec(APP_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / APP_SCRIPT).is_file():
            return Path(location)
    raise FileNotFoundError(f"the app ({APP_SCRIPT}) is neither beside {checkout / 'transformer'} nor installed "
                            f"as the {APP_PACKAGE!r} package: reinstall with `pip install .` from the repository")


def streamlit_flags(config_file: Path) -> list[str]:
    """`--section.option value` for every setting of a Streamlit config.toml.

    Streamlit reads .streamlit/config.toml from the working directory only, so an app started from
    anywhere else gets the repository's settings (127.0.0.1, headless, no usage stats) as flags.
    """
    if not config_file.is_file():
        return []
    with config_file.open("rb") as f:
        config = tomllib.load(f)
    flags = []
    for section, options in config.items():
        for option, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags += [f"--{section}.{option}", text]
    return flags


def app_command(streamlit_args: Sequence[str] = ()) -> list[str]:
    """The `streamlit run` command line; streamlit_args come last, so they override the config's settings."""
    root = app_dir()
    return [sys.executable, "-m", "streamlit", "run", str(root / APP_SCRIPT),
            *streamlit_flags(root / ".streamlit" / "config.toml"), *streamlit_args]


def app_environment() -> dict[str, str]:
    """The server's environment: this one, plus defaults the user has not set."""
    env = dict(os.environ)
    if app_dir() != Path(__file__).resolve().parent.parent:
        # An installed app would otherwise keep its runs inside site-packages (ui.shared.models.catalog.runs_dir).
        env.setdefault("EXPLORER_RUNS", str(Path.cwd() / "runs"))
    # glibc: at most 2 malloc arenas, however many threads Streamlit starts, so that freed memory is given back
    # (transformer/memory.py); it must be set before the server's first thread, hence here. Other C libraries ignore it.
    env.setdefault("MALLOC_ARENA_MAX", "2")
    return env


def app(argv: Sequence[str] | None = None) -> int:
    """`attention-explorer`: start the Streamlit app on http://127.0.0.1:8501 (Ctrl-C stops it)."""
    parser = argparse.ArgumentParser(
        prog="attention-explorer",
        description="Start the Attention Explorer app (Streamlit) on http://127.0.0.1:8501. Other options go to "
                    "`streamlit run`, e.g. --server.port 8502. Training runs started in the app go to ./runs "
                    "unless EXPLORER_RUNS names another folder; EXPLORER_CHECKPOINTS adds your own checkpoints.")
    parser.add_argument("--print-command", action="store_true", help="print the streamlit command and exit")
    args, streamlit_args = parser.parse_known_args(argv)
    try:
        command = app_command(streamlit_args)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.print_command:
        print(" ".join(command))
        return 0
    env = app_environment()
    if os.name == "posix":  # become the server, so that Ctrl-C and SIGTERM reach it directly
        os.execve(sys.executable, command, env)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:  # the server got the same Ctrl-C and stops by itself
        return 130
