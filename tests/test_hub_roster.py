"""The hub's roster and settings: every bad row named with its reason, nothing taken on trust."""

from pathlib import Path

import pytest

from autograders.hub.roster import RosterError, Student, login_problem, read_roster
from autograders.hub.settings import HubSettings

HEADER = "id,first_name,last_name,email\n"


def roster(tmp_path, text, name="roster.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path, **kwargs):
    with pytest.raises(RosterError) as caught:
        read_roster(path, instructor=kwargs.pop("instructor", "teacher"), **kwargs)
    return caught.value.problems


def test_a_good_roster_gives_its_students_in_order(tmp_path):
    path = roster(tmp_path, HEADER + "alice,Alice,Liddell,alice@example.org\nbob_2,Bob,,\n\n")
    assert read_roster(path, instructor="teacher") == [
        Student("alice", "Alice", "Liddell", "alice@example.org"), Student("bob_2", "Bob", "", "")]


def test_columns_may_come_in_any_order_and_a_bom_is_ignored(tmp_path):
    path = roster(tmp_path, "\ufeffemail,id,last_name,first_name\na@x.org,ann,Lee,Ann\n")
    assert read_roster(path, instructor="teacher") == [Student("ann", "Ann", "Lee", "a@x.org")]


@pytest.mark.parametrize("login, reason", [
    ("Alice", "not a valid login"),
    ("al ice", "not a valid login"),
    ("../x", "not a valid login"),
    ("x/y", "not a valid login"),
    ("1abc", "not a valid login"),
    ("-abc", "not a valid login"),
    ("a" * 33, "not a valid login"),
    ("bob$", "not a valid login"),
    ("root", "reserved"),
    ("ngshare", "reserved"),
    ("course-admin", "reserved"),
    ("", "empty id"),
])
def test_a_bad_login_is_named_with_its_line(tmp_path, login, reason):
    path = roster(tmp_path, HEADER + "good,G,H,g@x.org\n" + f"{login},A,B,a@x.org\n")
    [line] = problems(path)
    assert line.startswith("line 3: ") and reason in line, line


def test_every_bad_row_is_listed_not_only_the_first(tmp_path):
    path = roster(tmp_path, HEADER + "alice,A,,\nRoot,R,,\nalice,A,,\nbob,B\nteacher,T,,\ndaemon,D,,\n")
    lines = problems(path, foreign=lambda name: name == "daemon")
    assert lines == [
        "line 3: id 'Root' is not a valid login (lower-case letters, digits, '_' and '-', starting with a "
        "letter or '_', at most 32 characters)",
        "line 4: id 'alice' repeats line 2",
        "line 5: 2 fields, the header has 4",
        "line 6: id 'teacher' is the instructor's login",
        "line 7: id 'daemon' is an existing system account that this hub did not create",
    ]


def test_the_message_says_nothing_was_created(tmp_path):
    path = roster(tmp_path, HEADER + "Bad,,,\n")
    with pytest.raises(RosterError, match="nothing was created"):
        read_roster(path, instructor="teacher")


@pytest.mark.parametrize("text, expected", [
    ("id,first_name,email\nalice,A,a@x\n", "lacks the column(s) last_name"),
    ("login,first_name,last_name,email\n", "lacks the column(s) id"),
    ("", "is empty"),
])
def test_a_bad_header_is_refused(tmp_path, text, expected):
    [line] = problems(roster(tmp_path, text))
    assert expected in line


def test_an_unreadable_roster_is_refused(tmp_path):
    [line] = problems(tmp_path / "missing.csv")
    assert "cannot be read" in line
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00bad")
    [line] = problems(binary)
    assert line == "line 1: not a text file (a NUL byte: binary data?)"


def test_login_rules_accept_what_useradd_accepts():
    for good in ("alice", "_svc", "a-b_c9", "x" * 32):
        assert login_problem(good) is None, good


@pytest.mark.parametrize("change, message", [
    (dict(signup="maybe"), "signup must be one of"),
    (dict(port=0), "port must be a TCP port"),
    (dict(exchange_port=70000), "exchange_port must be a TCP port"),
    (dict(cull_timeout=5), "cull_timeout must be at least 60"),
    (dict(demo_password="short"), "demo_password must have at least 8"),
])
def test_settings_refuse_bad_values_by_name(change, message):
    with pytest.raises(ValueError, match=message):
        HubSettings(**change)


def test_a_runtime_folder_holds_a_kernels_socket_for_the_largest_uid_under_the_default_prefix():
    from autograders.hub.settings import KERNEL_SOCKET_NAME, SOCKET_PATH_MAX

    settings = HubSettings()
    assert settings.runtime_dir(2**32 - 1) == Path("/opt/mha-workbook/run/4294967295")
    assert settings.longest_socket_path() == len("/opt/mha-workbook/run/4294967295") + KERNEL_SOCKET_NAME <= SOCKET_PATH_MAX
    assert KERNEL_SOCKET_NAME == len("/kernel-12345678-1234-1234-1234-123456789abc-ipc-5")


def test_settings_round_trip_through_their_file(tmp_path):
    settings = HubSettings(root=str(tmp_path), students=["a", "b"], port=8123)
    settings.save()
    assert HubSettings.load(tmp_path) == settings


def test_only_roster_students_sign_up_and_nobody_signs_up_as_the_instructor(tmp_path):
    from autograders.hub.auth import RosterAuthenticator

    password = tmp_path / "password"
    password.write_text("the-instructors-password\n")
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    db = sessionmaker(bind=create_engine("sqlite://"))()  # NativeAuthenticator's table, in memory
    auth = RosterAuthenticator(db=db, roster={"alice", "bob"}, admin_users={"teacher"},
                               instructor_password_file=str(password))
    assert auth.check_allowed("alice") and auth.check_allowed("teacher")
    assert not auth.check_allowed("carol")  # off the roster: no sign-in, whatever her password
    for name in ("carol", "teacher", "root"):
        assert auth.create_user(name, "a-long-password-1") is None, name
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    def sign_in(given):  # in a thread of its own: a session's Playwright may hold this thread's event loop
        attempt = auth.authenticate(None, {"username": "teacher", "password": given})
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, attempt).result()

    assert sign_in("the-instructors-password") == "teacher"
    assert sign_in("wrong") is None and sign_in("") is None


