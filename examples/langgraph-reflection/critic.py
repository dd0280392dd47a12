"""The graph's `critique` node as a critic program (docs/critics.md): the model scores each
draft from 0 to 10 and lists its issues as JSON; an answer that is not such JSON raises, which
critbench records as that round's critic_error.

critbench hands the function `model` (its metered endpoint and a key for this one request, the
judge role) when the experiment has an [openai] table.
"""

import critbench

import graph


def critique(task, draft, round, model=None):
    state = graph.initial_state(graph.task_text(task))
    state["draft"] = draft
    verdict = graph.critique(state, {"configurable": {"llm": graph.llm_for(model)}})
    return {"score": verdict["score"], "issues": verdict["issues"]}


if __name__ == "__main__":
    critbench.serve_critic(critique, name="langgraph-critic", version="1.0", score_range=(0, 10))
