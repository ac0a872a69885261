"""Sign-in for the class: NativeAuthenticator, limited to the roster.

Students sign up with their roster id and a password of their own. With ``signup =
"approve"`` (the default) the instructor approves each signup at ``/hub/authorize``
before it can log in; with ``"open"`` the first signup of a roster id is approved at once
(a first-login password). Only roster ids and the instructor can sign up or log in: a
student taken off the roster keeps their files and grades and can no longer log in.

NativeAuthenticator treats ``allowed_users`` as pre-approved, which would skip the
instructor's approval, so the roster is a trait of its own here. It also pre-approves
admins at signup, so whoever signed up first with the instructor's login would be an
admin: here the instructor cannot sign up at all, and signs in with the password
``mha-workbook hub up`` wrote to a root-only file.

A login is compared with the roster's ids exactly as the roster writes them: JupyterHub's own
normalisation (lower case, which also folds the Kelvin sign U+212A onto ``k``) is not applied,
so ``BOB`` or ``\u212aim`` is nobody, never ``bob`` or ``kim``. The roster's ids are lower-case
ASCII (``roster.py``), so no two of them, nor a student's and the instructor's, fold onto each other.
"""

import hmac
import unicodedata
from pathlib import Path

from jupyterhub.auth import Authenticator
from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import LoginHandler
from traitlets import Set, Unicode


class _NoStatsd:
    """Stands in for the statsd client that JupyterHub 6 no longer gives its handlers:
    NativeAuthenticator 1.3.0's login (``handlers.py``, ``self.statsd.timer(...)``) still
    times itself with one, and fails with AttributeError without it (read in 1.3.0)."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self


class RosterLoginHandler(LoginHandler):
    statsd = _NoStatsd()


class OnRoster(Authenticator):
    """Only the roster's students and the instructor (an admin) sign in. JupyterHub calls
    ``add_user`` for every user of its database at start-up and deletes those it refuses
    (``delete_invalid_users``): a student taken off the roster leaves the hub, with their
    tokens, at the next ``make hub``; their system account, files and grades stay."""

    roster = Set(Unicode(), help="the roster's ids: the only students who may sign up and log in").tag(config=True)

    def normalize_username(self, username):
        """The name as given: no lower-casing, no Unicode fold (both would make a look-alike somebody)."""
        return username

    def on_roster(self, username):
        """Whether ``username`` is, character for character, a roster id or the instructor's login."""
        return username in self.roster or username in self.admin_users

    def look_alike(self, username):
        """The roster id or instructor login that ``username`` imitates (the same once case and Unicode
        are folded, but not the same), or None."""
        if self.on_roster(username):
            return None
        folded = fold(username)
        return next((name for name in sorted(self.roster | self.admin_users) if fold(name) == folded), None)

    def check_allowed(self, username, authentication=None):
        return self.on_roster(username)

    def add_user(self, user):
        if not self.on_roster(user.name):
            raise ValueError(f"{user.name} is not on the class roster")
        return super().add_user(user)


def fold(name):
    """``name`` with case and Unicode compatibility folded (NFKC, casefold, NFKC): what a look-alike shares."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


class RosterSharedPassword(OnRoster, SharedPasswordAuthenticator):
    """One shared password for the roster (a demo); the instructor's is their own."""


class RosterAuthenticator(OnRoster, NativeAuthenticator):
    instructor_password_file = Unicode(help="the file holding the instructor's password").tag(config=True)

    async def authenticate(self, handler, data):
        username = self.normalize_username(data.get("username", ""))
        if username in self.admin_users:
            expected = Path(self.instructor_password_file).read_text().strip()
            given = data.get("password", "")
            return username if expected and hmac.compare_digest(given.encode(), expected.encode()) else None
        return await super().authenticate(handler, data)

    def get_handlers(self, app):
        return [(path, RosterLoginHandler if handler is LoginHandler else handler)
                for path, handler in super().get_handlers(app)]

    def create_user(self, username, password, **kwargs):
        username = self.normalize_username(username)
        if username not in self.roster or username in self.admin_users:
            return None
        return super().create_user(username, password, **kwargs)

    def get_authed_users(self):
        return {name for name in super().get_authed_users() if self.on_roster(name)
                and (name in self.admin_users or self._approved(name))}

    def _approved(self, name):
        user = self.get_user(name)
        return user is not None and user.is_authorized
