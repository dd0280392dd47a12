#!/usr/bin/env python3
"""Writes datasets/essays.jsonl: essay tasks with scripted drafts and critiques for exact replay.

Every task scripts its whole loop: round k uses drafts[min(k, len-1)] and critiques[min(k, len-1)]
(docs/REFERENCE.md, Dataset), so a run with backend = "scripted" and the `scripted` critic is fully determined and
each task reaches a known exit. Together the tasks cover every branch of the decision rule
(docs/REFERENCE.md, The decision rule): pass at each round, stall, a tie that is not a stall, fatal issues that are fixed or
that run out the budget, slow rises that end at the budget (or at a plateau when plateau_eps > 0),
critiques given only as dimensions, and a critic whose own `passed` disagrees with the host.

`meta.expect` / `meta.expect_round` give the exit and the stopping round under the default policy;
`meta.with_plateau_eps` and `meta.with_dim_target` give them under one changed knob. The script
checks every expectation against its own copy of the rule before writing, so a scenario that does
not do what it says fails here rather than in a test.

Usage: python3 datasets/make_essays.py [--check]   (--check: fail if the file is out of date)
Standard library only; the output is byte-for-byte deterministic.
"""

import json
import sys
from pathlib import Path

OUT = Path(__file__).with_name("essays.jsonl")

DEFAULT_POLICY = {"pass_score": 8.0, "max_revisions": 3, "stall": True, "plateau_eps": 0.0, "dim_target": None}
PLATEAU_EPS = 0.5
DIM_TARGET = 8.0

# ---- essay material ------------------------------------------------------------------------------
# Each topic: the question, a vague opening, a thesis, two supporting points, a concrete example,
# an objection with its answer, and a conclusion. Drafts are assembled from these pieces.

