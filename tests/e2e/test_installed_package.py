"""The package as a user installs it: a wheel built from this checkout, installed into a fresh
environment, run from a folder that is not the checkout.

The fresh environment takes its dependencies from this one's site-packages through a path file
(installing torch and the rest again would take minutes and prove nothing about our package);
what it must find on its own is ours: one ``learning_memory`` package and the ``learning-memory``
command, with nothing of the checkout on its path.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli_http import assert_demo_ran
from tests.support.claude_code import ClaudeCodeMissing, ClaudeHome, pinned_claude

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], *, timeout: float, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stdout + done.stderr
    return done  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the checkout's files: a build in place would leave build/ and egg-info
    # behind. The links of learning_memory/ are copied as links.
    source = tmp_path_factory.mktemp("source")
    listed = _run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], timeout=60, cwd=REPO_ROOT
    ).stdout.splitlines()
    for name in listed:
        if (REPO_ROOT / name).is_symlink() or (REPO_ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, source / name, follow_symlinks=False)
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        timeout=300,
    )
    (built,) = out.glob("learning_memory_server-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120)
    python = venv / "bin" / "python"
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=30
    ).stdout.strip()
    # A path line only: this environment's own .pth files (among them the editable install of the
    # checkout) are not read from a folder added this way.
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        timeout=300,
    )
    yield venv


def test_the_wheel_holds_one_namespaced_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"learning_memory"}
    assert "learning_memory/.claude-plugin/marketplace.json" in names
    assert "learning_memory/plugin/hooks/hooks.json" in names
    assert "learning_memory/cli/sample_experiences.json" in names  # the demo's data
    # The web view's every asset: nothing is fetched from a CDN or built at install.
    assert "learning_memory/server/ui/templates/base.html" in names
    assert "learning_memory/server/ui/static/clusters.js" in names
    assert "learning_memory/plugin/skills/memory/SKILL.md" in names
    for module in (
        "server/app.py",
        "worker/main.py",
        "shared/settings.py",
        "cli/demo_project.py",
        "composition.py",
    ):
        assert f"learning_memory/{module}" in names


def test_the_installed_command_imports_the_installed_package(installed: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.util, learning_memory.server.app as app; print(app.__file__); "
        "print([m for m in ('server', 'worker', 'shared', 'bench') if importlib.util.find_spec(m)])"
    )
    out = _run([str(installed / "bin" / "python"), "-c", code], timeout=60, cwd=tmp_path).stdout
    where, leaked = out.splitlines()
    assert Path(where).is_relative_to(installed)
    assert leaked == "[]"


def test_demo_runs_from_the_installed_package_in_any_folder(
    installed: Path, lms_env: dict[str, str], tmp_path: Path
) -> None:
    # The installed demo brings its own sample project too, and leaves nothing behind here.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _run(
        [str(installed / "bin" / "learning-memory"), "demo"],
        timeout=600,
        cwd=elsewhere,
        env={**lms_env, "LMS_QUEUE": "inline"},
    )
    assert_demo_ran(done.stdout)
    assert sorted(p.name for p in elsewhere.iterdir()) == []


def test_claude_install_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    # The marketplace and its plugin ship inside the package: installed with the real Claude Code,
    # the plugin records the installed command, which its launcher then runs.
    try:
        claude = pinned_claude()
    except ClaudeCodeMissing as exc:  # pragma: no cover - make test installs it
        pytest.fail(str(exc))
    home = ClaudeHome.create(tmp_path / "home", claude)
    command = installed / "bin" / "learning-memory"
    done = subprocess.run(
        [str(command), "claude", "install"],
        env=home.env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert home.plugin_enabled()
    recorded = Path(home.env()["XDG_CONFIG_HOME"]) / "learning-memory" / "command"
    assert Path(recorded.read_text().strip()) == command
    (entry,) = home.plugin_listing()
    assert Path(entry["readFromFolder"]).is_relative_to(installed)  # not this checkout's plugin/
    plugin_root = Path(entry["installPath"])
    status = subprocess.run(
        [str(plugin_root / "bin" / "learning-memory"), "--help"],
        env={**home.env(), "CLAUDE_PLUGIN_ROOT": str(plugin_root)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert status.returncode == 0 and "learning-memory" in status.stdout, status.stderr
