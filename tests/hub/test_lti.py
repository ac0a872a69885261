"""Sign-in from an LMS (LTI 1.3) and grades back (AGS), against a platform on the loopback.

A class of its own, brought up by ``mha-workbook hub up`` with LTI settings: accounts named
``mhal...`` (not the other hub tests' ``mhat``), its own state and free ports; its accounts, homes
and processes are removed after. Its environments are the other hub tests' (``$MHA_HUB_PREFIX``,
built once: `make test` runs the hub's tests one after the other on one worker), unless
``$MHA_LTI_HUB_PREFIX`` names others (for a run beside another run of the hub's tests). The
platform (``lti_platform.py``) signs id_tokens with its own RSA key and serves its JWKS; the
student's browser is a cookie-keeping HTTP client.
"""

import html
import os
import re
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from autograders.hub import accounts, ags, hub, lti
from autograders.hub.settings import HubSettings

from ..browser.servers import hub_ports
from .conftest import PREFIX as HUB_PREFIX
from .conftest import Class, stop_hub, write_roster
from .lti_platform import CLIENT_ID, DROP, Browser, Platform, new_key
from .lti_platform import LTI as LTI_CLAIM

PREFIX = os.environ.get("MHA_LTI_HUB_PREFIX", HUB_PREFIX)
PEOPLE = "mhal"
INSTRUCTOR = "mhalteach"
# Kim is imitated by a look-alike login; Dan is claimed by a second LMS account, then untied by the instructor.
ROSTER = [("mhalann", "Ann", "Launches"), ("mhalben", "Ben", "Launches"), ("mhalcat", "Cat", "Never"),
          ("mhalkim", "Kim", "Imitated"), ("mhaldan", "Dan", "Claimed")]
AGAIN = "Open the assignment from your course's page in the LMS again."


def remove_people():
    for name in sorted(n for n in accounts.members() if n.startswith(PEOPLE)):
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        time.sleep(0.2)
        accounts.remove_account(name)


@pytest.fixture(scope="module")
def lms():
    """(the hosted class, the platform): the hub's sign-in is the platform's LTI 1.3 launch."""
    if os.geteuid() != 0:
        pytest.fail("the LTI hub tests need root: they create system users (named mhal...) and run a JupyterHub",
                    pytrace=False)
    remove_people()
    state = Path(tempfile.mkdtemp(prefix="mha-lti-test-"))
    roster = write_roster(state.parent / f"{state.name}-roster.csv", ROSTER)
    port, exchange_port = hub_ports()
    platform = Platform(f"http://127.0.0.1:{port}")
    for login, *_ in ROSTER:
        platform.enrol(login)
    platform.enrol("mhalzed")  # in the LMS's course, not on the class's roster
    settings = HubSettings(root=str(state / "hub"), prefix=PREFIX, ip="127.0.0.1", port=port,
                           exchange_port=exchange_port, instructor=INSTRUCTOR, lti=platform.settings())
    try:
        hub.up(settings, roster, clone=None)  # never chmod the checkout the tests run from
        yield Class(settings, roster), platform
    finally:
        stop_hub(settings)
        platform.close()
        remove_people()
        shutil.rmtree(state, ignore_errors=True)
        roster.unlink(missing_ok=True)


def decoded(answer):
    """The page as the hub wrote it (UTF-8; its error pages name no charset, and requests then reads Latin-1)."""
    return answer.content.decode("utf-8")


def page_text(answer):
    """The words of a hub's page, for a failure's reader."""
    words = re.sub(r"\s+", " ", re.sub(r"(?s)<script.*?</script>|<style.*?</style>|<[^>]+>", " ", decoded(answer)))
    return f"{answer.status_code}: {html.unescape(words).strip()[:1500]}"


def signed_in_as(browser, settings):
    """Who the browser's hub cookie signs in (None: sent to the login page)."""
    answer = browser.session.get(f"http://127.0.0.1:{settings.port}/hub/home", timeout=60, allow_redirects=False)
    return None if answer.status_code in (302, 303) else answer


