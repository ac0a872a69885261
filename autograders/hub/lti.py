"""Sign-in from an LMS (LTI 1.3) for the class, and what the hub keeps for sending grades back.

jupyterhub-ltiauthenticator's ``LTI13Authenticator`` does the OpenID Connect launch (login
initiation, the redirect to the platform, the id_token's signature checked against the
platform's JWKS, its issuer, audience, expiry, age, LTI claims, the state and nonce bound to
the browser's cookies). This module adds what a class needs on top:

- the id_token is checked where the library does not, as LTI 1.3 (5.3, 5.4) and IMS Security
  1.0 (5.1.3) say: its message type is a resource link launch (``LtiResourceLinkRequest``, not
  Deep Linking), its ``deployment_id`` is one of the registration's, its ``azp``, when present, is
  our client id, whatever ``aud`` holds; ``iat``, ``exp`` and the token's age allow LEEWAY seconds
  of difference between the platform's clock and the hub's;
- only the roster's students and the instructor sign in (``OnRoster``), whatever the LMS says,
  each by their id exactly as the roster writes it (a look-alike, ``BOB`` or ``\u212aim``, is
  refused by name);
- a student's first accepted launch ties them to that LMS user (``sub`` and issuer); a launch by
  another LMS user with the same roster id is refused until the instructor unties them
  (``mha-workbook hub unlink --student ID``), so nobody's grades can be sent to another's LMS account;
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
from traitlets import Set, Unicode

from .ags import TOOL_KID
from .auth import OnRoster

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LTI_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGAIN = "Open the assignment from your course's page in the LMS again."
# Seconds of difference allowed between the platform's clock and the hub's (iat, exp, the token's
# age): OpenID Connect Core 3.1.3.7 leaves it to the tool ("a few minutes"); 60 s is common practice.
LEEWAY = 60
INSTRUCTOR_SAYS = "ask your instructor"


class Refused(ValidationError):
    """A launch refused by our own checks: ``status`` and the page's words."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


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


def deployments(lti):
    """The registration's deployment ids (``deployment_id`` in lti.json: one, or a list)."""
    given = lti.get("deployment_id", [])
    return [given] if isinstance(given, str) else list(given)


def check_claims(id_token, client_ids, deployment_ids):
    """Our checks of a decoded, signed id_token; raises Refused."""
    message_type = id_token.get(LTI_CLAIM + "message_type")
    if message_type != "LtiResourceLinkRequest":
        raise Refused(400, f"This link sends a {message_type or 'message of no type'}, not an assignment's launch "
                           f"(LtiResourceLinkRequest): sign-in refused. {AGAIN}")
    deployment = id_token.get(LTI_CLAIM + "deployment_id")
    if not deployment or deployment not in deployment_ids:
        raise Refused(403, f"This launch comes from a deployment of the tool that this hub does not know "
                           f"(deployment_id {deployment!r}): sign-in refused; {INSTRUCTOR_SAYS}.")
    audience = id_token.get("aud")
    audience = [audience] if isinstance(audience, str) else list(audience or [])
    if not set(audience) & set(client_ids):
        raise Refused(403, "This launch was meant for another tool (its audience is not this hub's client id): "
                           "sign-in refused.")
    if "azp" in id_token and id_token["azp"] not in client_ids:
        raise Refused(403, "This launch was meant for another tool (its authorized party, azp, is not this hub's "
                           "client id): sign-in refused.")


def linked_elsewhere(launches, name, id_token):
    """Whether ``name`` is already tied to another LMS user than this id_token's."""
    known = launches.get(name)
    return bool(known) and (known.get("sub"), known.get("issuer")) != (id_token["sub"], id_token["iss"])


def unlink(path, name):
    """Forget the LMS user ``name`` is tied to (the instructor's word): their next launch ties them again.
    True when there was one."""
    path = Path(path)
    launches = read_launches(path)
    if name not in launches:
        return False
    del launches[name]
    _write_launches(path, launches)
    return True


def _write_launches(path, launches):
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(launches, out, indent=1, sort_keys=True)
    os.replace(partial, path)


