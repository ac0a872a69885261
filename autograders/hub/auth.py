"""Sign-in for the class: NativeAuthenticator, limited to the roster.

Students sign up with their roster id and a password of their own. With ``signup =
"approve"`` (the default) the instructor approves each signup at ``/hub/authorize``
before it can log in; with ``"open"`` the first signup of a roster id is approved at once
(a first-login password). Only roster ids and the instructor can sign up or log in: a
student taken off the roster keeps their files and grades and can no longer log in.

NativeAuthenticator treats ``allowed_users`` as pre-approved, which would skip the
instructor's approval, so the roster is a trait of its own here.
"""

from nativeauthenticator import NativeAuthenticator
from traitlets import Set, Unicode


class RosterAuthenticator(NativeAuthenticator):
    roster = Set(Unicode(), help="the roster's ids: the only students who may sign up and log in").tag(config=True)

    def on_roster(self, username):
        return username in self.roster or username in self.admin_users

    def check_allowed(self, username, authentication=None):
        return self.on_roster(username)

    def create_user(self, username, password, **kwargs):
        if not self.on_roster(self.normalize_username(username)):
            return None
        return super().create_user(username, password, **kwargs)

    def get_authed_users(self):
        return {name for name in super().get_authed_users() if self.on_roster(name)
                and (name in self.admin_users or self._approved(name))}

    def _approved(self, name):
        user = self.get_user(name)
        return user is not None and user.is_authorized