@pytest.mark.parametrize("given, imitated", [("KIM", "kim"), ("\u212aim", "kim"), ("\u212aIM", "kim"),
                                              ("\uff4b\uff49\uff4d", "kim"), ("Teacher", "teacher")])
def test_a_look_alike_of_a_roster_id_is_nobody(tmp_path, given, imitated):
    """JupyterHub would lower-case ``given`` (the Kelvin sign U+212A lowers to 'k') onto a roster id or the
    instructor's: here it is compared as written, refused, and named as a look-alike."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from autograders.hub.auth import RosterAuthenticator

    db = sessionmaker(bind=create_engine("sqlite://"))()
    auth = RosterAuthenticator(db=db, roster={"kim", "bob"}, admin_users={"teacher"},
                               instructor_password_file=str(tmp_path / "none"))
    assert auth.normalize_username(given) == given
    assert not auth.check_allowed(auth.normalize_username(given))
    assert auth.look_alike(given) == imitated and auth.look_alike(imitated) is None
    assert auth.create_user(given, "a-long-password-1") is None
    assert auth.get_user(imitated) is None and auth.get_user(given) is None


def test_lateness_reads_as_days_hours_minutes():
    from autograders.report import late_by

    assert [late_by(s) for s in (None, 0, -5, 20, 59 * 60, 3600 + 5 * 60, 86400 * 2 + 3600)] == [
        "", "", "", "1 min", "59 min", "1 h 5 min", "2 d 1 h"]


def test_due_dates_come_from_their_csv(tmp_path):
    from autograders.hub.hub import read_due

    path = tmp_path / "due.csv"
    path.write_text("assignment,duedate\nlevel1_recognition, 2026-12-08 17:00:00 UTC\n\n")
    assert read_due(path) == {"level1_recognition": "2026-12-08 17:00:00 UTC"} and read_due(None) == {}


def test_a_student_off_the_roster_is_refused_by_the_hub_at_start_up():
    from types import SimpleNamespace

    from autograders.hub.auth import RosterSharedPassword

    auth = RosterSharedPassword(roster={"alice"}, admin_users={"teacher"}, user_password="a-demo-password",
                                admin_password="x" * 32)
    auth.add_user(SimpleNamespace(name="alice"))
    with pytest.raises(ValueError, match="carol is not on the class roster"):
        auth.add_user(SimpleNamespace(name="carol"))  # JupyterHub deletes her (delete_invalid_users)
    assert not auth.check_allowed("carol") and auth.check_allowed("teacher")
