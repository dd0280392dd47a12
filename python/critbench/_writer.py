"""`serve_writer`: a writer program (docs/PROTOCOL.md, Writer programs) for two plain functions."""

from ._protocol import PROTOCOL_VERSION, serve, takes_keyword


def serve_writer(
    generate,
    revise,
    *,
    name=None,
    version="0",
    configure=None,
    concurrency=1,
    stdin=None,
    stdout=None,
):
    """Serves `generate` and `revise` as critbench's writer until critbench closes its input.

    `generate(task, seed, model) -> str` writes a first draft; `revise(task, draft, critique, seed,
    model) -> str` rewrites `draft`. `critique` is the critique of `draft` as docs/REFERENCE.md
    has it, or `None` when the arm keeps it from the reviser; the writer is never told the arm.
    `seed` is the round's seed, the same for every arm. `model` is the run's metered model access
    when the experiment has an `[openai]` table: `{"base_url", "api_key"}` for any OpenAI client
    (the `openai` package, LangChain's `ChatOpenAI`, plain HTTP), the key valid for this request
    alone, its calls asked of the generator's model for a first draft and the reviser's for a
    revision and counted on the round (`tokens_in`, `tokens_out`); otherwise `None`. A `generate` that takes
    a `hints` keyword is given strategy memory's hints (`[{"issue_type", "text"}]`) in the arm that
    has them.

    An exception raised by either function is that round's error: its loop is recorded as failed,
    and the writer goes on with the next request. `configure(config)`, when given, receives the
    `[writer] config` table first; an exception it raises refuses the config, which stops the run.
    While a call runs, `print` writes to standard error: standard output is the protocol's.

    With `concurrency` above 1 the writer speaks the pipelined form: critbench keeps up to
    `[writer] in_flight` requests in flight, and this process runs up to `concurrency` of them at
    once on threads (the functions must then be safe to call from several threads), answering
    each as it is done. For a writer that waits on a model or a retriever, that is the fast form.
    """
    takes_hints = takes_keyword(generate, "hints")
    hello = {
        "protocol": PROTOCOL_VERSION,
        "name": name or getattr(generate, "__name__", "writer"),
        "version": str(version),
    }

    def answer(request, _line):
        model = request.get("model")
        if request["draft"] is None:
            extra = {"hints": request["hints"]} if takes_hints and request["hints"] else {}
            draft = generate(request["task"], request["seed"], model, **extra)
        else:
            draft = revise(request["task"], request["draft"], request["critique"], request["seed"], model)
        if not isinstance(draft, str):
            raise TypeError("the writer returned %s, not a str" % type(draft).__name__)
        return {"draft": draft}

    serve(hello, configure, "write", answer, stdin, stdout, concurrency=concurrency)

