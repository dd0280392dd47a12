#!/usr/bin/env python3
"""Writes datasets/judge.jsonl: labeled drafts for benchmarking critics (`critbench judge`).

Run from anywhere: `python3 datasets/make_judge.py`. Standard library only. The output is
committed; rerunning the script must reproduce it byte for byte, so every choice comes from a hash
of a fixed key (the helpers of make_datasets.py, never `random`). The topics, questions and
evidence passages are those of make_datasets.py; the tasks and drafts here are new.

Each row is a task with several `drafts` and one gold label per draft (`labels[i]` goes with
`drafts[i]`): `{"pass": bool, "score": 0-10, "fatal": bool, "flaw": "..."}`. The labels come
from how the script built each draft, never from running a critic:

paper (kind "paper", 40 tasks x 4 drafts). A paper passes when it has the five sections
Introduction, Related Work, Method, Results and Conclusion, each at least two sentences of
on-topic text, supports its results with at least one figure reference and citations, and says
something (no boilerplate padding).
  none            complete and developed, two figures, four citations        pass   score 9
  concise         complete but brief: short sections, one figure, two citations pass score 8
  no_evidence     complete and developed, but no figure and no citation      fail   score 5
  thin_sections   every section one short sentence                           fail   score 4
  padded          every section the same boilerplate sentence repeated, with
                  figure and citation marks sprinkled in                     fail   score 2
  missing_method  complete except that there is no Method section            fail   fatal  score 3
  no_sections     the text of a good paper with every heading removed        fail   fatal  score 2
  empty           an empty draft                                             fail   fatal  score 0

rag (kind "rag", 60 tasks x 4 drafts). Each task is a question with an evidence pool (id -> text);
in 8 tasks no passage answers the question. An answer passes when it answers the question from
the pool and cites the passage it uses by an id in the pool -- or, when the pool cannot answer,
says so without citing anything.
  none                the answering passage, cited by its id (JSON or prose)  pass   score 9
  abstention          "the evidence does not answer this" on an unanswerable
                      task, citing nothing                                   pass   score 8
  missing_citation    the right answer, citing nothing                       fail   score 5
  off_topic_citation  the right answer, citing a passage about something else fail  score 3
  vague               a non-answer, citing the right passage                 fail   score 2
  wrong_answer        a passage about something else, given as the answer    fail   score 2
  fabricated_citation the right answer citing an id that is not in the pool
                      (alone, beside the right id, or in prose)              fail   fatal  score 1
  empty_answer        an empty answer                                        fail   fatal  score 0
  invalid_json        a JSON draft cut off mid-way                           fail   fatal  score 0

Critics never see `labels` (critbench leaves them out of the request), and nothing about the
label is in `meta`, which critics do see.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_datasets import FACTS, FIELDS, addresses, below, pick, sentence, shuffled

PAPER_TASKS = 40
RAG_TASKS = 60
UNANSWERABLE_TASKS = 8
DRAFTS_PER_TASK = 4

# Gold label of each kind of draft: (pass, score, fatal).
PAPER_LABELS = {
    "none": (True, 9, False),
    "concise": (True, 8, False),
    "no_evidence": (False, 5, False),
    "thin_sections": (False, 4, False),
    "padded": (False, 2, False),
    "missing_method": (False, 3, True),
    "no_sections": (False, 2, True),
    "empty": (False, 0, True),
}
RAG_LABELS = {
    "none": (True, 9, False),
    "abstention": (True, 8, False),
    "missing_citation": (False, 5, False),
    "off_topic_citation": (False, 3, False),
    "vague": (False, 2, False),
    "wrong_answer": (False, 2, False),
    "fabricated_citation": (False, 1, True),
    "empty_answer": (False, 0, True),
    "invalid_json": (False, 0, True),
}

# The order drafts are dealt to tasks in: task k gets slots 4k..4k+3 (mod the list), so every
# kind of draft appears equally often and each task mixes good and bad drafts.
PAPER_SLOTS = ["none", "thin_sections", "missing_method", "padded", "concise", "no_evidence", "no_sections", "empty"]
# Fabricated citations come in three variants (only a fake id, a fake id beside the right one,
# prose citing a fake id), so they get three slots; `none` alternates JSON and prose.
RAG_SLOTS = [
    "none",
    "fabricated_citation",
    "missing_citation",
    "empty_answer",
    "none",
    "off_topic_citation",
    "fabricated_citation",
    "vague",
    "none",
    "wrong_answer",
    "fabricated_citation",
    "invalid_json",
]
UNANSWERABLE_SLOTS = ["abstention", "fabricated_citation", "wrong_answer", "vague"]


def label(table, flaw):
    passed, score, fatal = table[flaw]
    return {"pass": passed, "score": score, "fatal": fatal, "flaw": flaw}


# ---------------------------------------------------------------------------------------------
# Papers


def paper_sections(topic, method, data, finding, motivation, question, figures=True, citations=True):
    """The five sections of a complete, developed paper, as (heading, body) pairs."""
    cite = (lambda n: f" [{n}]") if citations else (lambda n: "")
    introduction = " ".join(
        [
            sentence(f"research on {topic} matters because {motivation}"),
            f"This paper asks what the published evidence on {topic} shows and where it falls short.",
            "Earlier accounts disagree about the size of the effects, so we set out the evidence step by step"
            + cite(1)
            + ".",
            ("Our contribution is a single comparison of the published results under one shared protocol,"
             " written for readers outside the specialty."),
        ]
    )
    related = " ".join(
        [
            sentence(f"earlier studies of {topic} applied {method} to {data}")[:-1] + cite(2) + ".",
            sentence(f"a recurring finding is that {finding}")[:-1] + cite(3) + ".",
            ("Reviews have called for larger samples and shared protocols, because single studies rarely agree"
             " on the size of the effect."),
            "We build on these studies but compare them under one protocol.",
        ]
    )
    method_body = " ".join(
        [
            sentence(f"we collected published studies of {topic} that applied {method} to {data}"),
            "Each study was coded for its sample size, setting, design and main outcome.",
            ("We compared the reported effects with a random-effects model and checked how much each single"
             " study moved the pooled estimate."),
            "Two coders resolved disagreements by discussion.",
        ]
    )
    if figures:
        results = " ".join(
            [
                sentence(f"across the studies, {finding}"),
                "Figure 1 shows the estimated effect for each study with its uncertainty.",
                "The pooled estimate was stable when any single study was dropped" + cite(4) + ".",
                ("Figure 2 compares the effects across designs: larger and better controlled studies found smaller"
                 " effects, which suggests that some publication bias remains."),
            ]
        )
    else:
        results = " ".join(
            [
                sentence(f"across the studies, {finding}"),
                "The estimated effects varied from study to study, each with its own uncertainty.",
                "The pooled estimate was stable when any single study was dropped.",
                ("Larger and better controlled studies found smaller effects, which suggests that some"
                 " publication bias remains."),
            ]
        )
    conclusion = " ".join(
        [
            sentence(f"the evidence on {topic} is encouraging but incomplete"),
            sentence(f"open questions remain about {question}"),
            "Future studies should share their protocols and report every outcome they measure.",
        ]
    )
    return [
        ("Introduction", introduction),
        ("Related Work", related),
        ("Method", method_body),
        ("Results", results),
        ("Conclusion", conclusion),
    ]


def concise_sections(topic, method, data, finding, question):
    return [
        (
            "Introduction",
            (f"This paper reviews what is known about {topic}. "
             f"We compare the main published results in one place for readers new to the field."),
        ),
        (
            "Related Work",
            (f"Earlier studies applied {method} to {data} [1]. They report that {finding}, "
             "although samples were small."),
        ),
        (
            "Method",
            (f"We collected published studies of {topic} and coded each one for its design and main outcome. "
             "We then compared the reported effects side by side."),
        ),
        (
            "Results",
            (f"Across the studies, {finding}. Figure 1 shows the effect reported by each study, "
             "and the better controlled studies found smaller effects [2]."),
        ),
        (
            "Conclusion",
            (f"The evidence on {topic} is promising but incomplete. "
             f"Open questions remain about {question}."),
        ),
    ]


def thin_sections(topic, finding):
    return [
        ("Introduction", f"This paper is about {topic}."),
        ("Related Work", "Some studies exist [1]."),
        ("Method", "We looked at studies."),
        ("Results", sentence(finding)),
        ("Conclusion", "More work is needed."),
    ]


def padded_sections(topic):
    filler = (
        f"It is important to note that {topic} is an important topic that matters in many ways, "
        "as many studies show."
    )
    marks = "Figure 1 and Figure 2 are relevant here [1] [2] [3] [4]."
    names = ["Introduction", "Related Work", "Method", "Results", "Conclusion"]
    return [(name, " ".join([filler] * 3 + ([marks] if name == "Results" else []))) for name in names]


def render(title, originality, sections, headings=True):
    parts = [f"# {title}", ""]
    if originality:
        parts += [f"Originality: {originality}", ""]
    for heading, body in sections:
        if headings:
            parts += [f"## {heading}", ""]
        parts += [body, ""]
    return "\n".join(parts).rstrip() + "\n"


def paper_draft(flaw, spec):
    topic, method, data, finding, motivation, question = spec
    title = topic[0].upper() + topic[1:] + ": A Short Review"
    full = paper_sections(topic, method, data, finding, motivation, question)
    if flaw == "none":
        return render(title, "high", full)
    if flaw == "concise":
        return render(title, "medium", concise_sections(topic, method, data, finding, question))
    if flaw == "no_evidence":
        bare = paper_sections(topic, method, data, finding, motivation, question, figures=False, citations=False)
        return render(title, "high", bare)
    if flaw == "thin_sections":
        return render(title, "low", thin_sections(topic, finding))
    if flaw == "padded":
        return render(title, "high", padded_sections(topic))
    if flaw == "missing_method":
        return render(title, "high", [s for s in full if s[0] != "Method"])
    if flaw == "no_sections":
        return render(title, "high", full, headings=False)
    if flaw == "empty":
        return ""
    raise ValueError(flaw)


def make_papers():
    specs = []
    for field in FIELDS:
        for topic, method, data, finding in FIELDS[field]["topics"]:
            specs.append((field, topic, method, data, finding))
    chosen = shuffled(specs, "judge-paper-topics")[:PAPER_TASKS]
    rows = []
    for k, (field, topic, method, data, finding) in enumerate(chosen):
        task_id = f"judge-paper-{k + 1:03d}"
        motivation = pick(FIELDS[field]["motivations"], task_id, "motivation")
        question = pick(FIELDS[field]["open"], task_id, "open")
        flaws = [PAPER_SLOTS[(DRAFTS_PER_TASK * k + j) % len(PAPER_SLOTS)] for j in range(DRAFTS_PER_TASK)]
        # Shuffle within the task so the good draft is not always first.
        flaws = shuffled(flaws, task_id, "draft-order")
        spec = (topic, method, data, finding, motivation, question)
        context = " ".join(
            [
                sentence(f"research on {topic} matters because {motivation}"),
                sentence(f"existing studies apply {method} to {data}"),
                sentence(f"a recurring finding is that {finding}"),
                sentence(f"open questions remain about {question}"),
            ]
        )
        rows.append(
            {
                "id": task_id,
                "prompt": f"Write a short research paper on {topic}.",
                "kind": "paper",
                "context": context,
                "drafts": [paper_draft(flaw, spec) for flaw in flaws],
                "labels": [label(PAPER_LABELS, flaw) for flaw in flaws],
                "meta": {"topic": topic, "field": field},
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# RAG answers


def json_draft(answer, ids):
    return json.dumps({"answer": answer, "evidence_ids": ids}, ensure_ascii=False)


def prose_draft(answer, ids):
    cited = ", ".join(ids)
    return f"{answer.rstrip('.')} [{cited}]."


def fake_id(evidence, *key):
    """An id shaped like the pool's ids that is not in the pool."""
    return f"d{len(evidence) + 1 + below(5, *key)}"


