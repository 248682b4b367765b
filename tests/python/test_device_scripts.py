"""The device scripts and the plan that names them hold up before a GPU machine sees them: a
device call is scarce, and a script that does not parse, or a plan that names a script or patch
that is not there or no longer applies, costs a whole call. Every shell script of the repository
parses (`bash -n`); the newest section of docs/notes/device_plan.md names only scripts that exist
and patches that apply to this tree (`git apply --check`)."""
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "notes" / "device_plan.md"


def _shell_scripts():
    scripts = sorted((ROOT / "scripts").rglob("*.sh")) + [ROOT / ".ci" / "run"]
    return [s for s in scripts if s.is_file()]


def _newest_plan_section():
    """The plan's first **Order** section: the one the next device session runs."""
    sections = re.split(r"(?m)^\*\*Order\*\*", PLAN.read_text())
    assert len(sections) >= 2, f"{PLAN} has no **Order** section"
    return sections[1]


def _named(pattern):
    return sorted(set(re.findall(pattern, _newest_plan_section())))


def test_there_are_device_scripts():
    assert any(s.parent.name == "device" for s in _shell_scripts())


@pytest.mark.parametrize("script", _shell_scripts(), ids=lambda s: str(s.relative_to(ROOT)))
def test_shell_script_parses(script):
    run = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert run.returncode == 0, f"{script.relative_to(ROOT)} does not parse:\n{run.stderr}"


def test_plan_names_existing_scripts():
    named = _named(r"scripts/[\w/.-]+\.(?:sh|py)")
    assert named, "the plan's newest section names no script"
    missing = [s for s in named if not (ROOT / s).is_file()]
    assert missing == [], f"device_plan.md names scripts that do not exist: {missing}"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_plan_patches_apply_to_this_tree():
    for patch in _named(r"docs/notes/patches/[\w.-]+\.patch"):
        path = ROOT / patch
        assert path.is_file(), f"device_plan.md names a patch that does not exist: {patch}"
        run = subprocess.run(["git", "apply", "--check", str(path)], cwd=ROOT,
                             capture_output=True, text=True)
        assert run.returncode == 0, f"{patch} no longer applies:\n{run.stderr}"
