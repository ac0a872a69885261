"""nbgrader's autograde as this course runs it: the steps replaced, and :func:`configure`.

The course's ``nbgrader_config.py`` calls :func:`configure`, which replaces nbgrader's
``Execute`` by :class:`SandboxExecute` (each kernel started in the sandbox, see
:mod:`autograders.grading.sandbox`) and ``OverwriteCells`` by :class:`RestoreMissingCells`,
puts :class:`RestoreCellMetadata` before nbgrader's own checks, and sets
:func:`prepare_submission` as the pre-convert hook.

:class:`SandboxExecute` makes a bad cell cost only itself: a cell that runs past the
timeout is interrupted (or, if it ignores the interrupt, its kernel is killed); a kernel
that dies (``os._exit``, a fatal signal, the memory limit) is replaced by a fresh one
that quietly replays the cells that had completed, and the rest of the notebook runs.
Each such event leaves a one-line error in the cell ("timeout", "crash", "memory
limit"), which nbgrader's feedback shows. Output is capped per cell twice: in the
kernel (:mod:`autograders.student.output_cap`: past the limit the cell is stopped) and
here, whatever the kernel sends. With ``checks`` on (the course's autograde, ``grade``'s jobs) the
test cells never run in the kernel: the kernel that ran the last cell hands the answers over to the
checks, whose verdicts become the test cells' outputs, which nbgrader then scores
(:mod:`autograders.grading.handover`): each submission runs once. :class:`RestoreCellMetadata`
and :class:`RestoreMissingCells` (:mod:`autograders.grading.repairs`) put back what a student
did to the assignment's cells before nbgrader's own checks fail the submission on it.

This module imports nbgrader (seconds): only the course's configuration and the
grading jobs import it, never the launcher or a kernel.
"""

import asyncio
import json
import time
from queue import Empty

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_hook, run_sync
from nbformat import NotebookNode
from nbgrader.converters import Autograde
from nbgrader.preprocessors import CheckCellMetadata, DeduplicateIds, Execute, OverwriteCells
from traitlets import Bool, Integer, List, Unicode, default

from ..student.settings import CONFIG_NAMES, DEFAULT, GiB, Settings
from ..student.output_cap import OUTPUT_MARK
from .provisioner import SandboxKernelSpecs
from .repairs import (  # noqa: F401 (the course's config and the tests know them here too)
    CheckCellMetadataOnce, INVALID_NOTE, METADATA_NOTE, NOTE, RENAMED_NOTE, RestoreCellMetadata, RestoreMissingCells, prepare_submission,
    restore_metadata,
)

TIMEOUT_ENAME = "CellTimeoutError"
CRASH_ENAME = "KernelCrashed"
WELCOME = "welcome"  # what SandboxExecute._reply_to gives at IOPub's welcome of the subscription


def _note(cell, ename, message):
    """Add a one-line error to ``cell`` saying what happened to it."""
    cell.setdefault("outputs", []).append(
        NotebookNode(output_type="error", ename=ename, evalue=message, traceback=[f"\x1b[0;31m{ename}\x1b[0m: {message}"])
    )

def _has_error(cell, ename):
    return any(o.get("output_type") == "error" and o.get("ename") == ename for o in cell.get("outputs", []))

