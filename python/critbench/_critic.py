"""`serve_critic`: the simple form of protocol 2 (docs/PROTOCOL.md) for a plain function."""

from ._protocol import PROTOCOL_VERSION, serve, takes_keyword


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

    A `critique` that takes a `model` keyword is given the run's metered model access when the
    experiment has an `[openai]` table with a judge model: `{"base_url", "api_key"}` for any OpenAI
    client, the key valid for this request alone, its calls counted on the critique's round
    (`critic_tokens_in`, `critic_tokens_out`); otherwise `None`.
    """
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

    takes_model = takes_keyword(critique, "model")

    def answer(request, line):
        extra = {"model": line.get("model")} if takes_model else {}
        critiqued = critique(request["task"], request["draft"], request["round"], **extra)
        if not isinstance(critiqued, dict):
            raise TypeError("critique() returned %s, not a dict" % type(critiqued).__name__)
        return {"critique": critiqued}

    serve(hello, configure, "request", answer, stdin, stdout)
