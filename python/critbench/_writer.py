"""`serve_writer`: a writer program (docs/PROTOCOL.md, Writer programs) for two plain functions."""

import inspect

from ._protocol import PROTOCOL_VERSION, serve


def serve_writer(
    generate,
    revise,
    *,
    name=None,
    version="0",
    configure=None,
    stdin=None,
    stdout=None,
):
    """Serves `generate` and `revise` as critbench's writer until critbench closes its input.

    `generate(task, seed, model) -> str` writes a first draft; `revise(task, draft, critique, seed,
    model) -> str` rewrites `draft`. `critique` is the critique of `draft` as docs/REFERENCE.md
    has it, or `None` when the arm keeps it from the reviser; the writer is never told the arm.
    `seed` is the round's seed, the same for every arm. `model` is `None`. A `generate` that takes
    a `hints` keyword is given strategy memory's hints (`[{"issue_type", "text"}]`) in the arm that
    has them.

    An exception raised by either function is that round's error: its loop is recorded as failed,
    and the writer goes on with the next request. `configure(config)`, when given, receives the
    `[writer] config` table first; an exception it raises refuses the config, which stops the run.
    While a call runs, `print` writes to standard error: standard output is the protocol's.
    """
    takes_hints = _takes_keyword(generate, "hints")
    hello = {
        "protocol": PROTOCOL_VERSION,
        "name": name or getattr(generate, "__name__", "writer"),
        "version": str(version),
    }

    def answer(request):
        model = request.get("model")
        if request["draft"] is None:
            extra = {"hints": request["hints"]} if takes_hints and request["hints"] else {}
            draft = generate(request["task"], request["seed"], model, **extra)
        else:
            draft = revise(request["task"], request["draft"], request["critique"], request["seed"], model)
        if not isinstance(draft, str):
            raise TypeError("the writer returned %s, not a str" % type(draft).__name__)
        return {"draft": draft}

    serve(hello, configure, "write", answer, stdin, stdout)


def _takes_keyword(function, keyword):
    """Whether `function` accepts `keyword` as a keyword argument."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