class SandboxExecute(Execute):
    """nbgrader's Execute in a sandboxed kernel, where a bad cell costs only itself."""

    # The course's settings (autograders.student.settings: their defaults, and what each means).
    notebook_timeout = Integer(DEFAULT.notebook_timeout, help="seconds the whole notebook may run (0: no limit)").tag(config=True)
    memory_limit = Integer(DEFAULT.memory, help="address space of a kernel, bytes (0: no limit)").tag(config=True)
    file_size_limit = Integer(DEFAULT.file_size, help="largest file a kernel may write, bytes").tag(config=True)
    process_limit = Integer(DEFAULT.processes, help="processes and threads of a kernel").tag(config=True)
    open_files_limit = Integer(DEFAULT.open_files, help="files a kernel may hold open").tag(config=True)
    output_limit = Integer(DEFAULT.output_limit, help="characters a cell may print; past them the kernel stops the cell").tag(config=True)
    hide = List(Unicode(), help="directories the kernel must not see (the course)").tag(config=True)
    unisolated = Bool(DEFAULT.unisolated, help="run students' code without bubblewrap (trusted work only: it "
                                               "reads what the grader's user may read; never as root)").tag(config=True)
    disk_limit = Integer(DEFAULT.disk, help="bytes a kernel may write in all (its directory and temporary ones)").tag(config=True)
    max_restarts = Integer(DEFAULT.max_restarts, help="kernels started for one notebook, at most").tag(config=True)
    checks = Bool(False, help="the test cells do not run in the kernel: the source notebook's tests run in the "
                              "grader on the answers the kernel hands over after its last cell").tag(config=True)
    source_notebook = None  # the source notebook itself, instead of the course's (standalone.recheck)
    verdicts = None  # the checks' verdicts of the last notebook, {grade_id: Checked}

    @default("timeout")
    def _default_timeout(self):
        return DEFAULT.cell_timeout

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.error_on_timeout = {
            "ename": TIMEOUT_ENAME,
            "evalue": "",
            "traceback": [],  # filled in per cell by _fix_timeout_note
        }

    @property
    def settings(self):
        """This executor's options (the course's, as its config sets them) as one :class:`Settings`."""
        return Settings(cell_timeout=self.timeout, tests_in_kernel=not self.checks,
                        **{field: getattr(self, name) for field, name in CONFIG_NAMES.items()})

    def create_kernel_manager(self):
        """jupyter_client's own kernel manager, whose kernel spec names the sandbox's provisioner
        (:mod:`autograders.grading.provisioner`) and carries this executor's settings."""
        km = super().create_kernel_manager()
        km.kernel_spec_manager = SandboxKernelSpecs(settings=self.settings.as_dict())
        return km

    # -- starting and stopping a kernel, without jupyter_client's fixed waits --
    #
    # jupyter_client's wait_for_ready, after the kernel_info reply, reads IOPub until it has been quiet for
    # 0.2 s, and its graceful shutdown polls the process every 0.1 s: 0.3 s of nothing per notebook
    # (read from jupyter_client 8.10). The kernel is ready here once it has answered kernel_info on the
    # shell and said "idle" for that request on IOPub (which proves the subscription live and drains what
    # came before: every later read is by parent id anyway); it is stopped by a shutdown request and a
    # 10 ms poll, after which nbclient's clean-up finds it gone.

    async def async_start_new_kernel_client(self):
        """nbclient's (its public steps; ``on_notebook_start`` kept), ready as said above."""
        self.kc = self.km.client()
        await ensure_async(self.kc.start_channels())
        try:
            self.kernel_info_reply = await self._ready(self.startup_timeout)
        except Exception:
            self.kc.stop_channels()
            self.kc.context.destroy(linger=0)
            self.kc = None
            await ensure_async(self.km.shutdown_kernel(now=True))
            raise
        self.kc.allow_stdin = False
        await run_hook(self.on_notebook_start, notebook=self.nb)
        return self.kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    async def _ready(self, timeout):
        """The kernel_info reply, once IOPub has shown that request's "idle" (the kernel is ready). A
        subscription that joins late misses what was sent before: then the request is sent again, at once
        when IOPub welcomed the subscription meanwhile (ipykernel 7's ``iopub_welcome``: every later message
        reaches it; half the kernels here, measured 2026-12-06), else after 0.1 s of silence."""
        deadline = time.monotonic() + timeout
        live = False
        while time.monotonic() < deadline:
            msg_id = self.kc.kernel_info()
            reply = await self._reply_to(self.kc.shell_channel, msg_id, "kernel_info_reply", 1.0, deadline)
            idle = reply and await self._reply_to(self.kc.iopub_channel, msg_id, "status", 1.0 if live else 0.1,
                                                  deadline, "idle", welcome=not live)
            if idle == WELCOME:
                live = True
            elif idle:
                return reply
            elif not await ensure_async(self.km.is_alive()):
                raise RuntimeError("Kernel died before replying to kernel_info")
        raise RuntimeError(f"Kernel didn't respond in {timeout} s")

    @staticmethod
    async def _reply_to(channel, msg_id, msg_type, wait, deadline, state=None, welcome=False):
        """The message of ``msg_type`` (a status: ``state``) that answers ``msg_id`` on ``channel`` within
        ``wait`` seconds, or None (:data:`WELCOME` at an ``iopub_welcome``, with ``welcome``); the messages
        before it are read and dropped."""
        until = min(deadline, time.monotonic() + wait)
        while (left := until - time.monotonic()) > 0:
            try:
                msg = await ensure_async(channel.get_msg(timeout=left))
            except Empty:
                return None
            if welcome and msg["msg_type"] == "iopub_welcome":
                return WELCOME
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == msg_type
                    and (state is None or msg["content"].get("execution_state") == state)):
                return msg
        return None

    async def _async_stop_kernel(self, wait=1.0):
        """A graceful stop: the shutdown request, then the process watched every 10 ms (at most ``wait``
        seconds; nbclient's clean-up then stops what is left its own way)."""
        await ensure_async(self.km.request_shutdown())
        deadline = time.monotonic() + wait
        while await ensure_async(self.km.is_alive()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    _stop_kernel = run_sync(_async_stop_kernel)

    async def _async_cleanup_kernel(self):
        """nbclient's clean-up, then the client's and the manager's zmq contexts closed (linger 0), not left
        to the garbage collector: there a context collected in one cycle with a socket still open blocks
        in ``term()`` forever (the weak references through which it would close that socket are cleared
        first), and with it the process that grades."""
        contexts = [self.kc.context] if self.kc is not None else []
        contexts += [self.km.context] if self.km is not None and self.owns_km else []
        try:
            await super()._async_cleanup_kernel()
        finally:
            for context in contexts:
                context.destroy(linger=0)

    _cleanup_kernel = run_sync(_async_cleanup_kernel)

    def _timeout_message(self):
        return f"timeout: this cell ran for more than {self.timeout} s and was stopped; the rest of the notebook still ran."

    # -- output limit (whatever the kernel sends) --

    def process_message(self, msg, cell, cell_index):
        kind = msg.get("msg_type")
        if kind in ("stream", "display_data", "execute_result", "update_display_data", "error"):
            content = msg["content"]
            if kind == "stream" and OUTPUT_MARK in str(content.get("text", "")):
                self._output_limited.add(cell_index)  # the kernel's own cap
            size = len(json.dumps(content, default=str))
            used = self._output_used.get(cell_index, 0)
            self._output_used[cell_index] = used + size
            if used + size > self.output_limit:
                self._output_limited.add(cell_index)
                room = self.output_limit - used
                if kind == "error":  # kept (it decides the grade), shortened
                    content["evalue"] = str(content.get("evalue", ""))[:2000]
                    content["traceback"] = [str(t)[:2000] for t in content.get("traceback", [])[:40]]
                elif kind == "stream" and (room > 0 or not self._has_stream(cell, content.get("name"))):
                    content["text"] = str(content.get("text", ""))[: max(room, 200)]  # a first stderr kept: it fails a test
                else:
                    return None
        return super().process_message(msg, cell, cell_index)

    def _output_note(self, cell, cell_index):
        """A note (not a stream: nbgrader's LimitOutput keeps the first lines of those) that output was dropped."""
        said = any(OUTPUT_MARK in str(o.get("text", "")) + str(o.get("evalue", "")) for o in cell.get("outputs", []))
        if cell_index in self._output_limited and not said:  # the kernel's own note, if it got here, is enough
            cell.outputs.append(NotebookNode(
                output_type="display_data", metadata={},
                data={"text/plain": f"{OUTPUT_MARK} this cell printed more than {self.output_limit} characters; "
                                    "the rest was dropped]"},  # what got here; the kernel stops the cell itself
            ))

    @staticmethod
    def _has_stream(cell, name):
        return any(o.get("output_type") == "stream" and o.get("name") == name for o in cell.get("outputs", []))

    # -- running the notebook, replacing a dead or stuck kernel --
    #
    # nbclient's executor (``NotebookClient.execute``) runs a notebook in one kernel from start to end and
    # has no hook to replace a dead kernel and go on with the next cell, so this loop stays ours. It calls
    # nbclient's public steps (``setup_kernel``, ``execute_cell``, ``preprocess_cell``,
    # ``reset_execution_trackers``, ``set_widgets_metadata``) as nbconvert's ``ExecutePreprocessor.preprocess``
    # does, re-initialising the client the same way; one private step, ``_check_assign_resources``, is read
    # from nbconvert 7.17.2 with nbclient 0.11.0 (pyproject.toml pins both ranges).

    def preprocess(self, nb, resources=None, km=None):
        from nbclient import NotebookClient

        from .checker import is_test, take_off_records
        from .handover import check_answers, graded_cells, not_run, source_of, used_by

        NotebookClient.__init__(self, nb, km)
        take_off_records(nb)  # a submission's own copies of the grader's records are the student's writing
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self._output_used, self._output_limited = {}, set()
        cells = self.nb.cells
        completed = []  # code cells that ran to their end, error or not: replayed in a new kernel
        index, kernels = 0, 0
        check = self.source_notebook is not None or self.checks  # then the hand-over, and no test cell runs here
        source = source_of(self, resources) if check else None
        runs = graded_cells(nb, source) if source is not None else None  # None: a plain notebook, every cell
        needed = used_by(nb, runs) if runs is not None else set()
        deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        while index < len(cells) or check:
            kernels += 1
            if kernels > self.max_restarts:
                self._not_run(cells[index:], "crash: not run, the kernel crashed too often in this notebook.")
                if check:
                    check_answers(self, source, None, "the kernel crashed too often in this notebook")
                break
            self.shutdown_kernel = "graceful"
            with self.setup_kernel():  # a new client each time: its kernel_info reply is ours (_ready)
                self.nb.metadata["language_info"] = self.kernel_info_reply["content"].get("language_info", {})
                if not self._replay(completed):
                    continue
                while index < len(cells):
                    if deadline is not None and time.monotonic() > deadline:  # checked between cells
                        self._not_run(cells[index:], f"timeout: not run, the notebook ran for more than "
                                                     f"{self.notebook_timeout} s.", TIMEOUT_ENAME)
                        index = len(cells)
                        break
                    cell = cells[index]
                    index += 1
                    if check and is_test(cell):  # its outputs come from the checks (checker.write_outputs)
                        cell.outputs, cell.execution_count = [], None
                        continue
                    if runs is not None and cell.cell_type == "code" and index - 1 not in runs:
                        not_run(cell, needed)  # what is graded is what the answer cells define
                        continue
                    try:
                        self.preprocess_cell(cell, resources, index - 1)
                        self._output_note(cell, index - 1)
                    except DeadKernelError:
                        _note(cell, CRASH_ENAME, self._crash_message())
                        self.shutdown_kernel = "immediate"
                        break
                    except CellTimeoutError:  # interrupted, yet still busy: kill it
                        _note(cell, TIMEOUT_ENAME, self._timeout_message())
                        self.shutdown_kernel = "immediate"
                        break
                    if _has_error(cell, "MemoryError"):  # what it holds is freed only with its kernel
                        self._memory_note(cell)
                        self.shutdown_kernel = "immediate"
                        break
                    if _has_error(cell, TIMEOUT_ENAME):
                        self._fix_timeout_note(cell)
                    elif cell.cell_type == "code" and cell.source.strip():
                        completed.append(index - 1)
                if self.shutdown_kernel == "graceful":
                    if check and index >= len(cells):  # the same process, still alive: it hands its answers over
                        check_answers(self, source, self.km.provisioner)
                        check = False
                    if self.shutdown_kernel == "graceful":
                        self._stop_kernel()
        self.set_widgets_metadata()
        return self.nb, self.resources

    def cell_trouble(self, index, label):
        """What went wrong when cell ``index`` ran, for the checks to blame it (labelled ``label``), or None."""
        cell = self.nb.cells[index]
        if _has_error(cell, TIMEOUT_ENAME):
            return f"cell {label} ran past the {self.timeout} s limit"
        if index in self._output_limited:
            return f"cell {label} printed more than {self.output_limit} characters and was stopped"
        if _has_error(cell, "MemoryError"):
            return f"cell {label} reached the memory limit"
        return None

    @staticmethod
    def _not_run(cells, message, ename=CRASH_ENAME):
        """A note in each code cell of ``cells`` that it was not run (an error: its tests score 0)."""
        for cell in cells:
            if cell.cell_type == "code" and cell.source.strip():
                _note(cell, ename, message)

    def _replay(self, completed):
        """Run the completed cells again, quietly, in a new kernel; False if it died doing so."""
        for i in list(completed):
            original = self.nb.cells[i]
            try:  # on a copy: the outputs shown are those of the first run
                self.execute_cell(NotebookNode(json.loads(json.dumps(original))), i, store_history=False)
            except (DeadKernelError, CellTimeoutError):
                completed.remove(i)  # it crashed this time: never again
                self.shutdown_kernel = "immediate"
                return False
            finally:
                self.nb.cells[i] = original  # nbclient puts the executed cell in the notebook
        return True

    def _crash_message(self):
        limit = f"{self.memory_limit / GiB:g} GiB" if self.memory_limit else "none"
        return ("crash: the kernel died while running this cell (os._exit, a fatal signal, or the memory limit of "
                f"{limit}); the cells after it ran in a fresh kernel.")

    def _fix_timeout_note(self, cell):
        for output in cell.outputs:
            if output.get("output_type") == "error" and output.get("ename") == TIMEOUT_ENAME and not output.get("evalue"):
                output["evalue"] = self._timeout_message()
                output["traceback"] = [f"\x1b[0;31m{TIMEOUT_ENAME}\x1b[0m: {self._timeout_message()}"]

    def _memory_note(self, cell):
        """Say that the memory limit was reached (the kernel is then replaced: see preprocess)."""
        limit = f"{self.memory_limit / GiB:g} GiB"
        for output in cell.outputs:
            if output.get("output_type") == "error" and output.get("ename") == "MemoryError":
                output["evalue"] = f"{output.get('evalue') or ''} (memory limit of {limit} reached)".strip()
                output["traceback"] = [*output.get("traceback", []), f"MemoryError: the memory limit of {limit} was reached."]

def configure(c, course=None, hide=()):
    """Set up autograde in the nbgrader config ``c`` (the course's ``nbgrader_config.py``):
    every submission's own cells run in a sandboxed kernel that cannot see ``course`` nor the
    directories in ``hide``, and its tests in the grader on the answers it hands over (``grade``
    turns that off with ``--no-recheck``); deleted test cells are put back; a notebook submitted
    under another name, or not a notebook at all, is graded with a note (see
    :func:`prepare_submission`)."""
    steps = Autograde.class_traits()
    same = {Execute: SandboxExecute, OverwriteCells: RestoreMissingCells, CheckCellMetadata: CheckCellMetadataOnce}
    c.Autograde.autograde_preprocessors = [same.get(step, step) for step in steps["autograde_preprocessors"].default()]
    sanitize = []
    for step in steps["sanitize_preprocessors"].default():
        if step is DeduplicateIds:  # edited metadata restored first: nbgrader's steps fail on it
            sanitize.append(RestoreCellMetadata)
        sanitize.append(same.get(step, step))
    c.Autograde.sanitize_preprocessors = sanitize
    c.OverwriteCells.add_missing_cells = True  # a deleted test cell is put back and run
    c.Autograde.pre_convert_hook = prepare_submission
    c.SandboxExecute.checks = True  # the tests run in the grader, on the answers handed over
    c.SandboxExecute.hide = sorted({str(p) for p in [course, *hide] if p})


