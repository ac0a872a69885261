"""The hub's LTI settings (``mha-workbook hub up --lti lti.json``), checked before anything
changes, and the hub's configuration they give (no hub started: tests/hub/test_lti.py does)."""

import json

import pytest
from traitlets.config import Config

from autograders.__main__ import main
from autograders.hub import hubconfig
from autograders.hub.settings import HubSettings

LTI = {"issuer": "https://lms.example.edu", "client_id": "123", "authorize_url": "https://lms.example.edu/auth",
       "jwks_endpoint": "https://lms.example.edu/jwks", "deployment_id": "1:abc"}


@pytest.mark.parametrize("lti, named", [
    ({k: v for k, v in LTI.items() if k != "jwks_endpoint"}, "missing: jwks_endpoint; unknown: none"),
    ({**LTI, "client_secret": "x"}, "missing: none; unknown: client_secret"),
    ({k: v for k, v in LTI.items() if k != "deployment_id"}, "missing: deployment_id; unknown: none"),
    ({**LTI, "deployment_id": ""}, "deployment_id must be the registration's deployment id"),
    ({**LTI, "deployment_id": []}, "deployment_id must be the registration's deployment id"),
    ({**LTI, "deployment_id": ["1:abc", ""]}, "deployment_id must be the registration's deployment id"),
    ({**LTI, "deployment_id": 7}, "deployment_id must be the registration's deployment id"),
])
def test_incomplete_lti_settings_are_refused_naming_the_key(lti, named):
    with pytest.raises(ValueError, match=named):
        HubSettings(lti=lti)


def test_hub_up_says_in_one_line_when_the_lti_file_cannot_be_read(tmp_path, capsys):
    lti = tmp_path / "lti.json"
    command = ["hub", "up", "--roster", str(tmp_path / "r.csv"), "--root", str(tmp_path / "state"), "--lti", str(lti)]
    assert main(command) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("make hub:") and str(lti) in said and len(said.splitlines()) == 1
    lti.write_text(json.dumps({"issuer": "https://lms.example.edu"}))
    assert main(command) == 2
    said = capsys.readouterr().err.strip()
    assert "missing: authorize_url, client_id, deployment_id, jwks_endpoint" in said and len(said.splitlines()) == 1
    assert not (tmp_path / "state").exists()


def test_the_lti_settings_give_the_roster_lti_authenticator(tmp_path):
    settings = HubSettings(root=str(tmp_path), instructor="teach", students=["ann", "ben"], lti=LTI)
    (tmp_path / "secrets").mkdir()
    for name in ("proxy_token", "course_admin_token", "instructor_password"):
        (tmp_path / "secrets" / name).write_text("x" * 40)
    c = Config()
    hubconfig.configure(c, settings)
    assert c.JupyterHub.authenticator_class == "autograders.hub.lti.RosterLTI13Authenticator"
    auth = c.RosterLTI13Authenticator
    assert auth.roster == {"ann", "ben"} and auth.client_id == {"123"} and auth.issuer == LTI["issuer"]
    assert auth.username_key == "custom_roster_id"
    assert auth.deployment_ids == {"1:abc"} and c.LTI13LaunchValidator.time_leeway == 60
    assert c.JupyterHub.spawner_class == "autograders.hub.spawner.ClassSpawner"
    key = tmp_path / "secrets" / "lti_tool_key.pem"
    assert key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----") and key.stat().st_mode & 0o777 == 0o600