def _record_launch(path, name, id_token):
    """Keep ``name``'s LMS user id and the grade service's URLs from their latest launch; refused
    (Refused, nothing written) when ``name`` is tied to another LMS user."""
    path = Path(path)
    launches = read_launches(path)
    if linked_elsewhere(launches, name, id_token):
        raise Refused(403, f"{name} already signs in from another account of the LMS: sign-in refused. If this is "
                           f"your roster id, {INSTRUCTOR_SAYS} to tie it to your LMS account "
                           f"(mha-workbook hub unlink --student {name}).")
    ags = id_token.get(AGS_CLAIM) or {}
    launches[name] = {"sub": id_token["sub"], "issuer": id_token["iss"], "lineitems": ags.get("lineitems", ""),
                      "scope": ags.get("scope", []), "at": int(time.time())}
    _write_launches(path, launches)


def _plain(error):
    """Why PyJWT refused the token, in words a student can act on."""
    cause = error.__context__
    if isinstance(error, Refused):
        return str(error)
    if isinstance(error, InvalidAudienceError):
        return "This launch was meant for another tool (its audience is not this hub's client id): sign-in refused."
    if isinstance(cause, jwt.ExpiredSignatureError) or "too long ago" in str(error):
        return (f"This launch has expired (an LMS launch is valid for a few minutes; the hub allows {LEEWAY} s of "
                f"difference between the LMS's clock and its own). {AGAIN}")
    if isinstance(cause, jwt.ImmatureSignatureError):
        return (f"This launch is dated in the future: the LMS's clock is ahead of the hub's by more than the "
                f"{LEEWAY} s the hub allows. Launching again will not help: {INSTRUCTOR_SAYS} to have the "
                f"clocks set right.")
    if isinstance(cause, (jwt.InvalidSignatureError, jwt.InvalidAlgorithmError, jwt.PyJWKClientError,
                          jwt.DecodeError)):
        return "This launch was not signed by your LMS's key (RS256, from its JWKS): sign-in refused."
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
    """The launch itself: the library's checks and ours, the nonce used once, the roster, the LMS user."""

    used_nonces = {}  # nonce -> the token's expiry (the hub is one process)

    def decode_and_validate_launch_request(self):
        id_token = super().decode_and_validate_launch_request()
        auth = self.authenticator
        check_claims(id_token, auth.client_id, auth.deployment_ids)
        return id_token

    async def post(self):
        try:
            id_token = self.decode_and_validate_launch_request()
        except ValidationError as error:
            status = getattr(error, "status", 403 if isinstance(error, InvalidAudienceError) else 400)
            raise HTTPError(status, _plain(error))
        except HTTPError as error:  # the state or nonce cookie missing or not matching
            if error.status_code != 400:
                raise
            raise HTTPError(400, f"This launch did not start here or was already used. {AGAIN}")
        self._use_nonce(id_token)
        auth = self.authenticator
        try:
            name = auth.normalize_username(auth.get_username(id_token))
        except LoginError as error:
            raise HTTPError(400, f"{error}. {AGAIN}")
        if not auth.on_roster(name):
            imitated = auth.look_alike(name)
            raise HTTPError(403, f"{name} is not on this class's roster: ask your instructor to add you "
                                 f"(the hub's logins are the roster's ids"
                                 + (f", compared exactly: {name!r} is not {imitated!r}" if imitated else "") + ").")
        try:  # tied before the session is made; no await between the check and the write
            _record_launch(auth.launches_file, name, id_token)
        except Refused as error:
            raise HTTPError(error.status, str(error))
        user = await self.login_user(id_token)
        if user is None:
            raise HTTPError(403, f"{name} is not on this class's roster: ask your instructor to add you "
                                 f"(the hub's logins are the roster's ids).")
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
    deployment_ids = Set(Unicode(), help="the registration's deployment ids: a launch from another is refused").tag(
        config=True)

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
    auth.deployment_ids = set(deployments(lti))
    c.LTI13LaunchValidator.time_leeway = LEEWAY
    # The roster id, sent by the LMS as a custom parameter (Canvas: roster_id=$Canvas.user.loginId;
    # Moodle: roster_id=$User.username). Without it the library falls back on the opaque `sub`,
    # which is on no roster: the launch is refused.
    auth.username_key = lti.get("username_key", "custom_roster_id")
    auth.launches_file = str(settings.path("lti", "launches.json"))
    auth.tool_key_file = str(settings.path("secrets", "lti_tool_key.pem"))