TOPICS = [
    {
        "key": "transit",
        "question": "Should cities make public transport free at the point of use?",
        "weak": "Public transport is something that many people in cities use every day.",
        "thesis": "Cities should make buses and trams free, because fares keep out the people who most need to travel and cost more to collect than they seem.",
        "points": [
            "A free network lets a worker on a low wage reach jobs across the city without weighing every trip against the price of food.",
            "It also removes ticket machines, inspectors and slow boarding, so buses keep to their timetables.",
        ],
        "evidence": "Tallinn, which made its buses and trams free for residents in 2013, saw more people ride them, although some of the new riders had previously walked or cycled.",
        "counter": "Critics say free travel crowds out investment in better service; the answer is to fund both from congestion charges rather than treating fares as the only source.",
        "conclusion": "Free transport is not a luxury but a way to make the whole city reachable to everyone who lives in it.",
    },
    {
        "key": "school-start",
        "question": "Should secondary schools start later in the morning?",
        "weak": "School start times are a topic that a lot of people have opinions about.",
        "thesis": "Secondary schools should start no earlier than half past eight, because teenagers' sleep is biologically shifted later and early starts cut it short.",
        "points": [
            "Adolescents fall asleep later than children and adults, so a 7:30 bell forces them to learn during their biological night.",
            "Chronic short sleep is linked to poorer attention, mood and road safety, which no amount of discipline fixes.",
        ],
        "evidence": "In 2014 the American Academy of Pediatrics recommended that middle and high schools start no earlier than 8:30 a.m. for exactly these reasons.",
        "counter": "Buses and after-school jobs are real constraints, but districts that staggered their bus routes have shown the timetable can adapt to students rather than the reverse.",
        "conclusion": "A later bell is one of the cheapest changes a school can make for learning and health.",
    },
    {
        "key": "four-day-week",
        "question": "Should employers move to a four-day working week?",
        "weak": "The working week has been the same for a very long time.",
        "thesis": "Employers should trial a four-day week at full pay, because many office jobs produce as much in four focused days as in five diluted ones.",
        "points": [
            "Shorter weeks push teams to cut needless meetings and to protect time for concentrated work.",
            "Staff who rest more take fewer sick days and are less likely to leave, which saves the cost of hiring.",
        ],
        "evidence": "In the large British trial of 2022, most of the participating companies chose to keep the four-day week after the pilot ended.",
        "counter": "It fits hospitals and shops less easily than offices, so the case is for trials where the work allows it, not for a single law for every sector.",
        "conclusion": "Where output matters more than hours, four days is worth testing seriously.",
    },
    {
        "key": "homework",
        "question": "Should primary schools limit homework?",
        "weak": "Homework is a normal part of school life for most children.",
        "thesis": "Primary schools should keep homework light, because at that age it adds little to learning and takes time from reading, play and sleep.",
        "points": [
            "Young children consolidate learning through reading for pleasure and play more than through worksheets.",
            "Heavy homework also widens gaps, since some children have a quiet table and a helping parent and others do not.",
        ],
        "evidence": "Reviews of the research, such as Harris Cooper's, find only a weak link between homework and achievement in primary school and a stronger one later on.",
        "counter": "Parents sometimes value homework as a window into the classroom; a weekly reading log gives them that window without the burden.",
        "conclusion": "Less homework in primary school is not lower ambition but a better use of children's time.",
    },
    {
        "key": "phones",
        "question": "Should phones be banned during the school day?",
        "weak": "Phones are everywhere now, including in schools.",
        "thesis": "Schools should require phones to stay in lockers during the day, because a device in the pocket competes with every lesson.",
        "points": [
            "Even a silent phone draws attention, and each notification breaks the concentration a lesson needs.",
            "Break times without screens give pupils a chance to talk and play, which matters for friendships.",
        ],
        "evidence": "Several countries, including France in 2018 and the Netherlands in 2024, have restricted phones in classrooms after teachers reported constant distraction.",
        "counter": "Some families want children reachable in an emergency, but the school office has always been that point of contact.",
        "conclusion": "A phone-free day protects attention, which is the one resource every lesson depends on.",
    },
    {
        "key": "bag-charge",
        "question": "Should shops charge for single-use plastic bags?",
        "weak": "Plastic bags are a common sight in shops.",
        "thesis": "Shops should charge for every single-use bag, because a small price changes a habit that costs the environment far more.",
        "points": [
            "A charge turns an invisible choice into a visible one at the till, which is where the habit is formed.",
            "Fewer bags means less litter in rivers and seas, where plastic breaks down slowly into fragments.",
        ],
        "evidence": "After England introduced a 5p charge in 2015, the number of single-use bags sold by large supermarkets fell sharply within a few years.",
        "counter": "Some argue the charge burdens poorer shoppers, but a reusable bag is bought once and the charge is easily avoided.",
        "conclusion": "A few pence at the till is a small, proven nudge with a large effect.",
    },
    {
        "key": "vote-16",
        "question": "Should the voting age be lowered to sixteen?",
        "weak": "Voting is important in a democracy.",
        "thesis": "The voting age should be sixteen, because people that age already work, pay tax and live with the results of today's decisions longest.",
        "points": [
            "A first vote cast while still at school, with teachers and family to discuss it, builds a lasting habit of voting.",
            "Sixteen-year-olds are trusted with other responsibilities, so denying them a say is hard to justify.",
        ],
        "evidence": "Scotland has let 16- and 17-year-olds vote in its own elections since 2015, and Austria has done so nationally since 2007.",
        "counter": "Critics doubt their maturity, yet studies of these young voters find their choices no less considered than those of voters a few years older.",
        "conclusion": "Lowering the age is a modest change that widens democracy where it matters most: at the start.",
    },
    {
        "key": "remote-work",
        "question": "Should office workers be allowed to work from home most of the week?",
        "weak": "Working from home became much more common recently.",
        "thesis": "Office workers should be allowed to work from home most days, because focused work rarely needs an office and commuting wastes hours.",
        "points": [
            "Hours saved on commuting go back into rest, family and often into the work itself.",
            "Hiring without a commute radius lets firms find skills far from expensive city centres.",
        ],
        "evidence": "Surveys of employers since 2020 suggest that output held up for many office roles when staff worked remotely, while commuting time fell to zero.",
        "counter": "Newcomers learn by watching colleagues, so a good policy keeps one or two shared office days for mentoring.",
        "conclusion": "Flexibility with a few anchor days gives firms the benefits of both.",
    },
    {
        "key": "libraries",
        "question": "Do public libraries still matter in the digital age?",
        "weak": "Libraries have been around for centuries.",
        "thesis": "Public libraries matter more, not less, online, because they are the last free indoor space where anyone can read, learn and get help.",
        "points": [
            "Many people still lack a reliable computer or connection at home, and libraries close that gap.",
            "Librarians help people fill in benefit forms, find reliable sources and learn new skills.",
        ],
        "evidence": "During job searches and tax season, public computers in libraries are often fully booked, a sign of demand that a website alone cannot meet.",
        "counter": "Some say e-books make buildings unnecessary, but a licence to read a file does not give anyone a warm room or a person to ask.",
        "conclusion": "A library is infrastructure for a fair digital society.",
    },
    {
        "key": "car-free",
        "question": "Should city centres be closed to private cars?",
        "weak": "Cars are a big part of modern city life.",
        "thesis": "City centres should be car-free, because streets given back to people are safer, quieter and better for trade.",
        "points": [
            "Without through traffic, pedestrians and cyclists can move freely and children can cross streets safely.",
            "Cleaner air and less noise make the centre a place people want to stay in rather than pass through.",
        ],
        "evidence": "Pontevedra in Spain closed most of its centre to cars in the late 1990s and has since become a well-known example of a walkable town.",
        "counter": "Shopkeepers fear losing customers, but people on foot visit more often and linger longer than drivers.",
        "conclusion": "A centre built for people rather than cars is a centre that thrives.",
    },
    {
        "key": "testing",
        "question": "Should schools rely less on standardised tests?",
        "weak": "Tests are used in schools all over the world.",
        "thesis": "Schools should rely less on standardised tests, because teaching to the test narrows what pupils learn.",
        "points": [
            "When a single score decides a school's reputation, subjects that are not tested lose time.",
            "A one-day exam measures performance under pressure as much as understanding.",
        ],
        "evidence": "Teachers in high-stakes systems routinely report spending weeks on exam technique instead of new material.",
        "counter": "Tests do give comparable data; sampling a few pupils each year would keep that data without testing everyone.",
        "conclusion": "Fewer, lighter tests would let schools measure learning without distorting it.",
    },
    {
        "key": "languages",
        "question": "Should every pupil learn a second language from primary school?",
        "weak": "Languages are interesting to learn.",
        "thesis": "Every pupil should start a second language in primary school, because early, steady exposure builds confidence that later crash courses cannot.",
        "points": [
            "Young learners imitate sounds easily and are less afraid of making mistakes aloud.",
            "Learning how another language works also sharpens understanding of one's own grammar.",
        ],
        "evidence": "Countries where most adults speak a second language, such as the Netherlands and Sweden, typically begin teaching it early in primary school.",
        "counter": "Timetables are already full, but twenty minutes a day of songs and stories costs little and pays off.",
        "conclusion": "An early start turns a school subject into a lifelong skill.",
    },
    {
        "key": "museums",
        "question": "Should national museums be free to enter?",
        "weak": "Museums hold a lot of interesting objects.",
        "thesis": "National museums should be free, because collections held in trust for the public should be open to all of it.",
        "points": [
            "An entry fee keeps away exactly the families and students who would gain most from a visit.",
            "Free entry invites short, repeated visits, which is how a collection becomes familiar.",
        ],
        "evidence": "When the UK's national museums dropped their admission charges in 2001, visits rose substantially in the following years.",
        "counter": "Museums need income, but donations, shops and paid special exhibitions can cover much of what tickets raised.",
        "conclusion": "A free museum is a public good in the fullest sense.",
    },
    {
        "key": "trees",
        "question": "Should cities spend more on street trees?",
        "weak": "Trees are nice to have in cities.",
        "thesis": "Cities should plant and maintain many more street trees, because they cool streets, absorb rain and improve health at low cost.",
        "points": [
            "Shade from a mature canopy lowers the temperature people feel on hot pavements.",
            "Tree roots and soil soak up storm water that would otherwise overload drains.",
        ],
        "evidence": "Measurements of urban heat show that tree-lined streets can be several degrees cooler than bare ones on summer afternoons.",
        "counter": "Trees need years of care and sometimes damage pavements, so budgets must fund maintenance, not just planting.",
        "conclusion": "Street trees are among the cheapest climate adaptations a city can buy.",
    },
    {
        "key": "nuclear",
        "question": "Should nuclear power be part of the move away from fossil fuels?",
        "weak": "Energy is a big issue for the future.",
        "thesis": "Nuclear power should be part of the transition, because it provides steady low-carbon electricity when the wind drops and the sun sets.",
        "points": [
            "A grid built only on weather-dependent sources needs storage or backup on a scale not yet available.",
            "Existing reactors already produce large amounts of clean power, and closing them early often means burning more gas.",
        ],
        "evidence": "France generates most of its electricity from nuclear plants and has one of the lowest-carbon power grids in Europe.",
        "counter": "New plants are slow and costly to build, which argues for keeping existing reactors running while renewables expand.",
        "conclusion": "Nuclear and renewables are partners, not rivals, in cutting emissions.",
    },
    {
        "key": "local-news",
        "question": "Should local journalism receive public support?",
        "weak": "News is something people read every day.",
        "thesis": "Local journalism deserves public support, because without reporters no one watches councils, courts and local firms.",
        "points": [
            "National outlets rarely cover planning decisions or school boards, where much public money is spent.",
            "When a local paper closes, rumours on social media fill the gap.",
        ],
        "evidence": "Studies in the United States have linked the closure of local newspapers with higher borrowing costs for the local governments they used to cover.",
        "counter": "State money can threaten independence, so support should flow through arm's-length funds with clear rules.",
        "conclusion": "Local reporting is a public good that the market alone no longer pays for.",
    },
    {
        "key": "junk-food-ads",
        "question": "Should advertising of junk food to children be restricted?",
        "weak": "Children see a lot of adverts.",
        "thesis": "Advertising of sugary and fatty foods to children should be restricted, because children cannot judge persuasion the way adults can.",
        "points": [
            "Cartoon characters and toys tie unhealthy food to fun before children understand what an advert is.",
            "Habits formed in childhood shape diets for life, and diet-related illness is expensive for everyone.",
        ],
        "evidence": "Chile's 2016 food law restricted marketing of unhealthy foods to children and required warning labels on packaging.",
        "counter": "Advertisers call this paternalism, but protecting children from persuasion is an old principle, not a new one.",
        "conclusion": "Limiting these adverts lets families, not marketers, shape what children eat.",
    },
    {
        "key": "cooking",
        "question": "Should cooking be a compulsory school subject?",
        "weak": "Cooking is a useful thing to know.",
        "thesis": "Cooking should be compulsory at school, because being able to make a cheap, healthy meal is a basic life skill.",
        "points": [
            "Many young people leave home able to heat ready meals but not to cook from fresh ingredients.",
            "Cooking lessons teach budgeting, hygiene and measurement in a way pupils can taste.",
        ],
        "evidence": "Schools that run regular practical cooking lessons report pupils trying foods at school they refused at home.",
        "counter": "Kitchens and ingredients cost money, but a basic teaching kitchen serves hundreds of pupils a year.",
        "conclusion": "Teaching every child to cook is an investment in health that lasts a lifetime.",
    },
]
TOPIC = {topic["key"]: topic for topic in TOPICS}

