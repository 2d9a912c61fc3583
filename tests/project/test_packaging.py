"""`pip install .`: the wheel's contents, its metadata, and the installed commands run away from the checkout.

The fast tests build the wheel once (`pip wheel --no-deps`, with hatchling fetched by pip's build
isolation) and install it without dependencies into a throwaway virtual environment that sees this
environment's packages (torch, streamlit, ...) through a .pth file. The slow one installs the checkout
with its dependencies into a fresh virtual environment, as a user would (about a minute).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
COMMANDS = ("attention-explorer", "transformer-train", "transformer-translate", "transformer-evaluate",
            "transformer-import")
APP = "attention_explorer"  # the wheel's folder for the app and the shipped checkpoints
SENTENCE = "In the beginning God created the heaven and the earth."
BUILD_TIMEOUT = 300  # seconds: pip fetches hatchling into an isolated build environment, then packs ~15 MB
INSTALL_TIMEOUT = 600  # the slow test's full install: torch, streamlit and the rest (about a minute here)
COMMAND_TIMEOUT = 120  # one command, torch import and model load included
SERVER_TIMEOUT = 90  # for the app's server to answer its health check


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"`{' '.join(map(str, command))}` did not finish within {timeout} s:\n{e.stdout}\n{e.stderr}")


def clean_env() -> dict[str, str]:
    """This environment, less what would point the commands back at the checkout or at test folders."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("EXPLORER_")}


def bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def site_packages(python: Path, workdir: Path) -> Path:
    result = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], COMMAND_TIMEOUT,
                 cwd=workdir, env=clean_env())
    return Path(result.stdout.strip())


# ----------------------------------------------------------------------------- metadata and the wheel


def test_dependencies_are_the_pinned_requirements():
    assert sorted(PYPROJECT["project"]["dependencies"]) == sorted(requirement_lines(REPO / "requirements.txt"))


def test_scripts_name_main_functions():
    scripts = PYPROJECT["project"]["scripts"]
    assert sorted(scripts) == sorted(COMMANDS)
    for name, target in scripts.items():
        module, function = target.split(":")
        imported = __import__(module, fromlist=[function])
        assert callable(getattr(imported, function)), f"{name}: {target} is not a function"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(out),
                  str(REPO)], BUILD_TIMEOUT, cwd=out)
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = out.glob("attention_explorer-*.whl")
    return path


