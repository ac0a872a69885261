"""Each person's JupyterLab as their own system user (JupyterHub's LocalProcessSpawner), with a umask.

JupyterHub's spawner leaves the hub's umask (0022) to the servers, so every file a student's
server, terminal or kernel makes outside their 0700 home (in ``/tmp``, ``/dev/shm``) is readable by
every account: a kernel's connection file there gives its key to anyone. A student's processes
get ``umask`` 0077 (``STUDENT_UMASK``): what they make is theirs alone unless they open it up. The
instructor's stay at 0022 (``INSTRUCTOR_UMASK``): the grader's sandbox hands files to throwaway
accounts; their connection files are refused by the kernel when others may read them
(``hub/site/mha_workbook_ipc.py``).
"""

import os

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Integer

STUDENT_UMASK, INSTRUCTOR_UMASK = 0o077, 0o022


class ClassSpawner(LocalProcessSpawner):
    umask = Integer(STUDENT_UMASK, help="the umask of the server and everything it starts").tag(config=True)

    def make_preexec_fn(self, name):
        become, umask = super().make_preexec_fn(name), self.umask

        def preexec():
            os.umask(umask)
            become()

        return preexec