# Draft levels, weakest to strongest.
LEVEL_NOTES = {
    "L0": (
        "A vague opening and a single claim.",
        [
            (
                "no clear thesis: the opening only says the topic exists",
                "thesis",
                "opening sentence",
                "State your position in one sentence that answers the question directly.",
            ),
            ("the one claim is unsupported", "evidence", "body", "Give a reason and a concrete example for the claim."),
        ],
    ),
    "L1": (
        "A clear position with two reasons, but no evidence.",
        [
            (
                "claims are unsupported: no example or evidence",
                "evidence",
                "body",
                "Add one concrete, checkable example that supports the main reason.",
            ),
            (
                "the strongest objection is not addressed",
                "argument",
                "body",
                "Name the main objection and answer it in two sentences.",
            ),
        ],
    ),
    "L2": (
        "Position, reasons and an example; the other side is missing.",
        [
            (
                "the strongest objection is not addressed",
                "argument",
                "body",
                "Name the main objection and answer it in two sentences.",
            ),
            (
                "no conclusion: the essay stops after the example",
                "structure",
                "ending",
                "Close with a sentence that returns to the thesis.",
            ),
        ],
    ),
    "L2c": (
        "Position, reasons, an example and the objection; still no ending.",
        [
            (
                "no conclusion: the essay stops after the objection",
                "structure",
                "ending",
                "Close with a sentence that returns to the thesis.",
            ),
        ],
    ),
    "L3": ("A complete argument: position, reasons, example, objection and conclusion.", []),
    "degraded": (
        "The revision dropped the example and added filler.",
        [
            (
                "the revision removed the example that supported the main claim",
                "evidence",
                "second paragraph",
                "Restore the example from the previous draft.",
            ),
            (
                "the new closing sentence is filler that says nothing specific",
                "style",
                "ending",
                "Replace the filler with a conclusion tied to the thesis.",
            ),
        ],
    ),
}
MINOR_ISSUE = (
    "the example is not linked back to the thesis",
    "argument",
    "second paragraph",
    "Add a sentence explaining how the example supports the position.",
)

