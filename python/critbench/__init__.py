"""critbench from Python: serve a critic or a writer over critbench's program protocol, run an
experiment with the critbench binary (`binary()`: `CRITBENCH_BINARY`, the one installed beside this
module, or `critbench` on PATH), and read a run's tables, CSV files and summary, checked against
its manifest.

    import critbench

    def critique(task, draft, round):
        words = len(draft.split())
        return {"score": min(10, words / 15), "issues": [] if words >= 100 else ["write at least 100 words"]}

    if __name__ == "__main__":
        critbench.serve_critic(critique)

Pure Python with no required dependency; reading a run's tables needs `pyarrow`.
"""

from ._critic import serve_critic
from ._runs import CritbenchError, PartialRunWarning, Run, binary, open_run, run
from ._writer import serve_writer

__all__ = [
    "CritbenchError",
    "PartialRunWarning",
    "Run",
    "binary",
    "open_run",
    "run",
    "serve_critic",
    "serve_writer",
]
