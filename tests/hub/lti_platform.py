"""An LTI 1.3 platform (an LMS's side) on the loopback, for the hub's LTI tests.

It does what a platform does in a launch and in grade passback, after IMS Security 1.0, LTI
1.3 and AGS 2.0:

- ``launch_url(login)``: the third-party-initiated login the LMS sends the browser to (the
  hub's ``/hub/lti13/oauth_login`` with ``iss``, ``login_hint``, ``target_link_uri``);
- ``/authorize``: the OIDC authentication request coming back from the hub, answered with a
  self-posting form holding an id_token signed with the platform's RSA key;
- ``/jwks``: that key's public half;
- ``/token``: the client-credentials grant; the tool's client assertion is checked against the
  tool's JWKS URL, fetched each time;
- ``/lineitems``, ``/lineitems/<n>``, ``/lineitems/<n>/scores``: line items and scores, the
  access token and the media types checked.

``tamper`` changes the next id_tokens (expiry, audience, signing key, a claim) to try the
hub's refusals: a claim set to ``DROP`` is left out; ``key`` signs with another key; ``alg``
forges the header: ``none`` (unsigned), ``HS256-public`` (an HMAC keyed with the platform's
public key, as served), or another algorithm signed with the platform's key (``RS512``).
"""

import base64
import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "mha-workbook-test-client"
DEPLOYMENT = "deployment-1"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DROP = object()  # a tampered claim with this value is left out of the id_token


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Platform:
    def __init__(self, tool_url):
        self.tool_url = tool_url.rstrip("/")          # the hub: http://127.0.0.1:<port>
        self.key, self.kid = new_key(), "platform-key-1"
        self.users = {}                              # login_hint -> LMS user id (sub)
        self.custom = {}                             # login_hint -> custom claims
        self.tamper = {}
        self.tokens, self.lineitems, self.scores = {}, {}, {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def settings(self):
        """The hub's LTI settings, as the LMS's tool registration gives them."""
        return {"issuer": self.url, "client_id": CLIENT_ID, "authorize_url": f"{self.url}/authorize",
                "jwks_endpoint": f"{self.url}/jwks", "token_endpoint": f"{self.url}/token",
                "deployment_id": DEPLOYMENT}

    def enrol(self, login, roster_id=None):
        """A user of the LMS whose launches send ``roster_id`` (default ``login``) as ``custom_roster_id``."""
        self.users[login] = "lms-" + uuid.uuid5(uuid.NAMESPACE_DNS, login).hex[:12]
        self.custom[login] = {"roster_id": roster_id or login}
        return self.users[login]

    def launch_url(self, login):
        return f"{self.tool_url}/hub/lti13/oauth_login?" + urlencode({
            "iss": self.url, "login_hint": login, "target_link_uri": f"{self.tool_url}/hub/",
            "lti_message_hint": "resource-1", "client_id": CLIENT_ID, "lti_deployment_id": DEPLOYMENT})

    def id_token(self, login, nonce):
        now = int(time.time())
        claims = {
            "iss": self.url, "aud": CLIENT_ID, "sub": self.users[login], "iat": now, "exp": now + 300,
            "nonce": nonce, "name": login, "email": f"{login}@example.org",
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT, LTI + "target_link_uri": f"{self.tool_url}/hub/",
            LTI + "resource_link": {"id": "resource-1"},
            LTI + "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
            LTI + "context": {"id": "course-1", "label": "MHA", "title": "Multi-head attention"},
            LTI + "custom": self.custom[login],
            AGS: {"scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                            "https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                  "lineitems": f"{self.url}/lineitems?context=course-1"},
        }
        tamper = dict(self.tamper)
        key, alg = tamper.pop("key", self.key), tamper.pop("alg", "RS256")
        claims.update(tamper)
        claims = {name: value for name, value in claims.items() if value is not DROP}
        if alg == "none":
            return _forge({"alg": "none", "typ": "JWT", "kid": self.kid}, claims, lambda signed: b"")
        if alg == "HS256-public":  # the classic confusion: the public key's PEM as the HMAC secret
            pem = self.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
            return _forge({"alg": "HS256", "typ": "JWT", "kid": self.kid}, claims,
                          lambda signed: hmac.new(pem, signed, hashlib.sha256).digest())
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": self.kid})

    def jwks(self):
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _forge(header, claims, sign):
    """A JWT made by hand (PyJWT refuses to make these), its signature ``sign(header.payload)``."""
    signed = _b64(json.dumps(header).encode()) + b"." + _b64(json.dumps(claims).encode())
    return (signed + b"." + _b64(sign(signed))).decode()


def _handler(platform):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, body, content_type="application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _form(self):
            length = int(self.headers.get("Content-Length") or 0)
            return {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}

        def _json(self):
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length).decode())

        def _authorized(self, scope):
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            return scope in platform.tokens.get(token, ())

        def do_GET(self):
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/jwks":
                return self._send(200, platform.jwks())
            if url.path == "/authorize":
                return self._authorize(query)
            if url.path == "/lineitems":
                if not self._authorized("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"):
                    return self._send(401, {"error": "no valid access token"})
                items = [i for i in platform.lineitems.values()
                         if "resource_id" not in query or i["resourceId"] == query["resource_id"]]
                return self._send(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json")
            self._send(404, {"error": url.path})

        def _authorize(self, query):
            # The OIDC authentication request of IMS Security 1.0, step 2.
            expected = {"response_type": "id_token", "scope": "openid", "response_mode": "form_post",
                        "prompt": "none", "client_id": CLIENT_ID}
            wrong = [k for k, v in expected.items() if query.get(k) != v]
            if wrong or query.get("login_hint") not in platform.users or not query.get("nonce"):
                return self._send(400, {"error": f"bad authentication request: {wrong or query}"})
            if not query.get("redirect_uri", "").startswith(platform.tool_url + "/hub/lti13/oauth_callback"):
                return self._send(400, {"error": "redirect_uri is not the tool's registered one"})
            token = platform.id_token(query["login_hint"], query["nonce"])
            page = (f'<form method="post" action="{query["redirect_uri"]}">'
                    f'<input type="hidden" name="id_token" value="{token}">'
                    f'<input type="hidden" name="state" value="{query["state"]}"></form>'
                    "<script>document.forms[0].submit()</script>")
            self._send(200, page, "text/html")

        def do_POST(self):
            url = urlsplit(self.path)
            if url.path == "/token":
                return self._token(self._form())
            if url.path == "/lineitems":
                if not self._authorized("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"):
                    return self._send(401, {"error": "no valid access token"})
                if self.headers.get("Content-Type") != "application/vnd.ims.lis.v2.lineitem+json":
                    return self._send(415, {"error": "a line item is application/vnd.ims.lis.v2.lineitem+json"})
                item = self._json()
                item["id"] = f"{platform.url}/lineitems/{len(platform.lineitems) + 1}"
                platform.lineitems[item["id"]] = item
                return self._send(201, item, "application/vnd.ims.lis.v2.lineitem+json")
            found = re.fullmatch(r"/lineitems/(\d+)/scores", url.path)
            if found:
                item = f"{platform.url}/lineitems/{found.group(1)}"
                if not self._authorized("https://purl.imsglobal.org/spec/lti-ags/scope/score"):
                    return self._send(401, {"error": "no valid access token"})
                if item not in platform.lineitems:
                    return self._send(404, {"error": "no such line item"})
                if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                    return self._send(415, {"error": "a score is application/vnd.ims.lis.v1.score+json"})
                score = self._json()
                missing = {"userId", "activityProgress", "gradingProgress", "timestamp"} - set(score)
                if missing or score["userId"] not in platform.users.values():
                    return self._send(400, {"error": f"bad score: missing {missing} or unknown user"})
                platform.scores.setdefault(item, {})[score["userId"]] = score
                return self._send(204, "")
            self._send(404, {"error": url.path})

        def _token(self, form):
            # The client-credentials grant with a JWT client assertion (IMS Security 1.0, 4.1).
            if (form.get("grant_type") != "client_credentials" or form.get("client_assertion_type")
                    != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"):
                return self._send(400, {"error": "unsupported_grant_type"})
            try:
                keys = jwt.PyJWKClient(platform.tool_url + "/hub/lti13/jwks")
                key = keys.get_signing_key_from_jwt(form["client_assertion"]).key
                claims = jwt.decode(form["client_assertion"], key, algorithms=["RS256"],
                                    audience=f"{platform.url}/token", issuer=CLIENT_ID)
                assert claims["sub"] == CLIENT_ID and claims["jti"]
            except (jwt.PyJWTError, KeyError, AssertionError) as error:
                return self._send(401, {"error": "invalid_client", "error_description": str(error)})
            token = uuid.uuid4().hex
            platform.tokens[token] = set(form.get("scope", "").split())
            self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                             "scope": form.get("scope", "")})

    return Handler


class Browser:
    """A student's browser: follows the hub's redirects, posts the platform's form, keeps cookies."""

    def __init__(self):
        self.session = requests.Session()
        self.captured = None  # the last form post to the hub (URL, fields, cookies), for replays

    def launch(self, platform, login):
        """Launch from the LMS as ``login``: the hub's final response."""
        answer = self.session.get(platform.launch_url(login), timeout=60)
        form = re.search(r'<form method="post" action="([^"]+)">(.*?)</form>', answer.text, re.S)
        if not form:
            return answer
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(2)))
        self.captured = (form.group(1), fields, self.session.cookies.copy())
        return self.session.post(form.group(1), data=fields, timeout=120)

    def replay(self):
        """Post the captured form again, with the cookies it was first posted with."""
        url, fields, cookies = self.captured
        return requests.post(url, data=fields, cookies=cookies, timeout=60, allow_redirects=False)