FATAL = {
    "placeholder": (
        "the draft contains an unfinished placeholder instead of evidence",
        "[TODO: add a real example here]",
    ),
    "off-topic": ("the draft answers a different question from the prompt", None),
    "contradiction": ("the conclusion contradicts the thesis", None),
    "invented": ("the draft cites a statistic with no source that appears to be invented", None),
}
CONTRADICTION = "In the end, though, none of this really matters, and things are better left as they are."
FILLER = "In conclusion, this is a very important issue that affects many people in many different ways."


def draft_text(topic, level, fatal=None, other=None):
    """Assembles a draft of `topic` at `level`, optionally with a fatal defect."""
    t = TOPIC[topic]
    if fatal == "off-topic":
        # A draft about another question entirely, as a confused generator might write.
        return draft_text(other, "L2")
    evidence = t["evidence"]
    if fatal == "placeholder":
        evidence = FATAL["placeholder"][1]
    if fatal == "invented":
        evidence = "A recent study proved that 97.3% of experts agree with this position completely."
    p1, p2 = t["points"]
    if level == "L0":
        paragraphs = [f"{t['weak']} {p1}"]
    elif level == "L1":
        paragraphs = [f"{t['thesis']} {p1} {p2}"]
    elif level == "L2":
        paragraphs = [f"{t['thesis']} {p1} {p2}", evidence]
    elif level == "L2c":
        paragraphs = [f"{t['thesis']} {p1} {p2}", f"{evidence} {t['counter']}"]
    elif level == "L3":
        ending = CONTRADICTION if fatal == "contradiction" else t["conclusion"]
        paragraphs = [f"{t['thesis']} {p1}", f"{p2} {evidence}", t["counter"], ending]
    elif level == "degraded":
        paragraphs = [f"{t['thesis']} {p1} {p2}", FILLER]
    else:
        raise ValueError(f"unknown level {level}")
    return "\n\n".join(paragraphs)


