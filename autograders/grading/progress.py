"""What the grading command shows: a progress bar on stderr, and the short reason of a failed job."""

import re
import sys

from tqdm import tqdm


_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")
_GENERIC = ("Please see the", "There was an error processing")


def _reason(log, kernel_log=None):
    """A short reason for a failed autograde: the last exception nbgrader logged."""
    lines = log.splitlines()
    raised = [m for m in map(_EXCEPTION_LINE.match, lines) if m and not any(g in m.group(2) for g in _GENERIC)]
    if raised:
        return f"{raised[-1].group(1).rsplit('.', 1)[-1]}: {raised[-1].group(2).strip()}"[:300]
    errors = [line[len("[ERROR] "):] for line in lines if line.startswith("[ERROR] ") and not any(g in line for g in _GENERIC)]
    return (errors[-1] if errors else "autograde failed (see nbgrader's log)")[:300]


class _Bar(tqdm):
    """tqdm, with the failures so far (``failed``) and the label of the last item (``label``)
    among the fields of its ``bar_format``."""

    failed, label = 0, ""

    @property
    def format_dict(self):
        fields = super().format_dict
        n, total, elapsed = fields["n"], fields["total"], fields["elapsed"]
        left = f", about {elapsed / n * (total - n):.0f} s left" if total and 0 < n < total else ""
        return {**fields, "failed": self.failed, "left": left, "label": f"  {self.label}"[:40] if self.label else ""}


class Progress:
    """The grading's progress bar on stderr, drawn by tqdm:
    ``[#########.....................] 3/10 (1 failed) 12 s, about 28 s left  student/level``
    (redrawn in place; the last state stays on a line of its own)."""

    def __init__(self, total, stream=None, width=30):
        self.total, self.done, self.failed = total, 0, 0
        fields = "{n_fmt}/{total_fmt} ({failed} failed) {elapsed_s:.0f} s{left}{label}"
        self.bar = _Bar(total=total, file=stream or sys.stderr, ascii=".#", mininterval=0.5, dynamic_ncols=False,
                        bar_format=f"[{{bar:{width}}}] {fields}")
        if not total:
            self.bar.close()

    def update(self, ok, label=""):
        self.done += 1
        self.failed += 0 if ok else 1
        self.bar.failed, self.bar.label = self.failed, label
        self.bar.update(1)
        if self.done >= self.total:
            self.bar.label = ""
            self.bar.close()  # the final state, and a newline
