"""The roster's own sign-up and sign-in (NativeAuthenticator) against look-alike names, on the real hub.

An attacker signs up with a login that JupyterHub would fold onto a roster id (upper case, full-width
letters) or onto the instructor's, with a password of their own: before, the signup was stored under
the roster id, and the instructor, approving "that student" at /hub/authorize, let the attacker in as
them. Now such a signup is refused and nothing is stored; signing in with such a name reaches nobody.
"""

import re
import sqlite3

import pytest
import requests

from .conftest import INSTRUCTOR, PEOPLE

PASSWORD = "an-attackers-password-1"
LOOK_ALIKES = {
    "upper case of a student": PEOPLE.upper() + "CAROL",
    "mixed case of a student": PEOPLE + "Carol",
    "full-width letters": "".join(chr(ord(c) + 0xFEE0) for c in PEOPLE + "carol"),
    "upper case of the instructor": INSTRUCTOR.upper(),
}


def post_form(session, url, fields):
    page = session.get(url, timeout=60)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
    return session.post(url, data={**fields, **({"_xsrf": xsrf.group(1)} if xsrf else {})}, timeout=60)


def stored_signups(hub_class):
    with sqlite3.connect(hub_class.settings.path("jupyterhub.sqlite")) as db:
        return {row[0] for row in db.execute("SELECT username FROM users_info")}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_a_look_alike_signup_or_login_reaches_nobody(hub_class, case):
    name = LOOK_ALIKES[case]
    base = f"http://127.0.0.1:{hub_class.settings.port}/hub"
    before = stored_signups(hub_class)
    session = requests.Session()
    answer = post_form(session, f"{base}/signup", {"username": name, "signup_password": PASSWORD,
                                                   "signup_password_confirmation": PASSWORD,
                                                   "email": "x@example.org"})
    assert answer.status_code == 200 and "Something went wrong" in answer.text, answer.text[-1500:]
    assert stored_signups(hub_class) == before, "nothing stored for a look-alike"
    post_form(session, f"{base}/login", {"username": name, "password": PASSWORD})
    home = session.get(f"{base}/home", timeout=60, allow_redirects=False)
    assert home.status_code in (302, 303) and "/hub/login" in home.headers["Location"], "nobody signed in"
    status, users = hub_class.hub_api("GET", "/users")
    assert name not in {user["name"] for user in users}