def rag_draft(flaw, variant, question, evidence, answer_id, distractor_id, subject):
    answer = evidence.get(answer_id) if answer_id else None
    distractor = evidence[distractor_id]
    if flaw == "none":
        return json_draft(answer, [answer_id]) if variant % 2 == 0 else prose_draft(answer, [answer_id])
    if flaw == "abstention":
        return json_draft(
            f"The evidence does not answer this question: none of the passages is about {subject}.", []
        )
    if flaw == "missing_citation":
        return json_draft(answer, [])
    if flaw == "off_topic_citation":
        return json_draft(answer, [distractor_id])
    if flaw == "vague":
        return json_draft(
            "It depends on several factors, and the short answer is that it varies from case to case.",
            [answer_id or distractor_id],
        )
    if flaw == "wrong_answer":
        return json_draft(distractor, [distractor_id])
    if flaw == "fabricated_citation":
        fake = fake_id(evidence, question, "fake", variant)
        # The right fact, so only the citation is wrong; on unanswerable tasks, the fact from the
        # subject's list that the pool lacks.
        text = answer or true_fact(question)
        if variant % 3 == 0:
            return json_draft(text, [fake])
        if variant % 3 == 1 and answer_id:
            return json_draft(text, [answer_id, fake])
        return prose_draft(text, [fake])
    if flaw == "empty_answer":
        return json_draft("", [answer_id or distractor_id])
    if flaw == "invalid_json":
        whole = json_draft(answer, [answer_id])
        return whole[: len(whole) // 2]
    raise ValueError(flaw)


def true_fact(question):
    for facts in FACTS.values():
        for q, passage in facts:
            if q == question:
                return passage
    raise KeyError(question)


def make_rag():
    facts = [(subject, q, e) for subject in sorted(FACTS) for (q, e) in FACTS[subject]]
    chosen = shuffled(facts, "judge-rag-facts")[:RAG_TASKS]
    rows = []
    answerable_seen = 0
    fabricated_seen = 0
    none_seen = 0
    for k, (subject, question, passage) in enumerate(chosen):
        task_id = f"judge-rag-{k + 1:03d}"
        answerable = k >= UNANSWERABLE_TASKS
        distractors = [e for (s, q, e) in facts if s != subject and not addresses(question, e)]
        distractors = shuffled(distractors, task_id, "distractors")[: 2 + below(3, task_id, "size")]
        passages = ([passage] if answerable else []) + distractors
        passages = shuffled(passages, task_id, "pool")
        evidence = {f"d{i + 1}": text for i, text in enumerate(passages)}
        answer_id = next((key for key, text in evidence.items() if text == passage), None)
        distractor_id = next(key for key, text in evidence.items() if text != passage)
        if answerable:
            flaws = [
                RAG_SLOTS[(DRAFTS_PER_TASK * answerable_seen + j) % len(RAG_SLOTS)] for j in range(DRAFTS_PER_TASK)
            ]
            answerable_seen += 1
        else:
            flaws = list(UNANSWERABLE_SLOTS)
        flaws = shuffled(flaws, task_id, "draft-order")
        drafts = []
        for flaw in flaws:
            # Variants count per kind across the whole dataset, so JSON/prose and the three kinds
            # of fabricated citation alternate evenly.
            if flaw == "fabricated_citation":
                variant, fabricated_seen = fabricated_seen, fabricated_seen + 1
            elif flaw == "none":
                variant, none_seen = none_seen, none_seen + 1
            else:
                variant = 0
            drafts.append(rag_draft(flaw, variant, question, evidence, answer_id, distractor_id, subject))
        rows.append(
            {
                "id": task_id,
                "prompt": question,
                "kind": "rag",
                "evidence": evidence,
                "drafts": drafts,
                "labels": [label(RAG_LABELS, flaw) for flaw in flaws],
                "meta": {"subject": subject},
            }
        )
    return rows


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rows = make_papers() + make_rag()
    path = os.path.join(here, "judge.jsonl")
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    counts = {}
    for row in rows:
        for gold in row["labels"]:
            key = (row["kind"], gold["flaw"])
            counts[key] = counts.get(key, 0) + 1
    drafts = sum(counts.values())
    print(f"judge.jsonl: {len(rows)} tasks, {drafts} labeled drafts")
    for (kind, flaw), n in sorted(counts.items()):
        print(f"  {kind:5} {flaw:20} {n}")


if __name__ == "__main__":
    main()
