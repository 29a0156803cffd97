"""What gets installed: one package, ``windowfit``, and nothing generic beside it (issue 6)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import windowfit
from windowfit.cli.app import app
from windowfit.fitting import estimate

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("windowfit-*.whl")
    return built


@pytest.mark.slow
def test_wheel_installs_only_the_windowfit_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"windowfit"}
    for module in (
        "windowfit/__init__.py",
        "windowfit/__main__.py",
        "windowfit/cli/app.py",
        "windowfit/fitting/fit.py",
    ):
        assert module in names
    # data the core reads at run time, and the typing markers
    for data in ("windowfit/fitting/rules.json", "windowfit/fitting/py.typed", "windowfit/py.typed"):
        assert data in names
    # the compiled counter, where this machine could build it, lands inside the package with its stub
    assert "windowfit/fitting/_classcount.pyi" in names
    compiled = [n for n in names if n.rsplit("/", 1)[-1].startswith("_classcount.") and n.endswith((".so", ".pyd"))]
    assert all(n.startswith("windowfit/fitting/_classcount.") for n in compiled)
    if estimate.COMPILED:
        assert len(compiled) == 1, names
    assert "windowfit/fitting/_ccline.pyi" in names  # the scanner of Claude Code lines (fitting/_ccline.c)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    # the fast path of report --json and check --format json first, then Typer (cli/fast.py)
    assert "windowfit = windowfit.cli.fast:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_a_package_named_fitting_beside_it_changes_nothing(wheel: Path, tmp_path: Path) -> None:
    # PyPI has an unrelated 'fitting' package; installed next to ours it must not replace anything of ours.
    target = tmp_path / "site"
    impostor = target / "fitting"
    impostor.mkdir(parents=True)
    (impostor / "__init__.py").write_text("raise ImportError('the other fitting package')\n")
    (target / "cli").mkdir()
    (target / "cli" / "__init__.py").write_text("raise ImportError('some other cli package')\n")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    probe = "from windowfit.fitting import plan_fit; from windowfit.cli.app import app; print('ok')"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True, text=True
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert windowfit.__version__ == version("windowfit")


def test_version_option_and_module_entry_point() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"windowfit {windowfit.__version__}"
    done = subprocess.run([sys.executable, "-m", "windowfit", "--help"], capture_output=True, text=True, check=True)
    assert "Usage:" in done.stdout and "fit" in done.stdout
