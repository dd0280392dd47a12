"""A LangGraph reflection loop: generate a draft, critique it, revise it until it is good enough.

    START -> generate -> critique -> route -> END            (score >= 8, or 2 revisions made)
                            ^                 \\-> revise -> critique -> ...

The nodes are plain functions of the graph's state and a RunnableConfig whose
`configurable["llm"]` is the chat model to ask, so that each can be called on its own:
writer.py serves `generate` and `revise` as critbench's writer, critic.py serves `critique` as
its critic, and critbench's policy replaces `route`.

Run it on its own against any OpenAI-compatible server:

    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=none python graph.py "Explain TCP slow start."
"""

import json
import os
import re
import sys
from typing import Optional, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

PASS_SCORE = 8.0
MAX_REVISIONS = 2


class ReflectionState(TypedDict):
    task: str
    draft: Optional[str]
    score: Optional[float]
    # The critique's issues; None when the reviser is not shown a critique (it revises blind).
    issues: Optional[list]
    revisions: int


WRITER_SYSTEM = "You are a careful writer. Answer the task directly, in a few short paragraphs."
CRITIC_SYSTEM = (
    "You are a strict reviewer. Reply with JSON only, in this shape: "
    '{"score": <a number from 0 to 10>, "issues": ["<one problem of the draft>", ...]}. '
    "Score 8 or more only when the draft has no issue worth fixing."
)


def make_llm(base_url, api_key, model="any", temperature=None):
    """The chat model the nodes ask. Retries are the server's (or critbench's) business."""
    settings = {"base_url": base_url, "api_key": api_key, "model": model, "max_retries": 0}
    if temperature is not None:
        settings["temperature"] = temperature
    return ChatOpenAI(**settings)


def llm_from_env():
    """The chat model of OPENAI_BASE_URL and OPENAI_API_KEY (and OPENAI_MODEL, if set)."""
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise RuntimeError("no model: set OPENAI_BASE_URL (and OPENAI_API_KEY) to an OpenAI-compatible server")
    return make_llm(base_url, os.environ.get("OPENAI_API_KEY") or "none", os.environ.get("OPENAI_MODEL", "any"))


def llm_for(model):
    """The chat model for a critbench request's `model`: its metered endpoint and the key of that
    one request (the endpoint ignores the model's name and the sampling settings, which the
    experiment's [openai] roles decide), or, when critbench hands none (no [openai] table), the
    server of OPENAI_BASE_URL, whose tokens critbench then does not count."""
    if model is None:
        return llm_from_env()
    return make_llm(model["base_url"], model["api_key"])


def task_text(task):
    """A dataset row's task as the graph's state holds it: the prompt, and its context if any."""
    context = task.get("context")
    return task["prompt"] if not context else "%s\n\nContext:\n%s" % (task["prompt"], context)


def initial_state(task):
    return {"task": task, "draft": None, "score": None, "issues": None, "revisions": 0}


def _llm(config):
    llm = ((config or {}).get("configurable") or {}).get("llm")
    if llm is None:
        raise RuntimeError('the node needs config={"configurable": {"llm": <a chat model>}}')
    return llm


def _text(answer):
    content = answer.content
    if isinstance(content, list):  # a list of content parts
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    text = content.strip()
    if not text:
        raise ValueError("the model answered an empty text")
    return text


def generate(state: ReflectionState, config: RunnableConfig) -> dict:
    """The first draft."""
    prompt = "Task: %s\n\nWrite your answer. Reply with the answer only." % state["task"]
    answer = _llm(config).invoke([SystemMessage(WRITER_SYSTEM), HumanMessage(prompt)])
    return {"draft": _text(answer), "revisions": 0}


def critique(state: ReflectionState, config: RunnableConfig) -> dict:
    """The draft's score (0 to 10) and issues, asked of the model as JSON."""
    prompt = "Task: %s\n\nDraft:\n%s\n\nReview the draft. Reply with the JSON only." % (state["task"], state["draft"])
    llm = _llm(config).bind(response_format={"type": "json_object"})
    verdict = parse_critique(_text(llm.invoke([SystemMessage(CRITIC_SYSTEM), HumanMessage(prompt)])))
    return {"score": verdict["score"], "issues": verdict["issues"]}


def revise(state: ReflectionState, config: RunnableConfig) -> dict:
    """The draft rewritten: to fix the critique's issues, or (issues None) as the writer sees fit."""
    head = "Task: %s\n\nDraft:\n%s\n\n" % (state["task"], state["draft"])
    if state.get("issues") is None:
        ask = "Improve the draft. Reply with the revised answer only."
    elif state["issues"]:
        score = "" if state.get("score") is None else " scored it %g/10 and" % state["score"]
        listed = "\n".join("- %s" % issue for issue in state["issues"])
        ask = "A reviewer%s found these issues:\n%s\n\nRewrite the draft to fix them. Reply with the revised answer only." % (
            score,
            listed,
        )
    else:
        score = "" if state.get("score") is None else " scored it %g/10 but" % state["score"]
        ask = "A reviewer%s named no issue. Make the draft better. Reply with the revised answer only." % score
    answer = _llm(config).invoke([SystemMessage(WRITER_SYSTEM), HumanMessage(head + ask)])
    return {"draft": _text(answer), "revisions": state.get("revisions", 0) + 1}


def route(state: ReflectionState) -> str:
    """Stop at a good score or at the revision cap, else revise."""
    if state["score"] >= PASS_SCORE or state["revisions"] >= MAX_REVISIONS:
        return END
    return "revise"


def parse_critique(text):
    """`{"score": n, "issues": [...]}` out of a model's answer (a ```json fence or prose around
    it is tolerated); raises ValueError when there is none, so that the caller records an error
    rather than a made-up score."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the critic model answered no JSON object: %r" % text[:200])
    try:
        verdict = json.loads(candidate[start : end + 1])
    except json.JSONDecodeError as error:
        raise ValueError("the critic model's JSON does not parse (%s): %r" % (error, text[:200])) from None
    if not isinstance(verdict, dict):
        raise ValueError("the critic model's JSON is not an object: %r" % text[:200])
    score = verdict.get("score")
    if isinstance(score, str):
        try:
            score = float(score)
        except ValueError:
            pass
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 10:
        raise ValueError("the critic model's score is not a number from 0 to 10: %r" % (verdict.get("score"),))
    issues = verdict.get("issues", [])
    if isinstance(issues, str):
        issues = [issues]
    if not isinstance(issues, list):
        raise ValueError("the critic model's issues are not a list: %r" % (issues,))
    issues = [issue if isinstance(issue, str) else json.dumps(issue) for issue in issues if issue]
    return {"score": float(score), "issues": issues}


def build_graph():
    graph = StateGraph(ReflectionState)
    graph.add_node("generate", generate)
    graph.add_node("critique", critique)
    graph.add_node("revise", revise)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", "critique")
    graph.add_conditional_edges("critique", route, ["revise", END])
    graph.add_edge("revise", "critique")
    return graph.compile()


def main():
    task = " ".join(sys.argv[1:]) or "Explain in a paragraph why the sky is blue."
    final = build_graph().invoke(initial_state(task), config={"configurable": {"llm": llm_from_env()}})
    print("score %g after %d revision(s)\n" % (final["score"], final["revisions"]))
    print(final["draft"])


if __name__ == "__main__":
    main()