def repo_files(folder: str) -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_wheel_holds_the_package_the_app_and_the_shipped_model(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert repo_files("transformer") <= names
    assert {f"{APP}/{name}" for name in repo_files("ui") | repo_files("pages")} <= names
    assert {f"{APP}/app.py", f"{APP}/.streamlit/config.toml"} <= names
    shipped = {f"{APP}/checkpoints/en-fr-bible/{f}" for f in ("config.json", "model.safetensors", "tokenizer.json")}
    assert shipped <= names
    strays = [n for n in names if n.endswith(".pyc") or n.split("/")[0] in ("tests", "bench", "notebooks", "docs",
                                                                             "ui", "pages", "checkpoints", "app.py")]
    assert not strays, f"files outside transformer/ and {APP}/ (ui, pages and app.py belong in {APP}/): {strays}"


def test_wheel_metadata_pins_and_entry_points(wheel):
    with zipfile.ZipFile(wheel) as z:
        info = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(z.read(f"{info}/METADATA").decode())
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert sorted(metadata.get_all("Requires-Dist")) == sorted(requirement_lines(REPO / "requirements.txt"))
    for name, target in PYPROJECT["project"]["scripts"].items():
        assert f"{name} = {target}" in entry_points


# ----------------------------------------------------------------------------- the installed commands


def check_installed_commands(venv: Path, workdir: Path) -> None:
    """What a user does after `pip install .`, from a folder other than the checkout."""
    env, bin_ = clean_env(), bin_dir(venv)
    python = bin_ / "python"
    where = run([str(python), "-c", f"import transformer, {APP}; print(transformer.__file__); "
                                    f"print(list({APP}.__path__)[0])"], COMMAND_TIMEOUT, cwd=workdir, env=env)
    assert where.returncode == 0, where.stderr
    installed = site_packages(python, workdir)
    package, app_dir = (Path(line) for line in where.stdout.splitlines())
    assert package.is_relative_to(installed) and app_dir.is_relative_to(installed), where.stdout

    for command in COMMANDS:
        result = run([str(bin_ / command), "--help"], COMMAND_TIMEOUT, cwd=workdir, env=env)
        assert result.returncode == 0 and "usage:" in result.stdout, f"{command} --help:\n{result.stderr}"

    default = run([str(python), "-c", "from transformer.decoding.translate import Translator; "
                                      "print(Translator().checkpoint.path)"], COMMAND_TIMEOUT, cwd=workdir, env=env)
    assert default.returncode == 0, default.stderr  # the package API finds the shipped model too
    assert Path(default.stdout.strip()) == app_dir / "checkpoints" / "en-fr-bible", default.stdout

    translated = run([str(bin_ / "transformer-translate"), SENTENCE], COMMAND_TIMEOUT, cwd=workdir, env=env)
    assert translated.returncode == 0, translated.stderr
    assert "Dieu" in translated.stdout and "terre" in translated.stdout, translated.stdout  # the shipped model

    printed = run([str(bin_ / "attention-explorer"), "--print-command"], COMMAND_TIMEOUT, cwd=workdir, env=env)
    assert f"run {app_dir / 'app.py'} --server.address 127.0.0.1 --server.headless true" in printed.stdout
    assert "--browser.gatherUsageStats false" in printed.stdout

    # The installed Home page runs: ui/ imports from beside app.py, and the shipped model is found there.
    home = run([str(python), "-c", f"""
import json, sys
from streamlit.testing.v1 import AppTest
app_dir = {str(app_dir)!r}
sys.path.insert(0, app_dir)
from ui.shared.models.catalog import find_models
at = AppTest.from_file(app_dir + "/app.py", default_timeout={COMMAND_TIMEOUT}).run()
print(json.dumps({{"models": [m.path for m in find_models()], "errors": [e.message for e in at.exception],
                  "ui": sys.modules["ui"].__file__}}))
"""], COMMAND_TIMEOUT * 2, cwd=workdir, env=env)
    assert home.returncode == 0, home.stderr
    report = json.loads(home.stdout.strip().splitlines()[-1])
    assert report["errors"] == [], report["errors"]
    assert Path(report["ui"]).is_relative_to(app_dir)
    assert report["models"][0] == str(app_dir / "checkpoints" / "en-fr-teaching")  # catalog.APP_MODEL first

    check_server_starts(bin_ / "attention-explorer", workdir, env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_server_starts(command: Path, workdir: Path, env: dict[str, str]) -> None:
    """`attention-explorer --server.port P` answers on 127.0.0.1:P; SIGTERM stops it."""
    port, log = free_port(), workdir / "attention-explorer.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(command), "--server.port", str(port)], cwd=workdir, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, answer = time.monotonic() + SERVER_TIMEOUT, None
        while answer != "ok":
            assert server.poll() is None, f"the server exited with {server.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, (f"no answer from http://127.0.0.1:{port}/_stcore/health within "
                                                 f"{SERVER_TIMEOUT} s:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    answer = response.read().decode()
            except OSError:
                time.sleep(0.5)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)


@pytest.mark.slow  # about a minute on 2 cores (the installed app's server starts); the wheel tests above stay in CI
@pytest.mark.skipif(os.name != "posix", reason="process groups and bin/ are POSIX")
def test_installed_commands_run_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    result = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], COMMAND_TIMEOUT)
    assert result.returncode == 0, result.stderr
    installed = run([sys.executable, "-m", "pip", "--python", str(bin_dir(venv) / "python"), "install", "--no-deps",
                     "--disable-pip-version-check", "--no-index", str(wheel)], COMMAND_TIMEOUT, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # This environment's packages (not the checkout) after the venv's own: the wheel's transformer comes first.
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages(bin_dir(venv) / "python", workdir) / "dev-environment.pth").write_text(
        "\n".join(ours) + "\n", encoding="utf-8")
    check_installed_commands(venv, workdir)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="process groups and bin/ are POSIX")
def test_pip_install_into_a_fresh_environment(tmp_path):
    """The README's `pip install .`, dependencies and all, run from another folder (about a minute)."""
    venv, workdir = tmp_path / "venv", tmp_path / "elsewhere"
    workdir.mkdir()
    result = run([sys.executable, "-m", "venv", str(venv)], COMMAND_TIMEOUT)
    assert result.returncode == 0, result.stderr
    installed = run([str(bin_dir(venv) / "pip"), "install", "--disable-pip-version-check", str(REPO)],
                    INSTALL_TIMEOUT, cwd=workdir, env=clean_env())
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    check_installed_commands(venv, workdir)
