"""`run`, `open_run` and `Run`: the critbench binary run from Python, and a run directory read back."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import warnings

# The Parquet tables a run directory may hold (docs/FORMAT.md): one file each, or a folder of a
# merged sharded run. `judgments` is a critic benchmark's (`critbench judge`).
TABLES = ("outcomes", "trajectories", "evaluations", "judgments")

# The tables whose files a run's manifest records (`tables`); any other file of theirs is not the run's.
RECORDED_TABLES = ("trajectories", "outcomes", "evaluations")

# critbench's exit statuses that leave a run to read: finished, and stopped by its budget.
RUN_WRITTEN = (0, 3)


class CritbenchError(Exception):
    """critbench failed, or a run directory cannot be trusted. For a failed command: `command`,
    its `returncode` and its `stderr`; for a run directory's file: `path`, the file."""

    def __init__(self, message, *, command=None, returncode=None, stderr="", path=None):
        self.command = command
        self.returncode = returncode
        self.stderr = stderr
        self.path = path
        super().__init__(message)

    @classmethod
    def exited(cls, command, returncode, stderr):
        """critbench's `command` exited with `returncode`, saying `stderr`."""
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        message = "critbench exited with status %d: %s" % (returncode, last)
        return cls(message, command=command, returncode=returncode, stderr=stderr)


class PartialRunWarning(UserWarning):
    """The run directory opened holds a run that did not finish (interrupted, or stopped by its
    budget): its tables hold the loops of the tasks that ran, and no others."""