def fmt(score):
    return f"{score:g}"


def critique(level, score=None, dims=None, fatal=None, passed=None, minor=False):
    """A critique (docs/REFERENCE.md, Critique) of a draft at `level`: issues and suggestions follow from what it lacks."""
    summary, notes = LEVEL_NOTES[level]
    notes = list(notes)
    if minor:
        notes.append(MINOR_ISSUE)
    out = {}
    if score is not None:
        out["score"] = score
    if dims is not None:
        out["dimensions"] = dims
    out["issues"] = [issue for issue, _, _, _ in notes]
    out["fatal_issues"] = [FATAL[fatal][0]] if fatal else []
    suggestions = [{"dimension": dim, "target": target, "edit": edit} for _, dim, target, edit in notes]
    if fatal:
        fix = {
            "placeholder": "Replace the placeholder with a real, checkable example.",
            "off-topic": "Rewrite the draft so that it answers the question in the prompt.",
            "contradiction": "Rewrite the conclusion so that it supports the thesis.",
            "invented": "Remove the invented statistic or replace it with a sourced example.",
        }[fatal]
        suggestions.insert(0, {"dimension": "integrity", "edit": fix})
    out["suggestions"] = suggestions
    if passed is not None:
        out["passed"] = passed
    shown = score if score is not None else sum(dims.values()) / len(dims)
    if fatal:
        verdict = "a fatal problem must be fixed first"
    elif passed is not None:
        # A critic with its own verdict states it, whether or not the score agrees.
        verdict = "good enough to submit" if passed else "not ready yet"
    else:
        verdict = "ready" if shown >= 8 else "needs revision"
    out["rationale"] = f"{summary} Overall {fmt(shown)}/10: {verdict}."
    return out


