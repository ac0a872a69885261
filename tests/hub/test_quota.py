"""A student's submissions, every one kept, hold at most the quota together (200 MiB by default).

Quinn submits three times 60 MiB: all kept. A fourth would take
her past the quota: refused, with a message naming the quota and what her submissions hold, in her
terminal and over the exchange's API, and nothing stored grows. The instructor sees each
student's usage (``mha-workbook hub usage`` in their terminal); a student may not.

Quinn is this file's alone (tests/hub/conftest.py's ROSTER): the exchange keeps her 180 MiB for the
rest of the session, and no other test submits as her.
"""

import base64
import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request

import pytest

from .conftest import ASSIGNMENT, INSTRUCTOR, PEOPLE, ok
from .test_exchange import hub_class_home, write_as

QUINN = PEOPLE + "quinn"
MiB = 2**20


def stored(hub_class):
    """(files, bytes) in the exchange's storage."""
    files = [os.path.join(d, f) for d, _, names in os.walk(hub_class.settings.path("exchange", "files")) for f in names]
    return len(files), sum(os.path.getsize(f) for f in files)


def post(hub_class, name, path, body):
    """(status, JSON) of a POST of the encoded form ``body`` to the exchange, with ``name``'s token."""
    request = urllib.request.Request(hub_class.settings.exchange_url + path, data=body, method="POST",
                                     headers={"Authorization": f"token {hub_class.token(name)}",
                                              "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def submissions(hub_class):
    status, listed = hub_class.exchange(INSTRUCTOR, "GET",
                                        f"/submissions/{hub_class.settings.course_id}/{ASSIGNMENT}/{QUINN}")
    assert status == 200, listed
    return listed["submissions"]


def test_the_fourth_60_mib_submission_passes_the_quota_and_is_refused(hub_class, released):
    course, quota = hub_class.settings.course_id, hub_class.settings.submission_quota
    assert quota == 200 * MiB  # the default
    ok(hub_class.nbgrader(QUINN, "fetch_assignment", ASSIGNMENT))
    try:
        refused_past_the_quota(hub_class, course)
    finally:
        shutil.rmtree(hub_class_home(QUINN) / ASSIGNMENT)


def refused_past_the_quota(hub_class, course):
    # One body of 60 MiB (as ngshare-exchange sends it: base64 in a form field), encoded once, sent 4 times.
    body = urllib.parse.urlencode({"files": json.dumps([{"path": "big.bin",
                                                         "content": base64.b64encode(os.urandom(60 * MiB)).decode()}])})
    body = body.encode()
    before = len(submissions(hub_class))
    for _ in range(3):
        status, answer = post(hub_class, QUINN, f"/submission/{course}/{ASSIGNMENT}", body)
        assert status == 200 and answer["success"], (status, answer)
    assert len(submissions(hub_class)) == before + 3  # every one kept
    files, size = stored(hub_class)

    status, answer = post(hub_class, QUINN, f"/submission/{course}/{ASSIGNMENT}", body)
    assert status == 413 and "the quota is 200 MiB over all your submissions" in answer["message"], (status, answer)
    message = answer["message"]
    assert f"your {before + 3} submission(s) hold 180." in message and "this one 60.0 MiB" in message, message
    # From her terminal, as nbgrader submits: the same refusal, in words.
    write_as(hub_class, QUINN, f"{ASSIGNMENT}/big.bin", os.urandom(60 * MiB))
    try:
        done = hub_class.nbgrader(QUINN, "submit", ASSIGNMENT)
    finally:
        (hub_class_home(QUINN) / ASSIGNMENT / "big.bin").unlink()
    assert done.returncode != 0 and f"Submission refused: your {before + 3} submission(s) hold 180." in done.stderr \
        and "the quota is 200 MiB" in done.stderr, done.stdout + done.stderr
    assert stored(hub_class) == (files, size) and len(submissions(hub_class)) == before + 3  # nothing grew
    # An upload over the limit is refused for the limit, whatever her submissions hold: the same upload
    # gets the same answer whatever was submitted before it.
    oversized = urllib.parse.urlencode({"files": json.dumps([{"path": "big.bin", "content": "A" * (4 * 65 * MiB // 3)}])})
    status, answer = post(hub_class, QUINN, f"/submission/{course}/{ASSIGNMENT}", oversized.encode())
    assert status == 413 and "the limit is 64 MiB" in answer["message"], (status, answer)

    # The instructor sees it; a student sees no one's.
    shown = ok(hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "mha-workbook"), "hub", "usage"))
    row = next(line for line in shown.stdout.splitlines() if line.startswith(QUINN))
    count, used, left = row.split()[1:4]
    assert int(count) == before + 3 and 180 <= float(used) < 181 and 19 < float(left) <= 20, shown.stdout
    # Quinn has no `mha-workbook` (the students' environment has none; the grader's she cannot reach): she
    # asks the exchange as the command would, with her own token.
    refused = hub_class.run(QUINN, str(hub_class.settings.venv / "bin" / "mha-workbook"), "hub", "usage")
    assert refused.returncode == 126 and "Permission denied" in refused.stderr, refused.stderr
    assert not (hub_class.settings.student_venv / "bin" / "mha-workbook").exists()
    from autograders.hub.cli import usage_lines

    with pytest.raises(ValueError, match="the exchange refused: Permission denied"):
        usage_lines(hub_class.settings.exchange_url, hub_class.token(QUINN), hub_class.settings.course_id)
