"""Helpers for the tests of the level checks (``tests/test_checks_level{N}.py``)."""

import pytest

from autograders.checks.feedback import WrongAnswer


def rejects(check, value, *phrases, hidden=False):
    """``check(value)`` raises WrongAnswer whose message holds every phrase; return the message."""
    with pytest.raises(WrongAnswer) as info:
        check(value, hidden=hidden)
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message, message
    return message


def accepts(check, value, capsys):
    """``check(value)`` passes, visible and hidden, with a confirmation each and nothing on stderr."""
    for hidden in (False, True):
        check(value, hidden=hidden)
    out = capsys.readouterr()
    assert out.out.count("✔ Correct.") == 2 and out.err == ""
