"""Grades back to the LMS: LTI Advantage's Assignment and Grade Services (AGS 2.0).

``mha-workbook hub grades --assignment A`` (as root, beside the hub) posts each student's
score of ``A`` from the course's gradebook to the LMS, as the LMS's line item for ``A``
(found by its ``resourceId``, the assignment's name, or created). It needs:

- ``token_endpoint`` in the hub's LTI settings: the tool asks it for an access token with a
  JWT signed by its own key (the client-credentials grant of IMS Security 1.0; the platform
  checks it against the tool's public key, ``/hub/lti13/jwks``);
- a launch of each student from the LMS (``lti.py`` keeps their LMS user id and the course's
  line-items URL): a student who never launched gets no grade sent, and is named.
"""

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timezone

import jwt

TOOL_KID = "mha-workbook-tool"  # the tool key's id in its JWKS (lti.py) and in the tokens it signs
SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score")
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"


class AGSError(RuntimeError):
    """The LMS refused or could not be reached: what was asked and what it answered."""


def _call(method, url, body=None, content_type=None, accept="application/json", token=None):
    headers = {"Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as error:
        raise AGSError(f"{method} {url}: the LMS answered {error.code} {error.read().decode()[:300]}") from None
    except OSError as error:
        raise AGSError(f"{method} {url}: the LMS cannot be reached ({error})") from None
    return json.loads(text) if text.strip() else {}


def access_token(token_endpoint, client_id, key_pem):
    """An AGS access token, asked for with a client assertion signed by the tool's key."""
    now = int(time.time())
    assertion = jwt.encode({"iss": client_id, "sub": client_id, "aud": token_endpoint, "iat": now,
                            "exp": now + 300, "jti": uuid.uuid4().hex},
                           key_pem, algorithm="RS256", headers={"kid": TOOL_KID})
    form = urllib.parse.urlencode({
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": assertion, "scope": " ".join(SCOPES)}).encode()
    answer = _call("POST", token_endpoint, form, "application/x-www-form-urlencoded")
    if "access_token" not in answer:
        raise AGSError(f"POST {token_endpoint}: no access token in the LMS's answer {answer}")
    return answer["access_token"]


def _with_path(url, suffix, **query):
    """``url`` with ``suffix`` added to its path and ``query`` to its query (line-item URLs may carry one)."""
    parts = urllib.parse.urlsplit(url)
    pairs = urllib.parse.parse_qsl(parts.query) + list(query.items())
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix,
                                                  query=urllib.parse.urlencode(pairs)))


def line_item(lineitems, assignment, maximum, token):
    """The URL of the LMS's line item for ``assignment``, created if there is none."""
    found = _call("GET", _with_path(lineitems, "", resource_id=assignment), accept=CONTAINER, token=token)
    for item in found if isinstance(found, list) else []:
        if item.get("resourceId") == assignment:
            return item["id"]
    made = _call("POST", lineitems, {"label": assignment, "resourceId": assignment, "tag": "mha-workbook",
                                     "scoreMaximum": maximum}, LINEITEM, LINEITEM, token)
    return made["id"]


def post_score(lineitem, user_id, score, maximum, token, pending_manual=False):
    """One student's score; ``pending_manual``: written answers not graded yet (the LMS may show it so)."""
    _call("POST", _with_path(lineitem, "/scores"), {
        "userId": user_id, "scoreGiven": score, "scoreMaximum": maximum, "activityProgress": "Completed",
        "gradingProgress": "PendingManual" if pending_manual else "FullyGraded",
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds")}, SCORE, token=token)


def send_grades(lti, launches, key_pem, assignment, scores, pending_manual=()):
    """Post ``scores`` ({student: (score, max_score)}) of ``assignment``; the students of
    ``pending_manual`` still have answers to grade by hand. Returns (sent, not sent with the
    reason). The line item is the one of the course of each student's last launch."""
    if not lti.get("token_endpoint"):
        raise AGSError("the hub's LTI settings have no token_endpoint: the LMS's grade service cannot be asked")
    token = access_token(lti["token_endpoint"], lti["client_id"], key_pem)
    sent, missed, items = [], [], {}
    for student, (score, maximum) in sorted(scores.items()):
        launch = launches.get(student)
        if not launch or not launch.get("lineitems"):
            missed.append((student, "never launched from the LMS with grades on: no LMS user id known"))
            continue
        lineitems = launch["lineitems"]
        if lineitems not in items:
            items[lineitems] = line_item(lineitems, assignment, maximum, token)
        post_score(items[lineitems], launch["sub"], score, maximum, token, student in pending_manual)
        sent.append(student)
    return sent, missed
