"""Sign-in from an LMS (LTI 1.3) for the class, and what the hub keeps for sending grades back.

jupyterhub-ltiauthenticator's ``LTI13Authenticator`` does the OpenID Connect launch (login
initiation, the redirect to the platform, the id_token's signature checked against the
platform's JWKS, its issuer, audience, expiry, age, LTI claims, the state and nonce bound to
the browser's cookies). This module adds what a class needs on top:

- only the roster's students and the instructor sign in (``OnRoster``), whatever the LMS says;
- a refused launch gets a page that says why and what to do (the library's pages say
  "Signature has expired" or "OAuth nonce mismatch");
- an id_token is accepted once: its nonce is remembered until the token expires, so a
  launch captured with its cookies cannot be replayed (the library checks the nonce against
  a cookie only);
- each accepted launch records the student's LMS user id and the platform's line-items URL
  (Assignment and Grade Services) in ``<root>/lti/launches.json``, which ``ags.py`` uses to
  post scores; the tool's own key, which signs its requests for an AGS token, is
  ``<root>/secrets/lti_tool_key.pem`` and its public half is served at ``/hub/lti13/jwks``.
"""

import json
import os
import time
from pathlib import Path

import jwt
from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import InvalidAudienceError, LoginError, ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from tornado.web import HTTPError
from traitlets import Unicode

from .ags import TOOL_KID
from .auth import OnRoster

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGAIN = "Open the assignment from your course's page in the LMS again."


def tool_key(settings):
    """The tool's RSA private key (PEM), made on first use, readable by root only."""
    path = settings.path("secrets", "lti_tool_key.pem")
    if not path.exists():
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
    return path.read_bytes()


def public_jwks(pem):
    key = jwt.algorithms.RSAAlgorithm(jwt.algorithms.RSAAlgorithm.SHA256).prepare_key(pem)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {"keys": [{**jwk, "kid": TOOL_KID, "alg": "RS256", "use": "sig"}]}


def read_launches(path):
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {}


def _record_launch(path, name, id_token):
    """Keep ``name``'s LMS user id and the grade service's URLs from their latest launch."""
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    launches = read_launches(path)
    ags = id_token.get(AGS_CLAIM) or {}
    launches[name] = {"sub": id_token["sub"], "issuer": id_token["iss"], "lineitems": ags.get("lineitems", ""),
                      "scope": ags.get("scope", []), "at": int(time.time())}
    partial = path.with_suffix(".tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(launches, out, indent=1, sort_keys=True)
    os.replace(partial, path)


def _plain(error):
    """Why PyJWT refused the token, in words a student can act on."""
    cause = error.__context__
    if isinstance(error, InvalidAudienceError):
        return "This launch was meant for another tool (its audience is not this hub's client id): sign-in refused."
    if isinstance(cause, jwt.ExpiredSignatureError) or "too long ago" in str(error):
        return f"This launch has expired (an LMS launch is valid for a few minutes). {AGAIN}"
    if isinstance(cause, (jwt.InvalidSignatureError, jwt.PyJWKClientError, jwt.DecodeError)):
        return "This launch was not signed by your LMS's key: sign-in refused."
    if isinstance(cause, jwt.InvalidIssuerError):
        return "This launch comes from an LMS this hub does not know: sign-in refused."
    return f"This launch is not a valid LTI 1.3 launch ({error}). {AGAIN}"


class RosterLoginInitHandler(LTI13LoginInitHandler):
    """The login initiation. Behind HTTPS, its state and nonce cookies are ``SameSite=None;
    Secure``: the platform's form is posted to the hub from the LMS's site, and a browser sends
    the default (Lax) cookies with no cross-site POST."""

    def _set_oauth_cookie(self, key, value):
        extra = {"samesite": "None", "secure": True} if self.authenticator.get_uri_scheme(self.request) == "https" else {}
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, **extra)


class RosterCallbackHandler(LTI13CallbackHandler):
    """The launch itself: the library's checks, then the nonce used once, then the roster."""

    used_nonces = {}  # nonce -> the token's expiry (the hub is one process)

    async def post(self):
        try:
            id_token = self.decode_and_validate_launch_request()
        except ValidationError as error:
            raise HTTPError(403 if isinstance(error, InvalidAudienceError) else 400, _plain(error))
        except HTTPError as error:  # the state or nonce cookie missing or not matching
            if error.status_code != 400:
                raise
            raise HTTPError(400, f"This launch did not start here or was already used. {AGAIN}")
        self._use_nonce(id_token)
        try:
            name = self.authenticator.normalize_username(self.authenticator.get_username(id_token))
        except LoginError as error:
            raise HTTPError(400, f"{error}. {AGAIN}")
        user = await self.login_user(id_token)
        if user is None:
            raise HTTPError(403, f"{name} is not on this class's roster: ask your instructor to add you "
                                 f"(the hub's logins are the roster's ids).")
        _record_launch(self.authenticator.launches_file, user.name, id_token)
        await self.redirect_to_next_url(user)

    def _use_nonce(self, id_token):
        now = time.time()
        for nonce, expires in list(self.used_nonces.items()):
            if expires < now:
                del self.used_nonces[nonce]
        nonce = id_token.get("nonce", "")
        if nonce in self.used_nonces:
            raise HTTPError(400, f"This launch was already used (an LMS launch signs you in once). {AGAIN}")
        self.used_nonces[nonce] = id_token.get("exp", now + 3600)


class ToolJWKSHandler(BaseHandler):
    """The tool's public key, for the platform to check the tool's requests for a grades token."""

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(public_jwks(Path(self.authenticator.tool_key_file).read_bytes())))


class RosterLTI13Authenticator(OnRoster, LTI13Authenticator):
    """LTI 1.3 sign-in limited to the roster (and the instructor, an admin)."""

    login_handler = RosterLoginInitHandler
    callback_handler = RosterCallbackHandler
    launches_file = Unicode(help="where each accepted launch's LMS user id and grade service are kept").tag(config=True)
    tool_key_file = Unicode(help="the tool's private key (PEM): its public half is served at lti13/jwks").tag(config=True)

    def get_handlers(self, app):
        return super().get_handlers(app) + [("/lti13/jwks", ToolJWKSHandler)]


def configure(c, settings):
    """JupyterHub's settings for sign-in from the LMS of ``settings.lti``."""
    lti = settings.lti
    tool_key(settings)
    c.JupyterHub.authenticator_class = "autograders.hub.lti.RosterLTI13Authenticator"
    auth = c.RosterLTI13Authenticator
    auth.roster = set(settings.students)
    auth.issuer = lti["issuer"]
    auth.client_id = {lti["client_id"]}
    auth.authorize_url = lti["authorize_url"]
    auth.jwks_endpoint = lti["jwks_endpoint"]
    # The roster id, sent by the LMS as a custom parameter (Canvas: roster_id=$Canvas.user.loginId;
    # Moodle: roster_id=$User.username). Without it the library falls back on the opaque `sub`,
    # which is on no roster: the launch is refused.
    auth.username_key = lti.get("username_key", "custom_roster_id")
    auth.launches_file = str(settings.path("lti", "launches.json"))
    auth.tool_key_file = str(settings.path("secrets", "lti_tool_key.pem"))