# ---- the scenarios ------------------------------------------------------------------------------
# Each round: (draft level, critique keyword arguments). A round may set "fatal" (a key of FATAL)
# and "other" (the topic an off-topic draft is about).


def R(level, score=None, **kw):
    return (level, dict(score=score, **kw))


def dims(thesis, evidence, structure, style):
    return {"thesis": thesis, "evidence": evidence, "structure": structure, "style": style}


# One scenario per line reads as a table; keep the formatter from unfolding it.
# fmt: off
SCENARIOS = [
    # Pass at round 0.
    ("transit", "pass-r0", "strong first draft passes at once", "pass", [R("L3", 8.5)]),
    ("school-start", "pass-r0-at-threshold", "a score exactly at pass_score passes", "pass", [R("L3", 8.0)]),
    ("four-day-week", "pass-r0-high", "a near-perfect first draft", "pass", [R("L3", 9.5)]),
    # Pass after revisions.
    ("homework", "pass-r1", "one revision adds the missing evidence and ending", "pass", [R("L1", 6.0), R("L3", 8.5)]),
    ("phones", "pass-r1-small-step", "a small final step crosses the threshold", "pass", [R("L2c", 7.5), R("L3", 8.0)]),
    ("bag-charge", "pass-r2", "two revisions, steady gains", "pass", [R("L1", 5.0), R("L2", 6.5), R("L3", 8.2)]),
    ("vote-16", "pass-r2-jump", "a modest gain, then a large one", "pass", [R("L1", 6.0), R("L2", 7.0), R("L3", 9.0)]),
    ("remote-work", "pass-r3", "passes on the last allowed revision", "pass", [R("L0", 4.0), R("L1", 5.5), R("L2", 7.0), R("L3", 8.5)]),
    ("libraries", "pass-r3-at-threshold", "reaches exactly pass_score on the last revision", "pass", [R("L0", 5.0), R("L1", 6.0), R("L2c", 7.5), R("L3", 8.0)]),
    # Stall: the score drops below the previous round's.
    ("car-free", "stall-r1", "the first revision makes the essay worse", "stall", [R("L2", 6.0), R("degraded", 5.0)]),
    ("testing", "stall-r2", "improves once, then drops", "stall", [R("L1", 5.0), R("L2", 7.0), R("degraded", 6.5)]),
    ("languages", "stall-r3", "improves twice, then drops on the last revision", "stall", [R("L0", 4.5), R("L1", 6.0), R("L2", 7.0), R("degraded", 6.0)]),
    # Ties are not stalls.
    ("museums", "tie-then-pass", "an unchanged score is not a stall; the next revision passes", "pass", [R("L1", 6.0), R("L2", 6.0), R("L3", 8.0)]),
    ("trees", "tie-to-budget", "the same score every round: no stall, the budget ends it", "budget", [R("L2", 7.0), R("L2c", 7.0)]),
    ("nuclear", "tie-then-drop", "a tie continues the loop, the later drop stalls it", "stall", [R("L1", 6.0), R("L2", 6.0), R("degraded", 5.5)]),
    # Fatal issues.
    ("local-news", "fatal-fixed-then-pass", "a high score with a fatal issue does not pass; fixing it does", "pass", [R("L3", 9.0, fatal="placeholder"), R("L3", 8.5)]),
    ("junk-food-ads", "fatal-drop-then-pass", "a falling score with fatal issues is not a stall", "pass", [R("L3", 7.0, fatal="contradiction"), R("L2", 5.5, fatal="placeholder"), R("L3", 8.0)]),
    ("cooking", "fatal-fixed-then-stall", "once the fatal issue is gone, a score below the fatal round's is a stall", "stall", [R("L3", 8.5, fatal="invented"), R("L2", 6.0)]),
    ("transit", "fatal-to-budget", "fatal issues in every round run out the budget", "budget", [R("L1", 3.0, fatal="off-topic", other="nuclear"), R("L1", 4.0, fatal="placeholder"), R("L2", 4.5, fatal="placeholder"), R("L3", 5.0, fatal="invented")]),
    ("school-start", "fatal-high-to-budget", "a top score with a fatal issue never passes, and never plateaus", "budget", [R("L3", 9.0, fatal="contradiction")]),
    ("four-day-week", "fatal-falling-to-budget", "falling scores with fatal issues skip the stall rule until the budget", "budget", [R("L3", 6.0, fatal="invented"), R("L2", 4.0, fatal="placeholder"), R("L1", 3.0, fatal="off-topic", other="museums"), R("L1", 2.0, fatal="off-topic", other="trees")]),
    ("homework", "fatal-on-last-round", "a fatal issue introduced on the last revision ends at the budget", "budget", [R("L1", 6.0), R("L2", 7.0), R("L2c", 7.5), R("L3", 8.5, fatal="placeholder")]),
    # Budget with rising scores; plateau-shaped sequences.
    ("phones", "budget-rising", "steady gains that stop short of the threshold", "budget", [R("L0", 4.0), R("L1", 5.0), R("L2", 6.0), R("L3", 7.0, minor=True)]),
    ("bag-charge", "budget-near-miss", "ends just below the threshold", "budget", [R("L1", 5.0), R("L2", 6.0), R("L2c", 7.0), R("L3", 7.9, minor=True)]),
    ("vote-16", "budget-slow-rise", "gains of 0.6: too large for a plateau at eps 0.5", "budget", [R("L1", 5.0), R("L2", 5.6), R("L2c", 6.2), R("L3", 6.8, minor=True)]),
    ("remote-work", "plateau-late", "gains shrink to 0.2 then 0.1: plateau at round 3 when plateau_eps = 0.5", "budget", [R("L1", 6.0), R("L2", 6.5), R("L2c", 6.7), R("L3", 6.8, minor=True)]),
    ("libraries", "plateau-early", "gains of 0.2 and 0.1: plateau at round 2 when plateau_eps = 0.5", "budget", [R("L1", 5.0), R("L2", 5.2), R("L2c", 5.3), R("L3", 5.35, minor=True)]),
    ("car-free", "plateau-repeat", "a short script repeats its last critique: gains 0.3 then 0", "budget", [R("L1", 6.0), R("L2", 6.3)]),
    # Critiques given only as dimensions: the host scores them by their mean.
    ("testing", "dims-pass-r1", "dimensions only; the mean goes from 6 to 8.25", "pass", [R("L1", dims=dims(7, 4, 7, 6)), R("L3", dims=dims(8, 8, 9, 8))]),
    ("languages", "dims-pass-r2", "dimensions only; the mean reaches exactly 8", "pass", [R("L0", dims=dims(5, 6, 7, 6)), R("L2", dims=dims(7, 7, 8, 8)), R("L3", dims=dims(8, 7, 9, 8))]),
    ("museums", "dims-stall", "dimensions only; the mean drops from 6.5 to 6", "stall", [R("L2", dims=dims(7, 6, 7, 6)), R("degraded", dims=dims(7, 4, 7, 6))]),
    ("trees", "dims-budget", "dimensions only; the mean rises but never reaches 8", "budget", [R("L0", dims=dims(4, 3, 5, 4)), R("L1", dims=dims(6, 3, 6, 5)), R("L2", dims=dims(6, 6, 6, 6)), R("L2c", dims=dims(7, 7, 6, 7))]),
    ("nuclear", "dim-target", "passes on score at once; with dim_target 8 the weak evidence dimension needs one more revision", "pass", [R("L3", 8.5, dims=dims(9, 7, 9, 9), minor=True), R("L3", 9.0, dims=dims(9, 9, 9, 9))]),
    # The critic's own verdict is recorded but never steers the loop.
    ("local-news", "critic-passed-early", "the critic says passed from round 0, the host revises until the score reaches 8", "pass", [R("L2", 7.0, passed=True), R("L2c", 7.5, passed=True), R("L3", 8.0, passed=True)]),
    ("junk-food-ads", "critic-failed-host-passes", "the critic says not passed, but the score passes", "pass", [R("L3", 9.0, passed=False)]),
    ("cooking", "critic-passed-stall", "the critic says passed twice, yet the host stalls on the drop", "stall", [R("L2c", 7.5, passed=True), R("degraded", 7.0, passed=True)]),
]
# fmt: on


