"""The two tiers (``tests/conftest.py``): a test is slow by the fixtures it uses, found by
their definitions (not only their names), and a fast test that starts a kernel fails.

The guard is tried on a small test file of its own, run by a second pytest session
(pytest's ``pytester``) with the project's conftest as a plugin: each case that starts
a kernel in the fast tier fails with a message naming it, whatever it does with the
refusal.
"""

import ast
import sys

from tests.conftest import KERNEL_COMMAND, ROOT, SLOW_FIXTURES

pytest_plugins = ["pytester"]

CASES = '''
import subprocess
import sys

import pytest

KERNEL = [sys.executable, "-c", "pass", "-m", "ipykernel_launcher"]  # a kernel's command line; runs nothing


@pytest.fixture
def course(tmp_path):  # a bare folder, as in test_intake: the session's graded course only by name
    return tmp_path


@pytest.fixture(scope="module")
def graded_in_set_up():
    subprocess.run([sys.executable, "-c", "pass", "-m", "nbgrader", "autograde", "level1"])


def test_a_fixture_that_shares_a_slow_name_is_fast(course, request):
    assert request.node.get_closest_marker("slow") is None


def test_a_slow_test_may_start_a_kernel(kernels, request):
    assert request.node.get_closest_marker("slow") is not None
    subprocess.run(KERNEL, check=True)


def test_starts_a_process_of_a_kernel():
    subprocess.run(KERNEL)


def test_swallows_the_refusal():
    try:
        subprocess.Popen(KERNEL).wait()
    except BaseException:
        pass


def test_starts_a_kernel_manager():
    from jupyter_client import KernelManager

    KernelManager(kernel_name="python3").start_kernel()


def test_uses_a_fixture_that_grades(graded_in_set_up):
    pass


def test_starts_a_pool_of_grading_processes():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(print).result()


def test_starts_something_else():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
'''


def test_a_fast_test_that_starts_a_kernel_fails_and_is_named(pytester):
    pytester.makepyfile(test_cases=CASES)
    # In this process (the conftest's modules are loaded already): the second session installs
    # the guard again over this one's and takes it off at its end.
    run = pytester.runpytest_inprocess("-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "-rA")
    out = run.stdout.str() + run.stderr.str()
    outcome = {line.split()[1].split("::")[-1]: line.split()[0] for line in out.splitlines()
               if line.startswith(("PASSED ", "FAILED ", "ERROR "))}
    assert outcome == {
        "test_a_fixture_that_shares_a_slow_name_is_fast": "PASSED",
        "test_a_slow_test_may_start_a_kernel": "PASSED",
        "test_starts_a_process_of_a_kernel": "FAILED",
        "test_swallows_the_refusal": "FAILED",
        "test_starts_a_kernel_manager": "FAILED",
        "test_uses_a_fixture_that_grades": "ERROR",  # in its set-up
        "test_starts_a_pool_of_grading_processes": "FAILED",
        "test_starts_something_else": "PASSED",
    }, out[-4000:]
    for name in ("test_starts_a_process_of_a_kernel", "test_swallows_the_refusal", "test_starts_a_kernel_manager",
                 "test_uses_a_fixture_that_grades", "test_starts_a_pool_of_grading_processes"):
        assert f"test_cases.py::{name} is in the fast tier (not marked slow) but started" in out, (name, out[-4000:])
    assert "ipykernel_launcher" in out and "KernelManager.start_kernel" in out and "nbgrader autograde" in out


def test_the_kernel_commands_are_recognised():
    python = sys.executable
    for argv in ([python, "-m", "ipykernel_launcher", "-f", "kernel.json"],
                 [python, "-m", "autograders.grading.sandbox", '{"workdir": "/tmp/w"}', "--", python, "-c", "pass"],
                 [python, "-I", "/x/autograders/grading/sandbox.py", '{"workdir": "/tmp/w"}', "--", "true"],
                 ["bwrap", "--unshare-pid", "--", python, "-c", "pass"],
                 [python, "-m", "autograders.student.serve", "serve", "3", "4"],
                 [python, "-m", "nbgrader", "autograde", "level1_recognition"],
                 [python, "-m", "nbgrader", "validate", "level1.ipynb"],
                 [python, "-m", "autograders", "grade", "--course", "course"],
                 [python, "-m", "jupyter", "lab", "--no-browser"], [python, "-m", "voila", "classroom.ipynb"],
                 ["/usr/bin/chromium", "--headless"]):
        assert KERNEL_COMMAND.search(" ".join(argv)), argv
    for argv in ([python, "-m", "nbgrader", "generate_assignment", "*"], [python, "-c", "import numpy"],
                 ["unshare", "--net", "--mount", "true"], ["git", "ls-files"], [python, "-m", "autograders", "practice"]):
        assert not KERNEL_COMMAND.search(" ".join(argv)), argv


def test_every_slow_fixture_is_defined_where_it_is_listed():
    """A fixture moved or renamed without its entry would leave its tests in the fast tier
    (where the guard fails them): each entry names a fixture of that file."""
    for where, names in SLOW_FIXTURES.items():
        tree = ast.parse((ROOT / where).read_text())
        fixtures = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                    and any("fixture" in ast.unparse(d) for d in node.decorator_list)}
        assert names <= fixtures, f"{where} defines no fixture {sorted(names - fixtures)}"



GROUPED = '''
import os

import pytest


def ran(group):
    with open("ran.txt", "a") as out:
        out.write(f"{group} {os.environ['PYTEST_XDIST_WORKER']}\\n")


@pytest.mark.parametrize("i", range(4))
@pytest.mark.xdist_group("first")
def test_first(i):
    ran("first")


@pytest.mark.parametrize("i", range(4))
@pytest.mark.xdist_group("second")
def test_second(i):
    ran("second")
'''


def test_two_workers_keep_a_group_on_one_worker(pytester, kernels):
    """`make test WORKERS=2` relies on ``--dist loadgroup``: pytest 9.2 keeps node ids where
    pytest-xdist 3.8 does not write its group, and the groups were then silently ignored."""
    pytester.makepyfile(test_grouped=GROUPED)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-q")
    ran = [line.split() for line in (pytester.path / "ran.txt").read_text().splitlines()]
    assert len(ran) == 8, run.stdout.str()[-3000:]
    workers = {group: {worker for g, worker in ran if g == group} for group in ("first", "second")}
    assert all(len(found) == 1 for found in workers.values()), workers
