"""The limits a submission is graded under, in one place: :class:`Settings`.

A course sets them in its ``nbgrader_config.py``, under the names nbgrader's and
:class:`~autograders.grading.autograde.SandboxExecute`'s options have had all along:
``c.Execute.timeout`` for :attr:`Settings.cell_timeout`, ``c.SandboxExecute.<name>``
for the others (:data:`CONFIG_NAMES`: ``memory_limit``, ``output_limit``, ``hide``...).
What it leaves out keeps the default written below, the only place it is written.

The settings are read once (:meth:`Settings.from_config`) and handed on: to the kernel's
provisioner and the launcher it runs (limits, hidden directories), to the kernel itself
(the output limit, on its command line) and to the checks of the hand-over after the last
cell (the same timeouts and output limit). The standard library only: the launcher,
run as a plain script, loads this file too.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

GiB, MiB = 1024**3, 1024**2


@dataclass(frozen=True)
class Settings:
    cell_timeout: int = 30  # seconds a cell may run (and, in the hand-over, each request and each test)
    notebook_timeout: int = 0  # seconds the whole notebook may run in nbgrader's kernels (0: no limit)
    memory: int = 2 * GiB  # address space of a kernel, bytes (RLIMIT_AS; 0: no limit)
    file_size: int = 64 * MiB  # largest file a kernel may write, bytes (RLIMIT_FSIZE)
    processes: int = 256  # processes and threads of a kernel's throwaway user (RLIMIT_NPROC)
    open_files: int = 1024  # RLIMIT_NOFILE
    output_limit: int = 200_000  # characters a cell may print; past them the cell is stopped
    hide: tuple = ()  # directories no student code may see (the course's, made absolute)
    unisolated: bool = False  # run kernels without bubblewrap (trusted work only; never as root)
    disk: int = 256 * MiB  # bytes a kernel may write in all, its directory and its /tmp, /var/tmp, /dev/shm
    max_restarts: int = 8  # kernels started for one notebook, at most
    tests_in_kernel: bool = False  # --no-recheck (trusted work): the test cells run in the kernel, shown the checks

    def __post_init__(self):
        object.__setattr__(self, "hide", tuple(sorted({str(Path(p).resolve()) for p in self.hide if p})))

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def as_dict(self):
        """Plain data (a kernel spec's metadata, a command line): :meth:`from_dict` reads it back."""
        return {**dataclasses.asdict(self), "hide": list(self.hide)}

    @classmethod
    def from_dict(cls, data):
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: (tuple(v) if k == "hide" else v) for k, v in data.items() if k in names})

    @classmethod
    def from_config(cls, config, course=None):
        """The settings a traitlets ``config`` (a course's ``nbgrader_config.py``) gives, with
        ``course`` (its directory) hidden too; what it leaves out keeps its default."""
        def section(name):
            return config[name] if name in config else {}

        values = {}
        # The cell timeout: nbclient's option, as nbgrader's Execute (or its subclass) sets it.
        for name in ("NotebookClient", "ExecutePreprocessor", "Execute", "SandboxExecute"):
            if section(name).get("timeout"):
                values["cell_timeout"] = int(section(name)["timeout"])
        ours = section("SandboxExecute")
        for field, option in CONFIG_NAMES.items():
            if option in ours:
                values[field] = ours[option]
        values["hide"] = (*values.get("hide", ()), *([course] if course else ()))
        return cls(**values)

    @classmethod
    def of_course(cls, path):
        """The settings of the course holding ``path``: its nearest ``nbgrader_config.py``
        (a broken one: the defaults, the directory still hidden)."""
        for directory in Path(path).resolve().parents:
            if (directory / "nbgrader_config.py").is_file():
                try:
                    from traitlets.config.loader import PyFileConfigLoader

                    config = PyFileConfigLoader("nbgrader_config.py", path=str(directory)).load_config()
                except Exception:  # noqa: BLE001 (nbgrader too goes on with its defaults)
                    return cls(hide=(str(directory),))
                return cls.from_config(config, course=directory)
        return cls()


# Settings field -> the SandboxExecute option that sets it in a course's nbgrader_config.py.
CONFIG_NAMES = {
    "notebook_timeout": "notebook_timeout", "memory": "memory_limit", "file_size": "file_size_limit",
    "processes": "process_limit", "open_files": "open_files_limit", "output_limit": "output_limit", "hide": "hide",
    "unisolated": "unisolated", "disk": "disk_limit", "max_restarts": "max_restarts",
}

DEFAULT = Settings()