# ---- the decision rule (docs/REFERENCE.md), to check every scenario ----------------------------


def round_score(c):
    score = c.get("score")
    if score is None:
        score = sum(c["dimensions"].values()) / len(c["dimensions"])
    dims_ = c.get("dimensions") or {}
    return score, bool(c["fatal_issues"]), min(dims_.values()) if dims_ else None


def decide(rounds, policy):
    score, fatal, min_dim = rounds[-1]
    r = len(rounds) - 1
    budget_left = r < policy["max_revisions"]
    dims_ok = policy["dim_target"] is None or min_dim is None or min_dim >= policy["dim_target"]
    if not fatal and score >= policy["pass_score"] and dims_ok:
        return "pass"
    if fatal:
        return None if budget_left else "budget"
    if policy["stall"] and r >= 1 and score < rounds[r - 1][0]:
        return "stall"
    eps = policy["plateau_eps"]
    if eps > 0 and r >= 2 and score - rounds[r - 1][0] < eps and rounds[r - 1][0] - rounds[r - 2][0] < eps:
        return "plateau"
    if not budget_left:
        return "budget"
    return None


def replay(critiques, policy):
    """Runs the loop over a script; returns (exit reason, stopping round)."""
    rounds = []
    for r in range(policy["max_revisions"] + 1):
        rounds.append(round_score(critiques[min(r, len(critiques) - 1)]))
        reason = decide(rounds, policy)
        if reason is not None:
            return reason, r
    raise AssertionError("the loop must stop at the budget")


