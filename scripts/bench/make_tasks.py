#!/usr/bin/env python3
"""Writes the benchmark's task sets: N distinct tasks as JSONL, the same bytes for the same seed.

    python3 scripts/bench/make_tasks.py scripted N OUT.jsonl [--seed S]
    python3 scripts/bench/make_tasks.py papers N OUT.jsonl [--seed S]

scripted  tasks for the `scripted` backend and critic (about 1 KB each): each takes the score
          pattern of one of the 36 scenarios of datasets/essays.jsonl (passes at round 0-3, stalls,
          ties, fatal issues, dimension-only critiques, a critic's own `passed`), shifts every
          score of the task by the same random step from -1 to +1 (so the same pattern passes,
          stalls or runs out of budget depending on the task), and gets its own prompt, drafts,
          issues, suggestions and rationales drawn from the essays' text. Ids are `bench-0000001`...
papers    paper-writing tasks for the `sim` backend and the `rubric` critic, built the way
          datasets/make_datasets.py builds papers.jsonl (field, topic, angle, motivation, open
          question, difficulty), each id distinct: `paper-0000001`...

Every choice comes from one `random.Random(seed)` stream through `random()` only (whose
algorithm Python keeps stable), so the first K tasks of an N-task file are the K-task file.
"""

import argparse
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATASETS = os.path.join(HERE, "..", "..", "datasets")


def load_essays():
    with open(os.path.join(DATASETS, "essays.jsonl"), encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


class Pools:
    """The text and score patterns the scripted tasks are drawn from."""

    def __init__(self, essays):
        self.scenarios = []
        sentences, issues, suggestions, rationales, questions = set(), set(), set(), set(), set()
        for essay in essays:
            self.scenarios.append((essay["meta"]["scenario"], len(essay["drafts"]), essay["critiques"]))
            questions.add(essay["prompt"].rsplit(": ", 1)[-1])
            for draft in essay["drafts"]:
                for part in re.split(r"(?<=[.!?])\s+", draft.replace("\n", " ")):
                    if 40 < len(part) < 160:
                        sentences.add(part)
            for critique in essay["critiques"]:
                issues.update(critique.get("issues", []))
                rationales.add(re.sub(r" Overall [0-9.]+/10.*$", "", critique.get("rationale", "")))
                for suggestion in critique.get("suggestions", []):
                    suggestions.add(json.dumps(suggestion, sort_keys=True))
        # Sorted: a set's order may differ between runs, the file must not.
        self.sentences = sorted(sentences)
        self.issues = sorted(issues)
        self.suggestions = [json.loads(s) for s in sorted(suggestions)]
        self.rationales = sorted(r for r in rationales if r)
        self.questions = sorted(questions)


def scripted_task(n, rng, pools):
    """Task number `n` (from 1): one essay scenario's score pattern, shifted, with its own text."""
    draw = rng.random

    def pick(items):
        return items[int(draw() * len(items))]

    name, n_drafts, pattern = pick(pools.scenarios)
    shift = (int(draw() * 5) - 2) * 0.5  # -1, -0.5, 0, +0.5, +1 for every score of the task
    task_id = f"bench-{n:07d}"
    drafts = [f"Draft {k + 1}: {pick(pools.sentences)}" for k in range(n_drafts)]
    critiques = []
    for base in pattern:
        critique = {}
        if "score" in base:
            critique["score"] = min(10.0, max(0.0, base["score"] + shift))
        if "dimensions" in base:
            critique["dimensions"] = {k: min(10.0, max(0.0, v + shift)) for k, v in base["dimensions"].items()}
        critique["issues"] = [pick(pools.issues)] if base.get("issues") or draw() < 0.3 else []
        critique["fatal_issues"] = base.get("fatal_issues", [])
        critique["suggestions"] = [pick(pools.suggestions)] if draw() < 0.2 else []
        if "passed" in base:
            critique["passed"] = base["passed"]
        critique["rationale"] = pick(pools.rationales)
        critiques.append(critique)
    return {
        "id": task_id,
        "prompt": f"Write a short essay answering: {pick(pools.questions)}",
        "kind": "essay",
        "drafts": drafts,
        "critiques": critiques,
        "meta": {"scenario": name, "shift": shift},
    }


def paper_task(n, rng, fields):
    """Paper task number `n` (from 1), built like make_datasets.make_papers' rows."""
    draw = rng.random

    def pick(items):
        return items[int(draw() * len(items))]

    field = pick(sorted(fields))
    spec = fields[field]
    topic, method, data, finding = pick(spec["topics"])
    variant = int(draw() * 3)
    if variant == 0:
        prompt = f"Write a short research paper on {topic}."
    else:
        prompt = f"Write a short research paper on {topic}, focusing on {pick(spec['angles'])}."

    def sentence(text):
        return text[0].upper() + text[1:] + "."

    context = " ".join(
        [
            sentence(f"research on {topic} matters because {pick(spec['motivations'])}"),
            sentence(f"existing studies apply {method} to {data}"),
            sentence(f"a recurring finding is that {finding}"),
            sentence(f"open questions remain about {pick(spec['open'])}"),
        ]
    )
    difficulty = round(0.05 + 0.9 * (draw() + draw()) / 2, 2)
    return {
        "id": f"paper-{n:07d}",
        "prompt": prompt,
        "kind": "paper",
        "context": context,
        "meta": {"difficulty": difficulty, "topic": topic, "field": field},
    }


def write_tasks(kind, count, out, seed):
    rng = random.Random(seed)
    if kind == "scripted":
        pools = Pools(load_essays())

        def make(n):
            return scripted_task(n, rng, pools)
    else:
        sys.path.insert(0, DATASETS)
        import make_datasets  # noqa: E402  (the demo's own vocabulary of fields and topics)

        fields = make_datasets.FIELDS

        def make(n):
            return paper_task(n, rng, fields)

    dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    total = 0
    with open(out, "w", encoding="utf-8", newline="\n") as sink:
        batch = []
        for n in range(1, count + 1):
            batch.append(dumps(make(n)))
            if len(batch) == 10_000:
                text = "\n".join(batch) + "\n"
                total += len(text.encode("utf-8"))
                sink.write(text)
                batch.clear()
        if batch:
            text = "\n".join(batch) + "\n"
            total += len(text.encode("utf-8"))
            sink.write(text)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["scripted", "papers"])
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.count < 1:
        parser.error("count must be at least 1")
    size = write_tasks(args.kind, args.count, args.out, args.seed)
    print(f"{args.out}: {args.count} {args.kind} tasks, {size} bytes ({size / args.count:.0f} bytes per task)")


if __name__ == "__main__":
    main()
