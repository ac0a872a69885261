"""How the sandbox's executor (autograders.grading.autograde.SandboxExecute) knows a kernel is ready and
stops it: by the kernel's own answers, not by jupyter_client's fixed waits (no kernel here: the
channels and the manager are stand-ins; tests/test_sandbox.py grades real notebooks with them)."""

import asyncio
import itertools
from concurrent.futures import ThreadPoolExecutor
from queue import Queue

import pytest

from autograders.grading.autograde import SandboxExecute


def message(msg_type, parent, **content):
    return {"msg_type": msg_type, "parent_header": {"msg_id": parent}, "content": content}


class Channel:
    def __init__(self):
        self.queue = Queue()

    async def get_msg(self, timeout=None):
        return self.queue.get(timeout=timeout)  # Empty when nothing came, as jupyter_client's


class Kernel:
    """A kernel client and manager: each kernel_info is answered on the shell; its "idle" reaches IOPub
    only from the ``joins``-th request on (a subscription that joins late misses the first ones)."""

    def __init__(self, joins=1, alive=True, answers=True, welcomes=False):
        self.shell_channel, self.iopub_channel = Channel(), Channel()
        self.joins, self.alive, self.answers, self.welcomes = joins, alive, answers, welcomes
        self.requests, self.shutdowns, self.ids = 0, 0, itertools.count()

    def kernel_info(self):
        self.requests += 1
        msg_id = f"info-{next(self.ids)}"
        self.iopub_channel.queue.put(message("status", "start-up", execution_state="starting"))
        if self.answers:
            self.shell_channel.queue.put(message("kernel_info_reply", msg_id, language_info={"name": "python"}))
            if self.requests == self.joins and self.welcomes:  # ipykernel 7's XPUB: the subscription is live now
                self.iopub_channel.queue.put(message("iopub_welcome", None, subscription=""))
            if self.requests >= self.joins:
                self.iopub_channel.queue.put(message("status", msg_id, execution_state="busy"))
                self.iopub_channel.queue.put(message("status", msg_id, execution_state="idle"))
        return msg_id

    async def is_alive(self):
        return self.alive

    async def request_shutdown(self):
        self.shutdowns += 1
        self.alive = False


def run(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own: in a full run Playwright's sync API holds the main
    thread's event loop (its session fixtures live on), and asyncio.run refuses to start another there."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def executor(kernel):
    ex = SandboxExecute()
    ex.kc = ex.km = kernel
    return ex


def test_ready_when_the_kernel_said_idle_for_its_kernel_info():
    kernel = Kernel()
    reply = run(executor(kernel)._ready(timeout=5))
    assert reply["msg_type"] == "kernel_info_reply" and reply["parent_header"]["msg_id"] == "info-0"
    assert kernel.requests == 1


def test_a_subscription_that_joins_late_is_asked_again():
    kernel = Kernel(joins=3)
    reply = run(executor(kernel)._ready(timeout=5))
    assert kernel.requests == 3 and reply["parent_header"]["msg_id"] == "info-2"


def test_a_subscription_the_kernel_welcomed_is_asked_again_at_once():
    kernel = Kernel(joins=2, welcomes=True)  # the first idle is lost, then IOPub says the subscription is live
    reply = run(executor(kernel)._ready(timeout=5))
    assert kernel.requests == 3 and reply["parent_header"]["msg_id"] == "info-2", \
        "at the welcome, whatever came before it, the request is sent again: its idle reaches IOPub"


def test_a_dead_kernel_or_a_silent_one_is_an_error():
    with pytest.raises(RuntimeError, match="died"):
        run(executor(Kernel(answers=False, alive=False))._ready(timeout=5))
    with pytest.raises(RuntimeError, match="didn't respond in 1 s"):
        run(executor(Kernel(answers=False))._ready(timeout=1))


def test_a_graceful_stop_asks_once_and_returns_when_the_kernel_is_gone():
    kernel = Kernel()
    run(executor(kernel)._async_stop_kernel())
    assert kernel.shutdowns == 1 and not kernel.alive
