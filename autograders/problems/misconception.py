"""A misconception, declared where a problem's mistakes use it: its tag, and the name the class report shows.

A problem's module declares each misconception its mistakes name, next to them::

    ROLES_SWAPPED = Misconception("roles-swapped", "split h by d_model (roles swapped)")
    Mistake(ROLES_SWAPPED, lambda n: n.h / n.d_model, "Swapped roles: ...")

(those several problems name: :mod:`.shared`). The object is its tag, a string: what a
:class:`~autograders.student.feedback.WrongAnswer` carries (``WrongAnswer(message, misconception=ROLES_SWAPPED)``,
or a message made by :func:`named`), what the notebook's error output writes
(:func:`~autograders.student.feedback.error_value`) and what the report counts, never phrases of the message.
Declaring one registers it in :data:`NAMES` (and :data:`OPTION_WORDS`), which the report and the re-check read;
a tag not in :data:`NAMES` is refused where it is raised.
"""

from ..student import feedback as _feedback

# tag: the name the report shows, gathered from the declarations (in the order they are imported: nothing reads it)
NAMES = {}
# tag: words (a regular expression) that a labelled choice's option must hold to carry this tag: a tag
# attached to the wrong option fails tests/test_choices.py.
OPTION_WORDS = {}


class Misconception(str):
    """The misconception ``tag`` (this string), named ``report`` in the class report; ``option``: the words of
    a labelled choice's option showing it (for a tag a choice uses). A tag declared again with another name or
    other words is an error at import: a misconception is written once."""

    def __new__(cls, tag, report, option=None):
        if not isinstance(tag, str) or not tag or "/" in tag or tag == "-":
            raise ValueError(f"tag: expected a word such as 'roles-swapped' (no '/': it starts a mistake's "
                             f"detail), got {tag!r}")
        if not isinstance(report, str) or not report:
            raise ValueError(f"report: expected the name the report shows for {tag!r}, got {report!r}")
        tag = str(tag)
        if tag in NAMES and (NAMES[tag], OPTION_WORDS.get(tag)) != (report, option):
            raise ValueError(f"tag: {tag!r} is declared twice, as {NAMES[tag]!r} (option words "
                             f"{OPTION_WORDS.get(tag)!r}) and as {report!r} (option words {option!r})")
        self = super().__new__(cls, tag)
        self.report, self.option = report, option
        NAMES[tag] = report
        if option is not None:
            OPTION_WORDS[tag] = option
        return self

    def __reduce__(self):
        return str, (str(self),)  # pickled or copied, it is its tag


class Named(str):
    """A message that names a misconception: a ``str`` with a ``misconception`` tag."""

    misconception = None


def named(tag, message):
    """``message`` carrying the misconception ``tag`` (for tables of known wrong answers):
    ``WrongAnswer(named(shared.TRANSPOSED, "..."))`` raises with that tag."""
    if tag not in NAMES:
        raise ValueError(f"tag: {tag!r} is not a known misconception; expected one of {sorted(NAMES)}")
    text = Named(message)
    text.misconception = str(tag)
    return text


def tag_of(message):
    """The tag ``message`` carries (:func:`named`), or None."""
    return getattr(message, "misconception", None)


_feedback.KNOWN_TAGS = NAMES  # a tag not declared is refused where it is raised
