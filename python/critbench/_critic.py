"""`serve_critic`: the simple form of protocol 2 (docs/PROTOCOL.md) for a plain function."""

import json
import sys

PROTOCOL_VERSION = 2


def serve_critic(
    critique,
    *,
    name=None,
    version="0",
    score_range=(0, 10),
    thread_safe=True,
    configure=None,
    issue_types=None,
    stdin=None,
    stdout=None,
):
    """Serves `critique(task, draft, round) -> dict` as a critic until critbench closes its input.

    The dict is a critique as docs/REFERENCE.md has it (`score`, `dimensions`, `issues`,
    `fatal_issues`, `suggestions`, `passed`, `rationale`). An exception raised by `critique` is
    that request's error (`critic_error` in the run), and the critic goes on with the next one.

    `configure(config)`, when given, receives the critic's `config` table before any request; an
    exception it raises refuses the config, which stops the run. `issue_types` maps each issue type
    the critic's typed issues carry to the hint strategy memory gives for it. While a call runs,
    `print` writes to standard error: standard output is the protocol's.
    """
    out = stdout if stdout is not None else sys.stdout
    source = stdin if stdin is not None else sys.stdin
    low, high = score_range
    hello = {
        "protocol": PROTOCOL_VERSION,
        "name": name or getattr(critique, "__name__", "critic"),
        "version": str(version),
        "score_range": [low, high],
        "thread_safe": bool(thread_safe),
    }
    if issue_types:
        hello["info"] = {
            "info_version": 1,
            "issue_types": [{"name": key, "hint": hint} for key, hint in issue_types.items()],
        }

    def send(message):
        out.write(json.dumps(message) + "\n")
        out.flush()

    send(hello)
    # What the functions print must not reach the protocol's stream.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        for line in source:
            if not line.strip():
                continue
            message = json.loads(line)
            ident = message["id"]
            if "config" in message:
                try:
                    if configure is not None:
                        configure(message["config"])
                except Exception as error:  # the critic refuses its config
                    send({"id": ident, "error": _describe(error)})
                    continue
                send({"id": ident, "ok": True})
                continue
            request = message["request"]
            try:
                answer = critique(request["task"], request["draft"], request["round"])
                if not isinstance(answer, dict):
                    raise TypeError("critique() returned %s, not a dict" % type(answer).__name__)
                line = json.dumps({"id": ident, "critique": answer})
            except Exception as error:
                line = json.dumps({"id": ident, "error": _describe(error)})
            out.write(line + "\n")
            out.flush()
    finally:
        sys.stdout = real_stdout


def _describe(error):
    """An exception as one line of a critic error."""
    text = str(error).strip().replace("\n", " ")
    return "%s: %s" % (type(error).__name__, text) if text else type(error).__name__
