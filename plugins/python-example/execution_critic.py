#!/usr/bin/env python3
"""`python-execution`: a critbench critic in plain Python that runs a code draft against the
task's unit tests, speaking the JSON-lines protocol of docs/PROTOCOL.md (version 2, the simple form: one request at a
time, every answer carrying the id of the request it answers) on stdin/stdout.

A task carries its tests in `meta.tests`: Python source defining `test_*` functions that use
`assert` against the draft's functions (the draft's names are in scope). For each request the
critic writes the draft (the first ```python fenced block when it has one, else the whole text)
and a small harness into a fresh temporary directory and runs them in a separate Python process
with a time limit. Then:

- every test passes: score 10, no issues;
- some fail: one issue per failing test (`test_x fails: AssertionError: ...`, type
  `failing_test`) and a suggestion naming it; score = 10 × passed / total, rounded to 0.1;
- the draft does not compile or crashes on import, or the run exceeds the time limit, or the
  task has no tests: score 0 and a fatal issue saying so (type `broken_run`).

The hello line declares these issue types, with the hint strategy memory gives for each (INFO).

Config (every key optional): {"time_limit_s": 5}. Standard library only; Python 3.8+.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

NAME = "python-execution"
VERSION = "1.0.0"
PROTOCOL = 2
# What the critic declares about itself (the info JSON of crates/abi/include/critbench.h).
INFO = {
    "info_version": 1,
    "issue_types": [
        {"name": "failing_test", "hint": "Check the code against every case the task names before answering."},
        {"name": "broken_run", "hint": "Answer with code that compiles and runs: one fenced python block."},
    ],
}

# Runs in the child: loads the draft, runs every test_* function of the tests, prints one JSON
# object. Messages name exception types and line numbers, never temporary paths.
HARNESS = r'''
import json, sys
def describe(error):
    text = str(error).strip()
    return type(error).__name__ + (": " + text if text else "")
result = {"loaded": False, "tests": []}
scope = {"__name__": "draft"}
try:
    with open("draft.py", encoding="utf-8") as f:
        source = f.read()
    code = compile(source, "draft.py", "exec")
except SyntaxError as e:
    result["fatal"] = "the draft does not compile: SyntaxError: %s (line %s)" % (e.msg, e.lineno)
    print(json.dumps(result)); sys.exit(0)
try:
    exec(code, scope)
except BaseException as e:
    result["fatal"] = "the draft crashes when loaded: " + describe(e)
    print(json.dumps(result)); sys.exit(0)
result["loaded"] = True
with open("tests.py", encoding="utf-8") as f:
    tests_source = f.read()
exec(compile(tests_source, "tests.py", "exec"), scope)
for name in sorted(n for n in scope if n.startswith("test_") and callable(scope[n])):
    try:
        scope[name]()
        result["tests"].append({"name": name, "ok": True})
    except BaseException as e:
        result["tests"].append({"name": name, "ok": False, "error": describe(e)})
print(json.dumps(result))
'''

FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def code_of(draft):
    """The first fenced code block of the draft, or the whole draft."""
    match = FENCE.search(draft)
    return match.group(1) if match else draft


def fatal(message):
    return {"critique_version": 1, "score": 0, "issues": [],
            "fatal_issues": [{"text": message, "type": "broken_run"}], "rationale": message}


def critique(request, time_limit):
    task = request.get("task") or {}
    tests = (task.get("meta") or {}).get("tests")
    if not isinstance(tests, str) or "def test_" not in tests:
        return fatal("the task has no unit tests (meta.tests with test_* functions)")
    with tempfile.TemporaryDirectory(prefix="critbench-exec-") as work:
        for name, text in (("draft.py", code_of(request.get("draft", ""))), ("tests.py", tests),
                           ("harness.py", HARNESS)):
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(text)
        try:
            run = subprocess.run([sys.executable, "-I", "harness.py"], cwd=work, capture_output=True,
                                 text=True, timeout=time_limit, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return fatal("the draft and its tests did not finish within %g s" % time_limit)
    lines = run.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        return fatal("the draft's test run crashed (exit status %d) before reporting" % run.returncode)
    if "fatal" in result:
        return fatal(result["fatal"])
    tests = result["tests"]
    if not tests:
        return fatal("the task's tests define no test_* functions")
    failing = [t for t in tests if not t["ok"]]
    passed = len(tests) - len(failing)
    return {
        "critique_version": 1,
        "score": round(10.0 * passed / len(tests), 1),
        "dimensions": {"tests": round(10.0 * passed / len(tests), 1)},
        "issues": [{"text": "%s fails: %s" % (t["name"], t["error"]), "type": "failing_test"} for t in failing],
        "fatal_issues": [],
        "suggestions": [{"target": t["name"], "edit": "make %s pass" % t["name"]} for t in failing],
        "rationale": "%d of %d tests pass" % (passed, len(tests)),
    }


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    send({"protocol": PROTOCOL, "name": NAME, "version": VERSION, "score_range": [0, 10],
          "thread_safe": True, "policy_dependent": False, "info": INFO})
    first = sys.stdin.readline()
    if not first:
        return
    message = json.loads(first)
    config = message.get("config") or {}
    unknown = sorted(set(config) - {"time_limit_s"})
    time_limit = config.get("time_limit_s", 5)
    if unknown:
        send({"id": message["id"], "error": "unknown config key(s): %s; the only key is time_limit_s"
              % ", ".join(unknown)})
        return
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
        send({"id": message["id"], "error": "time_limit_s must be a positive number of seconds"})
        return
    send({"id": message["id"], "ok": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        try:
            answer = {"critique": critique(message["request"], time_limit)}
        except Exception as e:  # a bug here is this round's critic error, not the end of the critic
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        # The id says which request this answers: critbench never takes it for another.
        send({"id": message["id"], **answer})


if __name__ == "__main__":
    main()
