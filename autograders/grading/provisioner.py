"""nbgrader's kernels start in the sandbox through jupyter_client's provisioner interface.

jupyter_client (7.0 and later) starts a kernel through a *kernel provisioner*, which
the kernel spec names in its metadata::

    {"argv": [...], "metadata": {"kernel_provisioner": {"provisioner_name": "mha-sandbox",
                                                         "config": {"settings": {...}}}}}

and which is registered as an entry point (``pyproject.toml``, group
``jupyter_client.kernel_provisioners``). :class:`SandboxProvisioner` is jupyter_client's
:class:`~jupyter_client.provisioning.LocalProvisioner` with three changes, all in its
public ``pre_launch``, ``launch_kernel`` and ``cleanup``: each kernel gets a private directory (a
:class:`~autograders.grading.sandbox_folder.Sandbox`, holding the submission's other files);
it talks over Unix sockets in that directory (zmq's ``ipc`` transport, so that a new
network namespace does not cut it off); its command line is the launcher's, which
starts it in bubblewrap, showing it the grading copy of ``mha_core`` (no function that answers a graded
problem: :mod:`autograders.grading.library_copy`) unless the tests run in the kernel; and it is given two pipes, over which, after the last cell, it
hands the answers over to the grader's checks (:meth:`SandboxProvisioner.take_pipes`,
:mod:`autograders.student.serve`). The kernel is interrupted by a message on its control channel, not a
signal: bubblewrap starts it in a session of its own.

:func:`kernel_spec` is that spec for given :class:`~autograders.student.settings.Settings`
(the kernel is this interpreter's ipykernel, with the output cap loaded on its command
line); :class:`SandboxKernelSpecs` hands it to a kernel manager, whatever kernel name the
notebook asks for.
"""

import contextlib
import os
import re
import subprocess
import sys
import threading
import time

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict

from .library_copy import grading_copy
from .prepared import font_list
from .sandbox_folder import Sandbox
from ..student.settings import Settings

PROVISIONER = "mha-sandbox"  # its entry point's name (pyproject.toml)


def kernel_spec(settings, name="python3"):
    """The spec of a sandboxed kernel under ``settings``."""
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
            "--IPKernelApp.extra_extensions=autograders.student.output_cap",
            f"--OutputLimit.characters={settings.output_limit}"]
    return KernelSpec(argv=argv, display_name=f"Python 3 (sandboxed, {name})", language="python", interrupt_mode="message",
                      metadata={"kernel_provisioner": {"provisioner_name": PROVISIONER,
                                                       "config": {"settings": settings.as_dict()}}})


class SandboxKernelSpecs(KernelSpecManager):
    """Every kernel name is the sandboxed kernel (:func:`kernel_spec`) under ``settings``."""

    settings = Dict(help="the Settings, as Settings.as_dict() gives them")

    def get_kernel_spec(self, kernel_name):
        return kernel_spec(Settings.from_dict(self.settings), kernel_name)


class SandboxProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, starting each kernel in a fresh sandbox."""

    settings = Dict(help="the Settings, as Settings.as_dict() gives them (the kernel spec's provisioner config)")

    sandbox = None
    pipes = ()  # the grader's ends: (write to the kernel, read from it)
    kernel_ends = ()  # the kernel's ends, open here only until it has started
    kernel_numbers = ()  # their numbers, the same in the kernel

    def take_pipes(self):
        """(write, read, IN, OUT): the grader's ends of the kernel's two pipes, now the caller's to close, and
        the numbers of the kernel's ends in the kernel; () if none."""
        pipes, self.pipes = self.pipes, ()
        return (*pipes, *self.kernel_numbers) if pipes else ()

    log_limit = 64 * 1024  # bytes of a kernel's stderr that reach the grader's log

    def _close(self, name):
        for fd in getattr(self, name):
            with contextlib.suppress(OSError):
                os.close(fd)
        setattr(self, name, ())

    async def pre_launch(self, **kwargs):
        if self.sandbox is not None:  # a restart: a fresh directory (and user) for the new kernel
            self.sandbox.close()
        settings = Settings.from_dict(self.settings)
        library = None if settings.tests_in_kernel else grading_copy()  # no graded answer in the kernel's library
        self.sandbox = Sandbox(settings, copy_from=kwargs.get("cwd"), fonts=font_list(settings), library=library)
        km = self.parent  # where LocalProvisioner, too, reads and writes the connection's details
        km.transport = "ipc"
        sockets = self.sandbox.root / "sockets"  # the kernel's, until it has made them (see _lock_sockets)
        sockets.mkdir(mode=0o700)
        if self.sandbox.uid is not None:
            os.chown(sockets, self.sandbox.uid, self.sandbox.uid)
        km.ip = str(sockets / "kernel")
        km.connection_file = str(self.sandbox.root / "kernel.json")
        kwargs["cwd"] = str(self.sandbox.work)
        kwargs["env"] = {**self.sandbox.env(), **kwargs.get("env", {})}
        kwargs = await super().pre_launch(**kwargs)  # writes the connection file; the kernel's command line
        kwargs["cmd"] = self.sandbox.command(kwargs["cmd"], own=[km.connection_file])
        self._close("pipes")
        to_kernel, self_write = os.pipe()
        self_read, from_kernel = os.pipe()
        self.pipes, self.kernel_ends = (self_write, self_read), (to_kernel, from_kernel)
        self.kernel_numbers = self.kernel_ends
        kwargs["pass_fds"] = self.kernel_ends  # the same numbers in the kernel (subprocess keeps them)
        # No descriptor of the grader's: not its terminal or pipe (ipykernel keeps a copy of the original
        # stdout and stderr, writable from a cell), nor its log file; stderr reaches the log through a filter.
        kwargs["stdout"] = kwargs["stdin"] = subprocess.DEVNULL
        return kwargs

    async def launch_kernel(self, cmd, **kwargs):
        read, kwargs["stderr"] = os.pipe()
        try:
            info = await super().launch_kernel(cmd, **kwargs)
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(kwargs["stderr"])
            self._close("kernel_ends")
        self.log_thread = threading.Thread(target=_forward_log, args=(read, self.log_limit), daemon=True)
        self.log_thread.start()
        if self.sandbox.uid is not None:
            self.lock_thread = threading.Thread(target=_lock_sockets, args=(self.parent, self.sandbox.uid), daemon=True)
            self.lock_thread.start()
        return info

    async def cleanup(self, restart=False):
        await super().cleanup(restart=restart)
        if self.process is not None:
            self.process.poll()  # reaped once it has ended: no bubblewrap left a zombie of the grader's
        if getattr(self, "log_thread", None) is not None:
            self.log_thread.join(timeout=5)  # the kernel is gone: its stderr ends
        self._close("pipes")
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")  # a terminal's escapes and controls; tabs and newlines stay


def _forward_log(read, limit):
    """Copy a kernel's stderr (the pipe's ``read`` end) to this process's stderr, control characters
    dropped, at most ``limit`` bytes; read the rest to its end without keeping it."""
    left = limit
    with open(read, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            if left > 0:
                kept = _CONTROL.sub(b"", chunk[:left])
                left -= len(chunk)
                if left <= 0:
                    kept += b"\n[the kernel's log was cut here]\n"
                with contextlib.suppress(OSError):
                    os.write(2, kept)


def _lock_sockets(km, uid, timeout=60):
    """Once the kernel (as ``uid``) has made its five sockets, hand their folder back to root: the kernel
    can no longer write a file outside the memory its sandbox gives it (a grader that is root only)."""
    folder = os.path.dirname(km.ip)
    names = [f"{km.ip}-{port}" for port in (km.shell_port, km.iopub_port, km.stdin_port, km.hb_port, km.control_port)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and os.path.isdir(folder):
        if all(os.path.exists(name) for name in names):
            with contextlib.suppress(OSError):
                os.chown(folder, 0, 0)
                os.chmod(folder, 0o755)
            return
        time.sleep(0.05)
