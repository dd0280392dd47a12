"""`run`, `open_run` and `Run`: the critbench binary run from Python, and a run directory read back."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

# The tables of a run directory (docs/FORMAT.md): one file each, or a folder of a merged sharded run.
TABLES = ("outcomes", "trajectories", "evaluations")

# critbench's exit statuses that leave a run to read: finished, and stopped by its budget.
RUN_WRITTEN = (0, 3)


class CritbenchError(Exception):
    """critbench exited with a failure: `returncode`, its `stderr`, and the command run."""

    def __init__(self, command, returncode, stderr):
        self.command = command
        self.returncode = returncode
        self.stderr = stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        super().__init__("critbench exited with status %d: %s" % (returncode, last))


def binary():
    """The critbench executable: `CRITBENCH_BINARY`, else the one installed beside this module
    (the scripts folder of its environment), else `critbench` on PATH."""
    named = os.environ.get("CRITBENCH_BINARY")
    if named:
        return named
    beside = os.path.join(sysconfig.get_path("scripts"), "critbench")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("critbench")
    if found:
        return found
    raise FileNotFoundError(
        "no critbench executable: install the package (pip install critbench), put critbench on PATH "
        "or name it in CRITBENCH_BINARY"
    )


def _flags(flags):
    """Keyword arguments as critbench's flags: `jobs=2` is `--jobs 2`, `store_drafts=True` is
    `--store-drafts`, a list repeats the flag, `False` and `None` leave it out."""
    args = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                args.extend([flag, os.fspath(item) if hasattr(item, "__fspath__") else str(item)])
        else:
            args.extend([flag, os.fspath(value) if hasattr(value, "__fspath__") else str(value)])
    return args


def run(experiment, out=None, quiet=True, **flags):
    """Runs `critbench run EXPERIMENT` and returns the run it wrote (a `Run`).

    `out` is the run directory (else the experiment's `out`); every other keyword is a flag of
    `critbench run` (`jobs=2`, `limit=10`, `store_drafts=True`, `resume=True`, `overwrite=True`).
    A run stopped by its budget (exit status 3) is returned too; any other failure raises
    `CritbenchError` with critbench's message.
    """
    command = [binary(), "run", os.fspath(experiment)]
    if out is not None:
        command += ["--out", os.fspath(out)]
    command += _flags(dict(flags, quiet=quiet))
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode not in RUN_WRITTEN:
        raise CritbenchError(command, done.returncode, done.stderr)
    if done.stderr:
        sys.stderr.write(done.stderr)
    if out is None:
        # The terminal's last line names the directory: "…; wrote DIR".
        written = re.findall(r"; wrote (.+)$", done.stdout, flags=re.MULTILINE)
        if not written:
            raise CritbenchError(command, done.returncode, "critbench did not say where it wrote the run")
        out = written[-1]
    return open_run(out)


def open_run(path):
    """The run directory `path` (a run, a merged sharded run, a replay or a rescoring), read back."""
    return Run(path)


class Run:
    """A run directory: `manifest` and `summary` as dicts, and its tables as Arrow tables
    (`outcomes`, `trajectories`, `evaluations`), which pandas (`table.to_pandas()`), polars
    (`polars.from_arrow(table)`) and DuckDB (`duckdb.sql("select * from table")`) read without
    copying. Tables are read when first asked for, with pyarrow."""

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))
        manifest = os.path.join(self.path, "manifest.json")
        if not os.path.isfile(manifest):
            raise FileNotFoundError("%s is not a critbench run directory: it has no manifest.json" % self.path)
        with open(manifest, encoding="utf-8") as file:
            self.manifest = json.load(file)
        self._tables = {}

    def __repr__(self):
        return "Run(%r, %s loops)" % (self.path, self.manifest.get("loops", "?"))

    @property
    def summary(self):
        """`summary.json`: the summary rows, the comparisons and the notes."""
        with open(os.path.join(self.path, "summary.json"), encoding="utf-8") as file:
            return json.load(file)

    @property
    def outcomes(self):
        """One row per loop (`outcomes.parquet`)."""
        return self.table("outcomes")

    @property
    def trajectories(self):
        """One row per critique (`trajectories.parquet`)."""
        return self.table("trajectories")

    @property
    def evaluations(self):
        """The held-out evaluators' verdicts (`evaluations.parquet`), or None for a run without evaluators."""
        return self.table("evaluations", missing_ok=True)

    def table(self, name, missing_ok=False):
        """The table `name` as a `pyarrow.Table`: from `NAME.parquet`, or from the `NAME/` folder
        of a merged sharded run (with its `shard` column)."""
        if name not in TABLES:
            raise ValueError("a run has no table %r; its tables are %s" % (name, ", ".join(TABLES)))
        if name in self._tables:
            return self._tables[name]
        file, folder = os.path.join(self.path, name + ".parquet"), os.path.join(self.path, name)
        source = file if os.path.isfile(file) else folder if os.path.isdir(folder) else None
        if source is None:
            if missing_ok:
                return None
            raise FileNotFoundError("%s has no %s.parquet" % (self.path, name))
        try:
            import pyarrow.parquet
        except ImportError:
            raise ImportError("reading a run's tables needs pyarrow: pip install pyarrow") from None
        self._tables[name] = table = pyarrow.parquet.read_table(source)
        return table
