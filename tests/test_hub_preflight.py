"""``hub up`` refuses, before changing anything, when it cannot work: not root, a port taken,
a roster with errors. Nothing is installed, written or created (the hub's folder does not
appear, no account is made)."""

import os
import socket

import pytest

from autograders.hub import accounts, hub
from autograders.hub.roster import RosterError
from autograders.hub.settings import HubSettings

from .browser.servers import hub_ports


@pytest.fixture
def nothing_may_change(monkeypatch, tmp_path):
    """Settings in a fresh folder, and every step after the checks made to fail the test."""
    def changed(*args, **kwargs):
        raise AssertionError("hub up went past its checks")

    for step in ("install_environments", "write_configuration", "create_accounts", "prepare_course", "start_hub"):
        monkeypatch.setattr(hub, step, changed)
    port, exchange_port = hub_ports()
    return HubSettings(root=str(tmp_path / "state"), prefix=str(tmp_path / "prefix"), port=port,
                       exchange_port=exchange_port, instructor="mhaqteach")


def roster(tmp_path, rows):
    path = tmp_path / "roster.csv"
    path.write_text("id,first_name,last_name,email\n" + "".join(f"{r},,,\n" for r in rows))
    return path


def unchanged(settings, ids):
    assert not os.path.exists(settings.root) and not os.path.exists(settings.prefix)
    assert not any(accounts.exists(i) for i in ids)


def test_not_root_is_refused_first(nothing_may_change, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(hub.HubError, match="needs root .* run it as root or with sudo"):
        hub.up(nothing_may_change, roster(tmp_path, ["mhaqann"]))
    unchanged(nothing_may_change, ["mhaqann"])


@pytest.mark.skipif(os.geteuid() != 0, reason="the remaining checks come after the root check")
@pytest.mark.parametrize("which", ["port", "hub_port", "proxy_api_port", "exchange_port"])
def test_a_taken_port_is_refused_by_name(nothing_may_change, tmp_path, which):
    settings = nothing_may_change
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", getattr(settings, which)))
        taken.listen()
        with pytest.raises(hub.HubError, match=f"{getattr(settings, which)} is taken by another program"):
            hub.up(settings, roster(tmp_path, ["mhaqann"]))
    unchanged(settings, ["mhaqann"])


@pytest.mark.skipif(os.geteuid() != 0, reason="the remaining checks come after the root check")
def test_a_roster_with_errors_creates_nothing(nothing_may_change, tmp_path):
    ids = ["mhaqann", "Mhaqben", "mhaqann", "daemon", "../x"]
    with pytest.raises(RosterError) as caught:
        hub.up(nothing_may_change, roster(tmp_path, ids))
    assert [line.split(":")[0] for line in caught.value.problems] == ["line 3", "line 4", "line 5", "line 6"]
    unchanged(nothing_may_change, ["mhaqann", "mhaqben"])


@pytest.mark.skipif(os.geteuid() != 0, reason="the remaining checks come after the root check")
def test_an_instructor_login_that_is_another_account_is_refused(nothing_may_change, tmp_path):
    nothing_may_change.instructor = "daemon"
    with pytest.raises(hub.HubError, match="instructor: 'daemon' is an existing system account"):
        hub.up(nothing_may_change, roster(tmp_path, ["mhaqann"]))
    unchanged(nothing_may_change, ["mhaqann"])


def test_the_cli_prints_the_refusal_in_one_line_and_exits_2(tmp_path, capsys):
    from autograders.__main__ import main

    assert main(["hub", "up", "--roster", str(tmp_path / "missing.csv"), "--root", str(tmp_path / "s"),
                 "--prefix", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("make hub: ") and ("needs root" in err or "cannot be read" in err)
    assert not (tmp_path / "s").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the remaining checks come after the root check")
def test_a_prefix_too_long_for_a_kernels_socket_is_refused(nothing_may_change, tmp_path):
    settings = nothing_may_change
    settings.prefix = str(tmp_path / ("m" * 60))
    with pytest.raises(hub.HubError, match=f"prefix '{settings.prefix}' is too long: a kernel's socket under it"):
        hub.up(settings, roster(tmp_path, ["mhaqann"]))
    unchanged(settings, ["mhaqann"])


def test_two_hubs_get_exchange_ports_of_their_own_and_each_keeps_its_own(tmp_path):
    """The exchange's port was fixed at 10101: a second hub on the machine collided. Now each root's first
    ``hub up`` picks a free one, off the hub's three, recorded in its settings.json and kept at a restart;
    a recorded port another program took meanwhile is replaced."""
    port, _ = hub_ports()
    first = HubSettings(root=str(tmp_path / "one"), port=port)
    chosen = hub.choose_exchange_port(first)
    assert chosen not in (0, port, port + 1, port + 2) and first.exchange_port == chosen
    first.save()
    with socket.socket() as holder:  # the first hub's exchange runs: the second hub cannot have its port
        holder.bind(("127.0.0.1", chosen))
        holder.listen()
        second = HubSettings(root=str(tmp_path / "two"), port=port + 10)
        assert hub.choose_exchange_port(second) not in (chosen, port + 10, port + 11, port + 12)
        again = HubSettings(root=str(tmp_path / "one"), port=port)
        # Taken, and not by this root's hub (not running): another program; a new one is chosen.
        assert hub.choose_exchange_port(again) != chosen
    restarted = HubSettings(root=str(tmp_path / "one"), port=port)
    assert hub.choose_exchange_port(restarted) == chosen, "the recorded port is kept while it is free"
    given = HubSettings(root=str(tmp_path / "one"), port=port, exchange_port=12345)
    assert hub.choose_exchange_port(given) == 12345, "a port given on the command line is used"
    assert HubSettings().exchange_port == 0


def test_make_hub_and_hub_stop_take_the_same_root_and_prefix():
    """`make hub-stop` stopped only the default root; both targets now pass ROOT and PREFIX, whose
    defaults are the command's."""
    import re
    import subprocess
    from pathlib import Path

    makefile = Path(__file__).resolve().parents[1] / "Makefile"
    defaults = dict(re.findall(r"^(ROOT|PREFIX)\s*\?=\s*(\S+)$", makefile.read_text(), re.M))
    assert defaults == {"ROOT": HubSettings().root, "PREFIX": HubSettings().prefix}
    for target in ("hub", "hub-stop"):
        shown = subprocess.run(["make", "-n", "-C", str(makefile.parent), target, "ROOT=/srv/second",
                                "PREFIX=/opt/second", "ROSTER=/dev/null"], capture_output=True, text=True).stdout
        line = next(line for line in shown.splitlines() if "autograders hub" in line)
        assert '--root "/srv/second" --prefix "/opt/second"' in line, line