def test_a_launch_signs_a_roster_student_into_their_own_server(lms):
    hosted, platform = lms
    browser = Browser()
    answer = browser.launch(platform, "mhalann")
    assert answer.status_code == 200, answer.text[:500]
    base = f"http://127.0.0.1:{hosted.settings.port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the launch starts the server; the browser then opens it
        lab = browser.session.get(f"{base}/user/mhalann/lab", timeout=60)
        if lab.status_code == 200 and lab.url.startswith(f"{base}/user/mhalann/lab"):
            break
        time.sleep(2)
    assert lab.status_code == 200 and lab.url.startswith(f"{base}/user/mhalann/lab"), (lab.status_code, lab.url)
    status, user = hosted.hub_api("GET", "/users/mhalann")
    pid = user["servers"][""]["state"]["pid"]
    uid = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("Uid:")))
    assert uid == pwd.getpwnam("mhalann").pw_uid, "the server runs as the student's own account"
    other = browser.session.get(f"{base}/user/mhalben/lab", timeout=60)
    assert not other.url.startswith(f"{base}/user/mhalben/lab"), "Ann's cookie does not open Ben's server"


def test_the_instructor_signs_in_from_the_lms_as_the_hubs_admin(lms):
    hosted, platform = lms
    platform.enrol(INSTRUCTOR)
    browser = Browser()
    assert browser.launch(platform, INSTRUCTOR).status_code == 200
    assert signed_in_as(browser, hosted.settings) is not None
    status, user = hosted.hub_api("GET", f"/users/{INSTRUCTOR}")
    assert status == 200 and user["admin"] is True


