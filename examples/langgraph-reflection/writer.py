"""The graph's `generate` and `revise` nodes as critbench's writer (docs/writers.md).

critbench asks for one draft at a time: a first draft (`generate`) or a revision of a draft
(`revise`), with the draft's critique or, when the arm keeps it from the reviser, None (the
reviser then revises blind); the writer is never told the arm. Each request carries `model`,
critbench's metered endpoint and a key valid for that request alone, so that the node's model
calls are asked of the experiment's [openai] server as the generator or reviser role and counted
on the round they wrote.
"""

import critbench

import graph


def issue_text(issue):
    # An issue is a string or a typed issue, {"text": ..., "type": ...}.
    return issue if isinstance(issue, str) else issue.get("text", str(issue))


def generate(task, seed, model):
    state = graph.initial_state(graph.task_text(task))
    return graph.generate(state, {"configurable": {"llm": graph.llm_for(model)}})["draft"]


def revise(task, draft, critique, seed, model):
    state = graph.initial_state(graph.task_text(task))
    state["draft"] = draft
    if critique is not None:
        # What the critic said, as the graph's critique node puts it in the state.
        said = (critique.get("fatal_issues") or []) + (critique.get("issues") or []) + (critique.get("suggestions") or [])
        state["score"], state["issues"] = critique.get("score"), [issue_text(i) for i in said]
    return graph.revise(state, {"configurable": {"llm": graph.llm_for(model)}})["draft"]


if __name__ == "__main__":
    critbench.serve_writer(generate, revise, name="langgraph-reflection", version="1.0")
