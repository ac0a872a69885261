"""The project's own files: the two dependency lists agree, the README's commands exist."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement):
    return re.split(r"[<>=!~ ]", requirement.strip(), maxsplit=1)[0].lower()


def _pyproject_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    return {_name(r): r.replace(" ", "") for r in requirements}


def _conda_packages():
    packages = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"\s+-\s+([A-Za-z0-9_.-]+)(.*)$", line)
        if match and match.group(1) not in ("python", "pip", "conda-forge"):
            packages[match.group(1).lower()] = (match.group(1) + match.group(2)).replace(" ", "")
    return packages


def test_environment_yml_and_pyproject_name_the_same_packages_and_bounds():
    assert _conda_packages() == _pyproject_packages()


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)$", readme, flags=re.M)
    assert commands[:2] == ["lab", "test"], commands
    makefile = (ROOT / "Makefile").read_text()
    for target in commands[:2]:
        assert re.search(rf"^{target}:", makefile, flags=re.M), f"Makefile has no target {target}"
    assert "make test" in (ROOT / ".ci" / "run").read_text()