REFUSED = {
    "not on the roster": ("mhalzed", {}, 403, "mhalzed is not on this class's roster: ask your instructor to add you"),
    "expired": ("mhalben", {"exp": int(time.time()) - 60, "iat": int(time.time()) - 400}, 400,
                "This launch has expired"),
    "forged": ("mhalben", {"key": new_key()}, 400, "This launch was not signed by your LMS's key"),
    # A forged header: unsigned, an HMAC keyed with the platform's public key, another algorithm.
    "alg none": ("mhalben", {"alg": "none"}, 400, "This launch was not signed by your LMS's key"),
    "alg HS256 keyed with the public key": ("mhalben", {"alg": "HS256-public"}, 400,
                                            "This launch was not signed by your LMS's key"),
    "alg RS512": ("mhalben", {"alg": "RS512"}, 400, "This launch was not signed by your LMS's key"),
    "wrong audience": ("mhalben", {"aud": "another-tool"}, 403, "This launch was meant for another tool"),
    "audience list without us": ("mhalben", {"aud": ["another-tool", "a-third"], "azp": "another-tool"}, 403,
                                 "This launch was meant for another tool"),
    "azp of another tool, one aud": ("mhalben", {"azp": "another-tool"}, 403, "its authorized party, azp"),
    "azp of another tool, two auds": ("mhalben", {"aud": [CLIENT_ID, "another-tool"], "azp": "another-tool"}, 403,
                                      "This launch was meant for another tool"),
    "wrong deployment": ("mhalben", {LTI_CLAIM + "deployment_id": "deployment-2"}, 403,
                         "a deployment of the tool that this hub does not know"),
    "empty deployment": ("mhalben", {LTI_CLAIM + "deployment_id": ""}, 403,
                         "a deployment of the tool that this hub does not know"),
    "no deployment": ("mhalben", {LTI_CLAIM + "deployment_id": DROP}, 400, "not a valid LTI 1.3 launch"),
    # Deep Linking with the claims it needs, and another message type: no assignment's launch.
    "deep linking": ("mhalben", {LTI_CLAIM + "message_type": "LtiDeepLinkingRequest", "azp": CLIENT_ID,
                                 LTI_CLAIM + "tool_platform": {"guid": "lms-1", "name": "LMS"},
                                 LTI_CLAIM + "launch_presentation": {"document_target": "window"},
                                 "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
                                     "deep_link_return_url": "http://127.0.0.1:1/return",
                                     "accept_types": ["ltiResourceLink"], "accept_presentation_document_targets": ["window"]}},
                     400, "not an assignment's launch (LtiResourceLinkRequest)"),
    "submission review": ("mhalben", {LTI_CLAIM + "message_type": "LtiSubmissionReviewRequest"}, 400,
                          "not a valid LTI 1.3 launch"),
    "clock ten minutes ahead": ("mhalben", {"iat": int(time.time()) + 600, "exp": int(time.time()) + 900}, 400,
                                "the LMS's clock is ahead of the hub's by more than the 60 s the hub allows"),
    # No roster id from the LMS (its custom parameter not set up): the library falls back on the
    # opaque LMS user id, which is on no roster.
    "no roster id": ("mhalben", {LTI_CLAIM + "custom": {}}, 403, "is not on this class's roster"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_launch_is_refused_with_a_clear_page(lms, case):
    hosted, platform = lms
    login, tamper, status, message = REFUSED[case]
    if case == "expired":  # the times of now, not of the module's import
        tamper = {"exp": int(time.time()) - 60, "iat": int(time.time()) - 400}
    if case == "clock ten minutes ahead":
        tamper = {"iat": int(time.time()) + 600, "exp": int(time.time()) + 900}
    platform.tamper = tamper
    try:
        browser = Browser()
        answer = browser.launch(platform, login)
    finally:
        platform.tamper = {}
    assert answer.status_code == status, page_text(answer)
    assert message in html.unescape(answer.text), page_text(answer)
    assert signed_in_as(browser, hosted.settings) is None, "a refused launch signs nobody in"
    if case == "clock ten minutes ahead":
        assert AGAIN not in html.unescape(answer.text), "launching again cannot help"
    refused = {"not on the roster": login, "no roster id": platform.users[login]}.get(case)
    if refused:
        assert f"{refused} is not on this class's roster" in html.unescape(answer.text)
        assert hosted.hub_api("GET", f"/users/{refused}")[0] == 404, "no hub user made for a refused id"


def test_a_replayed_launch_is_refused(lms):
    """The id_token posted again with the very cookies of its first post (a captured launch)."""
    hosted, platform = lms
    browser = Browser()
    assert browser.launch(platform, "mhalben").status_code == 200
    again = browser.replay()
    assert again.status_code == 400, again.text[:500]
    assert "This launch was already used" in html.unescape(again.text)
    assert not any(c.name.startswith("jupyterhub-session") for c in again.cookies), "no session for a replay"


def test_grades_go_back_to_the_lms_line_item(lms):
    hosted, platform = lms
    settings = hosted.settings
    for login in ("mhalann", "mhalben"):
        assert Browser().launch(platform, login).status_code == 200
    launches = lti.read_launches(settings.path("lti", "launches.json"))
    assert launches["mhalann"]["sub"] == platform.users["mhalann"]
    assert "mhalcat" not in launches and "mhalzed" not in launches
    scores = {"mhalann": (7.5, 10.0), "mhalben": (3.0, 10.0), "mhalcat": (5.0, 10.0)}
    sent, missed = ags.send_grades(settings.lti, launches, lti.tool_key(settings), "level1_recognition", scores,
                                   pending_manual={"mhalben"})
    assert sent == ["mhalann", "mhalben"]
    assert [student for student, _ in missed] == ["mhalcat"], "Cat never launched: no LMS id, named"
    (item,) = platform.lineitems.values()
    assert (item["resourceId"], item["scoreMaximum"]) == ("level1_recognition", 10.0)
    posted = platform.scores[item["id"]]
    assert {u: (s["scoreGiven"], s["scoreMaximum"]) for u, s in posted.items()} == {
        platform.users["mhalann"]: (7.5, 10.0), platform.users["mhalben"]: (3.0, 10.0)}
    assert {u: s["gradingProgress"] for u, s in posted.items()} == {
        platform.users["mhalann"]: "FullyGraded", platform.users["mhalben"]: "PendingManual"}
    # Sent again after a regrade: the same line item, the new score.
    ags.send_grades(settings.lti, launches, lti.tool_key(settings), "level1_recognition", {"mhalben": (4.0, 10.0)})
    assert len(platform.lineitems) == 1
    regraded = platform.scores[item["id"]][platform.users["mhalben"]]
    assert (regraded["scoreGiven"], regraded["gradingProgress"]) == (4.0, "FullyGraded")


def test_the_platform_refuses_a_tool_key_it_does_not_know(lms):
    hosted, platform = lms
    from cryptography.hazmat.primitives import serialization

    other = new_key().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    with pytest.raises(ags.AGSError, match="answered 401"):
        ags.access_token(platform.settings()["token_endpoint"], CLIENT_ID, other)


def test_hub_grades_sends_the_gradebooks_scores(lms):
    """`mha-workbook hub grades`: the scores of the instructor's gradebook, as the LMS receives them.
    The gradebook's rows are made here as grading leaves them (nbgrader's submission, a score for
    each graded cell, the autograded folder); the command reads them as it would after grading."""
    from nbgrader.api import Gradebook

    from autograders.grading.gradebooks import course_db_url

    hosted, platform = lms
    settings = hosted.settings
    assert Browser().launch(platform, "mhalann").status_code == 200
    course = accounts.home(INSTRUCTOR) / "course"
    db_url, course_id = course_db_url(course)
    with Gradebook(db_url, course_id) as gb:
        submission = gb.add_submission("level2_application", "mhalann")
        for notebook in submission.notebooks:
            for index, grade in enumerate(notebook.grades):
                grade.manual_score = grade.max_score if index % 2 else 0.0
        gb.db.commit()
        expected = (gb.find_submission("level2_application", "mhalann").score,
                    gb.find_submission("level2_application", "mhalann").max_score)
    (course / "autograded" / "mhalann" / "level2_application").mkdir(parents=True, exist_ok=True)
    assert 0 < expected[0] < expected[1]
    done = subprocess.run([str(Path(settings.venv, "bin", "mha-workbook")), "hub", "grades", "--root", settings.root,
                           "--assignment", "level2_application"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "level2_application: 1 grades sent to the LMS" in done.stdout
    (item,) = [i for i in platform.lineitems.values() if i["resourceId"] == "level2_application"]
    score = platform.scores[item["id"]][platform.users["mhalann"]]
    assert (score["scoreGiven"], score["scoreMaximum"]) == pytest.approx(expected)


def test_behind_https_the_launch_cookies_survive_a_cross_site_post(lms):
    """Behind a TLS proxy (X-Forwarded-Proto: https), the state and nonce cookies are
    ``SameSite=None; Secure``: a browser sends only such cookies with the platform's form, which
    is posted from the LMS's site. Over plain HTTP they stay the hub's default."""
    hosted, platform = lms
    cookies = {}
    for proto in ("https", None):
        headers = {"X-Forwarded-Proto": proto} if proto else {}
        answer = requests.get(platform.launch_url("mhalann"), headers=headers, allow_redirects=False, timeout=60)
        assert answer.status_code == 302
        cookies[proto] = [c for c in answer.raw.headers.getlist("Set-Cookie") if c.startswith("lti13authenticator")]
        assert len(cookies[proto]) == 2, answer.raw.headers.getlist("Set-Cookie")
    for cookie in cookies["https"]:
        assert "SameSite=None" in cookie and "Secure" in cookie and "HttpOnly" in cookie, cookie
    for cookie in cookies[None]:
        assert "SameSite=None" not in cookie and "Secure" not in cookie, cookie


@pytest.mark.parametrize("ahead", [1, 30, 59])
def test_a_platform_whose_clock_is_a_little_ahead_signs_in(lms, ahead):
    """Within the hub's 60 s: the id_token dated up to a minute in the future is accepted."""
    hosted, platform = lms
    platform.tamper = {"iat": int(time.time()) + ahead, "exp": int(time.time()) + ahead + 300}
    try:
        browser = Browser()
        answer = browser.launch(platform, "mhalben")
    finally:
        platform.tamper = {}
    assert answer.status_code == 200, answer.text[:500]
    assert signed_in_as(browser, hosted.settings) is not None


def test_an_azp_naming_this_tool_signs_in(lms):
    """The azp check refuses another tool's, not ours (one aud, or ours among several)."""
    hosted, platform = lms
    for tamper in ({"azp": CLIENT_ID}, {"aud": [CLIENT_ID, "another-tool"], "azp": CLIENT_ID}):
        platform.tamper = tamper
        try:
            browser = Browser()
            answer = browser.launch(platform, "mhalben")
        finally:
            platform.tamper = {}
        assert answer.status_code == 200, (tamper, answer.text[:500])
        assert signed_in_as(browser, hosted.settings) is not None


# An LMS login that JupyterHub would have folded onto a roster id or the instructor (lower case; the
# Kelvin sign U+212A lowers to 'k'; NFKC folds full-width letters), as an attacker would name their LMS
# account. Each is refused, nobody is signed in, no hub user is made, no LMS user id is tied.
LOOK_ALIKES = {
    "upper case of a student": ("MHALBEN", "mhalben"),
    "mixed case of a student": ("mhalBen", "mhalben"),
    "the Kelvin sign for k": ("mhal\u212aim", "mhalkim"),
    "upper case and the Kelvin sign": ("MHAL\u212aIM", "mhalkim"),
    "full-width letters": ("\uff4d\uff48\uff41\uff4c\uff43\uff41\uff54", "mhalcat"),
    "upper case of the instructor": (INSTRUCTOR.upper(), INSTRUCTOR),
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_a_look_alike_lms_login_is_nobody(lms, case):
    hosted, platform = lms
    login, imitated = LOOK_ALIKES[case]
    attacker = f"attacker-{sorted(LOOK_ALIKES).index(case)}"
    platform.enrol(attacker, roster_id=login)
    browser = Browser()
    answer = browser.launch(platform, attacker)
    page = html.unescape(decoded(answer))
    assert answer.status_code == 403, page_text(answer)
    assert f"{login} is not on this class's roster" in page and f"{login!r} is not {imitated!r}" in page, \
        page_text(answer)
    assert signed_in_as(browser, hosted.settings) is None, "a look-alike signs nobody in"
    launches = lti.read_launches(hosted.settings.path("lti", "launches.json"))
    assert all(entry["sub"] != platform.users[attacker] for entry in launches.values()), launches
    status, users = hosted.hub_api("GET", "/users")
    assert login not in {user["name"] for user in users}
    admins = {user["name"] for user in users if user["admin"]}
    assert admins <= {INSTRUCTOR}, admins
    if imitated == "mhalkim":  # Kim never launches: nothing of hers started
        status, user = hosted.hub_api("GET", "/users/mhalkim")
        assert status == 404 or not user["servers"], "the imitated student's server was not started"


def test_a_second_lms_account_cannot_take_a_students_roster_id(lms):
    """Dan launches; then another LMS account whose roster id is also ``mhaldan`` (an LMS that lets a
    login be renamed, a second account): refused, Dan's grades still go to Dan's LMS id. Once the
    instructor unties Dan (``hub unlink``), the next launch ties the account it comes from."""
    hosted, platform = lms
    settings = hosted.settings
    dan = platform.enrol("mhaldan")
    assert Browser().launch(platform, "mhaldan").status_code == 200
    platform.enrol("dan-second-account", roster_id="mhaldan")
    browser = Browser()
    answer = browser.launch(platform, "dan-second-account")
    assert answer.status_code == 403, answer.text[:500]
    assert "mhaldan already signs in from another account of the LMS" in html.unescape(answer.text)
    assert signed_in_as(browser, settings) is None
    launches_file = settings.path("lti", "launches.json")
    assert lti.read_launches(launches_file)["mhaldan"]["sub"] == dan
    sent, missed = ags.send_grades(settings.lti, lti.read_launches(launches_file), lti.tool_key(settings),
                                   "level3_dan", {"mhaldan": (6.0, 10.0)})
    (item,) = [i for i in platform.lineitems.values() if i["resourceId"] == "level3_dan"]
    assert set(platform.scores[item["id"]]) == {dan}, "the grade goes to Dan's LMS id only"

    mha = str(Path(settings.venv, "bin", "mha-workbook"))
    refused = subprocess.run([mha, "hub", "unlink", "--root", settings.root, "--student", "MHALDAN"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "not on the roster" in refused.stderr, refused.stdout + refused.stderr
    done = subprocess.run([mha, "hub", "unlink", "--root", settings.root, "--student", "mhaldan"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    browser = Browser()
    assert browser.launch(platform, "dan-second-account").status_code == 200
    assert signed_in_as(browser, settings) is not None
    assert lti.read_launches(launches_file)["mhaldan"]["sub"] == platform.users["dan-second-account"]