def binary():
    """The critbench executable: `CRITBENCH_BINARY`, else the one installed beside this module
    (the scripts folder of its environment, as `pip install .` puts it), else `critbench` on PATH."""
    named = os.environ.get("CRITBENCH_BINARY")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise FileNotFoundError("CRITBENCH_BINARY names %s, which is not an executable file" % named)
        return named
    beside = os.path.join(sysconfig.get_path("scripts"), "critbench")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("critbench")
    if found:
        return found
    raise FileNotFoundError(
        "no critbench executable: name it in CRITBENCH_BINARY (for example target/release/critbench of "
        "a cargo build), put it on PATH (cargo install --locked --path crates/cli), or install the "
        "package with the binary (pip install . from the repository)"
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
        raise CritbenchError.exited(command, done.returncode, done.stderr)
    if done.stderr:
        sys.stderr.write(done.stderr)
    if out is None:
        # The terminal's last line names the directory: "…; wrote DIR".
        written = re.findall(r"; wrote (.+)$", done.stdout, flags=re.MULTILINE)
        if not written:
            raise CritbenchError.exited(command, done.returncode, "critbench did not say where it wrote the run")
        out = written[-1]
    return open_run(out)


def open_run(path):
    """The run directory `path` (a run, a merged sharded run, a replay or a rescoring), or the
    output directory of `critbench judge`, read back. Its table files are checked against what its
    manifest recorded (see `Run`); a run that did not finish is opened with a `PartialRunWarning`."""
    return Run(path, _warn_depth=3)


class Run:
    """A run directory: `manifest` and `summary` as dicts, its Parquet tables (`outcomes`,
    `trajectories`, `evaluations`, `judgments`) and its CSV files (`csv("comparisons")`, …) as
    Arrow tables, which pandas (`table.to_pandas()`), polars (`polars.from_arrow(table)`) and
    DuckDB (`duckdb.sql("select * from table")`) read without copying. `tables` and `csvs` name
    the ones it has. Each is read when first asked for, with pyarrow.

    The table files are the run's own, as `critbench report` requires: `manifest.json` records
    each one's size and SHA-256 (docs/FORMAT.md, `tables`), and a file that does not match, a
    recorded file that is missing, or a table file the run did not record raises `CritbenchError`
    naming the file — sizes and unrecorded files when the run is opened, each table's SHA-256
    before it is first read (`verify()` checks every table at once). A manifest without `tables`
    (written by hand) has nothing to check.

    A run that did not finish (interrupted, or stopped by its `[budget]`) is opened with a
    `PartialRunWarning` carrying the message its reports open with: `finished` is then false and
    `partial` holds `status` (`interrupted` or `budget`), `tasks_run` and `message`."""

    def __init__(self, path, _warn_depth=2):
        self.path = os.path.abspath(os.fspath(path))
        if not os.path.isdir(self.path):
            raise FileNotFoundError("%s is not a critbench run directory: no such directory" % self.path)
        self._tables = {}
        self._verified = set()
        self._recorded = {}
        self.judge = None
        manifest = os.path.join(self.path, "manifest.json")
        judge = os.path.join(self.path, "judge.json")
        if not os.path.isfile(manifest) and os.path.isfile(judge):
            # A critic benchmark's directory: judge.json in the place of a manifest.
            self.judge = _read_json(judge)
            self.manifest = {}
            return
        if not os.path.isfile(manifest):
            raise FileNotFoundError("%s is not a critbench run directory: %s" % (self.path, _why_no_manifest(self.path)))
        self.manifest = _read_json(manifest)
        self._recorded = self.manifest.get("tables") or {}
        self._check_files()
        partial = self.partial
        if partial is not None:
            warnings.warn("%s: %s" % (self.path, partial["message"]), PartialRunWarning, stacklevel=_warn_depth)

    def __repr__(self):
        state = "" if self.finished else ", partial"
        return "Run(%r, %s loops%s)" % (self.path, self.manifest.get("loops", "?"), state)

    @property
    def finished(self):
        """Whether every loop of the run ran (the manifest's `status` is `finished`)."""
        return self.manifest.get("status", "finished") == "finished"

    @property
    def partial(self):
        """For a run that did not finish, what its reports open with: `{"status", "tasks_run",
        "message"}` (`summary.json`'s `partial`); `None` for a finished run."""
        if self.finished:
            return None
        summary = os.path.join(self.path, "summary.json")
        recorded = _read_json(summary).get("partial") if os.path.isfile(summary) else None
        if recorded:
            return recorded
        tasks = self.manifest.get("tasks_run", 0)
        return {
            "status": self.manifest.get("status"),
            "tasks_run": tasks,
            "message": "Partial results: the run did not finish; its tables hold the loops of %d task%s only. "
            "Run the same command with --resume to finish the run." % (tasks, "" if tasks == 1 else "s"),
        }

    @property
    def summary(self):
        """`summary.json`: the summary rows, the comparisons and the notes."""
        return _read_json(os.path.join(self.path, "summary.json"))

    @property
    def tables(self):
        """The names of the Parquet tables the directory has, of `outcomes`, `trajectories`,
        `evaluations` and `judgments`."""
        return [name for name in TABLES if _table_files(self.path, name)]

    @property
    def csvs(self):
        """The names of the CSV files the directory has (`summary`, `comparisons`, `cost_curves`, …),
        sorted: each is `csv(name)`."""
        return sorted(name[: -len(".csv")] for name in os.listdir(self.path) if name.endswith(".csv"))

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

    @property
    def judgments(self):
        """A critic benchmark's critiques of the labelled drafts (`judgments.parquet`), or None."""
        return self.table("judgments", missing_ok=True)

    def table(self, name, missing_ok=False):
        """The table `name` as a `pyarrow.Table`: from `NAME.parquet`, or from the `NAME/` folder
        of a merged sharded run (with its `shard` column), its files checked against the manifest
        first."""
        if name not in TABLES:
            raise ValueError("a run has no table %r; its tables are %s" % (name, ", ".join(TABLES)))
        if name in self._tables:
            return self._tables[name]
        files = _table_files(self.path, name)
        if not files:
            if missing_ok:
                return None
            raise FileNotFoundError("%s has no %s.parquet" % (self.path, name))
        self._verify_table(name, files)
        _pyarrow()
        import pyarrow.parquet

        single = os.path.join(self.path, name + ".parquet")
        source = single if os.path.isfile(single) else os.path.join(self.path, name)
        table = pyarrow.parquet.read_table(source)
        if name == "outcomes":
            _check_verdicts(table, source)
        self._tables[name] = table
        return table

    def csv(self, name):
        """The CSV file `NAME.csv` of the directory (`summary`, `comparisons`, `cost_curves`,
        `cost_comparisons`, `ladder`, `config_comparisons`, `power`, `evaluators`, `judge`, …) as a
        `pyarrow.Table`; its empty cells are nulls."""
        key = name + ".csv"
        if key in self._tables:
            return self._tables[key]
        file = os.path.join(self.path, key)
        if not os.path.isfile(file):
            have = ", ".join(self.csvs) or "none"
            raise FileNotFoundError("%s has no %s (its CSV files: %s)" % (self.path, key, have))
        _pyarrow()
        import pyarrow.csv

        # Every column's type is inferred from the whole file, not its first block.
        read = pyarrow.csv.ReadOptions(block_size=max(1 << 20, os.path.getsize(file) + 1))
        self._tables[key] = table = pyarrow.csv.read_csv(file, read_options=read)
        return table

    def verify(self):
        """Checks every table file of the run against the manifest (size and SHA-256), as
        `critbench report` does before it reads anything; raises `CritbenchError` naming the first
        file that does not match."""
        self._check_files()
        for name in RECORDED_TABLES:
            files = _table_files(self.path, name)
            if files:
                self._verify_table(name, files)

    def _check_files(self):
        """What can be checked without reading the tables: every recorded file is there with its
        recorded size, and every table file of the run is recorded."""
        if not self._recorded:
            return
        for relative, recorded in self._recorded.items():
            file = os.path.join(self.path, relative)
            try:
                size = os.path.getsize(file)
            except OSError as error:
                raise _mismatch(file, "cannot be read (%s)" % (error.strerror or error), recorded) from None
            if size != recorded.get("bytes"):
                raise _mismatch(file, "is %d bytes" % size, recorded)
        # A shard's manifest records its own partitions; the others are other shards'.
        if self.manifest.get("shard") is None:
            for name in RECORDED_TABLES:
                for file in _table_files(self.path, name):
                    if os.path.relpath(file, self.path) not in self._recorded:
                        raise _mismatch(file, "was not written by the run", {"bytes": 0, "sha256": "none"})

    def _verify_table(self, name, files):
        """Checks the files of table `name` against their recorded SHA-256, once."""
        if name in self._verified or not self._recorded:
            return
        self._check_files()
        for file in files:
            recorded = self._recorded.get(os.path.relpath(file, self.path))
            if recorded is None:
                continue  # a shard's manifest and another shard's partition
            size, sha256 = _stamp(file)
            if size != recorded.get("bytes"):
                raise _mismatch(file, "is %d bytes" % size, recorded)
            if sha256 != recorded.get("sha256"):
                raise _mismatch(file, "has changed (sha256 %s now)" % sha256[:12], recorded)
        self._verified.add(name)


def _check_verdicts(outcomes, source):
    """Checks each outcome row against itself, as `critbench report` does with or without
    checksums: `passed` holds exactly when `exit_reason` is `pass`, and a pass's `last_score`
    reaches its `pass_score` (a rescoring's censored rows, which have no verdict, are left out)."""
    import pyarrow.compute as compute

    names = outcomes.column_names
    if not {"passed", "exit_reason", "last_score", "pass_score"} <= set(names):
        return
    passed = compute.fill_null(outcomes["passed"], False)
    exits_on_pass = compute.equal(compute.fill_null(outcomes["exit_reason"], ""), "pass")
    reaches = compute.greater_equal(outcomes["last_score"], outcomes["pass_score"])
    wrong = compute.or_(
        compute.not_equal(passed, exits_on_pass), compute.and_(passed, compute.invert(compute.fill_null(reaches, False)))
    )
    if "censored" in names:
        wrong = compute.and_(wrong, compute.invert(compute.fill_null(outcomes["censored"], False)))
    if not compute.any(wrong).as_py():
        return
    row = compute.index(wrong, True).as_py()
    found = {key: outcomes[key][row].as_py() for key in ("task_id", "passed", "exit_reason", "last_score", "pass_score")}
    if found["passed"] != (found["exit_reason"] == "pass"):
        problem = "`passed` is %s but its `exit_reason` is `%s`: a loop passes exactly when it exits on a pass" % (
            "true" if found["passed"] else "false",
            found["exit_reason"],
        )
    else:
        problem = "`passed` is true but its last score %s is below its `pass_score` %s" % (
            found["last_score"],
            found["pass_score"],
        )
    raise CritbenchError(
        "%s, row %d (task %s): %s\n  hint: this is not the table the run wrote (a row was edited); restore the file, "
        "or write it again with the command that wrote it and --overwrite" % (source, row, found["task_id"], problem),
        path=source,
    )


def _table_files(run_dir, name):
    """The files of table `name` in `run_dir`, as critbench finds them: `NAME.parquet`, else every
    `.parquet` file of each `NAME/shard=I/` folder, by shard index, then by name."""
    single = os.path.join(run_dir, name + ".parquet")
    if os.path.isfile(single):
        return [single]
    folder = os.path.join(run_dir, name)
    partitions = []
    if os.path.isdir(folder):
        for entry in os.listdir(folder):
            index = entry[len("shard=") :] if entry.startswith("shard=") else ""
            if index.isdigit():
                partitions.append((int(index), os.path.join(folder, entry)))
    files = []
    for _, partition in sorted(partitions):
        if os.path.isdir(partition):
            files.extend(
                os.path.join(partition, part)
                for part in sorted(os.listdir(partition))
                if part.endswith(".parquet") and os.path.isfile(os.path.join(partition, part))
            )
    return files


def _stamp(path):
    """The size and SHA-256 (hex) of the file at `path`."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def _mismatch(path, problem, recorded):
    """The error for a table file that is not what the run wrote; worded as `critbench report`'s."""
    message = (
        "%s %s: it is not the file the run wrote (manifest.json recorded %s bytes, sha256 %s), so nothing "
        "read from it can be trusted\n  hint: restore the file, or run the experiment again with --overwrite"
        % (path, problem, recorded.get("bytes"), str(recorded.get("sha256", ""))[:12])
    )
    return CritbenchError(message, path=path)


def _read_json(path):
    """The JSON file at `path`; one that does not parse raises `CritbenchError` naming it."""
    with open(path, encoding="utf-8") as file:
        try:
            return json.load(file)
        except ValueError as error:
            raise CritbenchError("%s is not valid JSON: %s" % (path, error), path=path) from None


def _why_no_manifest(path):
    """Why the directory at `path`, which has no manifest.json, is no run to read (yet)."""
    if os.path.isdir(os.path.join(path, "shards")) or any(
        os.path.isdir(os.path.join(path, table)) for table in RECORDED_TABLES[:2]
    ):
        return "it is a sharded run that is not merged yet; run `critbench merge %s` once every shard has finished" % path
    if os.path.isdir(os.path.join(path, "in-progress")):
        return (
            "its run is being written, or was stopped before it wrote manifest.json; finish it with "
            "`critbench run EXPERIMENT --out %s --resume`" % path
        )
    return "it has no manifest.json"


def _pyarrow():
    """pyarrow, or an ImportError saying how to get it."""
    try:
        import pyarrow
    except ImportError:
        raise ImportError("reading a run's tables needs pyarrow: pip install pyarrow") from None
    return pyarrow
