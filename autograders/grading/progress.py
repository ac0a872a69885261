"""What the grading command shows: a progress bar on stderr, and the short reason of a failed job."""

import re
import sys
import time


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


class Progress:
    """A plain text progress bar on stderr (redrawn in place on a terminal, a line per
    tenth otherwise)."""

    def __init__(self, total, stream=None, width=30):
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self.width = width
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = -1
        self.draw()

    def update(self, ok, label=""):
        self.done += 1
        self.failed += 0 if ok else 1
        self.draw(label)

    def draw(self, label=""):
        elapsed = time.perf_counter() - self.start
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(self.width * fraction))
        eta = f", about {elapsed / self.done * (self.total - self.done):.0f} s left" if 0 < self.done < self.total else ""
        text = (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} "
                f"({self.failed} failed) {elapsed:.0f} s{eta}")
        if self.tty:
            self.stream.write("\r" + text + (f"  {label}" if label else "")[:40].ljust(40))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            tenth = int(10 * fraction)
            if tenth == self.shown and self.done != self.total:
                return
            self.shown = tenth
            self.stream.write(text + "\n")
        self.stream.flush()