# ---- output ---------------------------------------------------------------------------------------

PROMPT_FORMS = [
    "Write a short argumentative essay (about 150 words) answering the question: {q}",
    "In about 150 words, argue one side of this question for a general newspaper reader: {q}",
]


def build():
    tasks = []
    uses = {}
    for number, (topic, scenario, description, expect, rounds) in enumerate(SCENARIOS, start=1):
        use = uses.get(topic, 0)
        uses[topic] = use + 1
        drafts, critiques = [], []
        for level, kw in rounds:
            fatal = kw.pop("fatal", None)
            other = kw.pop("other", None)
            drafts.append(draft_text(topic, level, fatal=fatal, other=other))
            critiques.append(critique(level, fatal=fatal, **kw))
        reason, stop = replay(critiques, DEFAULT_POLICY)
        if reason != expect:
            raise AssertionError(f"{scenario}: designed to end in {expect}, but the rule gives {reason}")
        plateau = replay(critiques, dict(DEFAULT_POLICY, plateau_eps=PLATEAU_EPS))
        dim_target = replay(critiques, dict(DEFAULT_POLICY, dim_target=DIM_TARGET))
        task = {
            "id": f"essay-{number:03d}",
            "prompt": PROMPT_FORMS[use % len(PROMPT_FORMS)].format(q=TOPIC[topic]["question"]),
            "kind": "essay",
            "drafts": drafts,
            "critiques": critiques,
            "meta": {
                "scenario": scenario,
                "description": description,
                "expect": reason,
                "expect_round": stop,
                "with_plateau_eps": {"plateau_eps": PLATEAU_EPS, "expect": plateau[0], "expect_round": plateau[1]},
                "with_dim_target": {"dim_target": DIM_TARGET, "expect": dim_target[0], "expect_round": dim_target[1]},
            },
        }
        tasks.append(task)
    check_coverage(tasks)
    return "".join(json.dumps(task, ensure_ascii=False) + "\n" for task in tasks)


def check_coverage(tasks):
    """Fails if the set stops covering a branch of the rule that it promises to cover."""
    meta = [t["meta"] for t in tasks]
    exits = {m["expect"] for m in meta}
    assert exits == {"pass", "stall", "budget"}, exits
    assert {m["expect_round"] for m in meta if m["expect"] == "pass"} == {0, 1, 2, 3}
    assert any(m["with_plateau_eps"]["expect"] == "plateau" for m in meta)
    assert any(m["with_dim_target"]["expect_round"] != m["expect_round"] for m in meta)
    assert any("score" not in c for t in tasks for c in t["critiques"])
    assert any(c.get("passed") is True and c["score"] < 8 for t in tasks for c in t["critiques"] if "score" in c)
    assert len({t["id"] for t in tasks}) == len(tasks) >= 30


def main(argv):
    text = build()
    if argv[1:] == ["--check"]:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python3 {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date ({text.count(chr(10))} tasks)")
        return 0
    if argv[1:]:
        print("usage: python3 datasets/make_essays.py [--check]", file=sys.stderr)
        return 2
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({text.count(chr(10))} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
