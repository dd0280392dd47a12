#!/usr/bin/env python3
"""Writes the demo datasets: datasets/papers.jsonl and datasets/rag.jsonl.

Run from anywhere: `python3 datasets/make_datasets.py`. The output is committed; rerunning the
script must reproduce it byte for byte, so every random choice comes from a hash of a fixed key
(never from `random`, whose algorithms may change between Python versions).

papers.jsonl  one short-research-paper task per row (kind "paper"): a prompt, a few sentences of
              source material in `context`, and meta {difficulty, topic, field}.
rag.jsonl     one question per row (kind "rag") with an evidence pool of 2-6 items (id -> text).
              Most pools hold the passage that answers the question among distractors that share
              at most one content word with it; about one task in eight has no relevant passage at
              all, so the honest answer is that the evidence does not cover the question.
              meta {difficulty, format: "json"|"prose"}; labels {answerable, relevant} are gold
              labels for critic benchmarking (the writer and critics never read them).
"""

import hashlib
import json
import os
import re

# ---------------------------------------------------------------------------------------------
# Deterministic randomness


def unit(*key):
    """A number in [0, 1) fixed by `key`."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def below(n, *key):
    return int(unit(*key) * n)


def pick(items, *key):
    return items[below(len(items), *key)]


def shuffled(items, *key):
    """A permutation of `items` ordered by a hash of each item's position."""
    order = sorted(range(len(items)), key=lambda i: unit(*key, "shuffle", i))
    return [items[i] for i in order]


def difficulty(*key):
    """Spread over 0.05-0.95, a little denser in the middle (mean of two uniforms)."""
    value = (unit(*key, "d1") + unit(*key, "d2")) / 2
    return round(0.05 + 0.9 * value, 2)


# ---------------------------------------------------------------------------------------------
# Content words, the same way the evidence critic counts them (lowercase alphanumeric runs of
# three or more characters, minus stopwords, with a plural "s" trimmed).

STOPWORDS = set(
    """
    a an the and or but nor of to in on at by for with from into onto over under about above
    below between through during without within along across against among around as is are was
    were be been being am do does did doing done has have had having it its itself this that
    these those there here their theirs they them what which who whom whose when where why how
    than then so such not no yes can could may might must should would will shall more most
    much many some any each every other another also only very just out up down off while after
    before because often usually both all our ours we us you your yours his her hers she him he
    one two per via yet still even ever too again almost mostly
    """.split()
)


def content_words(text):
    words = set()
    for raw in re.findall(r"[a-z0-9]+", text.lower()):
        if len(raw) < 3 or raw in STOPWORDS:
            continue
        if len(raw) > 4 and raw.endswith("s") and not raw.endswith("ss"):
            raw = raw[:-1]
        words.add(raw)
    return words


def addresses(question, passage):
    """Whether a passage shares enough content words with the question to count as on topic."""
    q = content_words(question)
    return len(q & content_words(passage)) >= min(2, len(q))


# ---------------------------------------------------------------------------------------------
# RAG facts: subject -> [(question, passage that answers it)]

FACTS = {
    "honeybees": [
        ("How do honeybees tell other bees where to find flowers?",
         "Honeybees perform a waggle dance whose angle and duration tell other bees the direction and distance to flowers."),
        ("How many eggs can a honeybee queen lay in one day?",
         "A healthy honeybee queen can lay up to about 1,500 eggs in a single day during peak season."),
        ("Why do honeybees fan their wings inside the hive?",
         "Worker honeybees fan their wings inside the hive to circulate air and evaporate water from nectar."),
    ],
    "photosynthesis": [
        ("What gas do plants release during photosynthesis?",
         "During photosynthesis plants split water molecules and release oxygen gas as a by-product."),
        ("Where in the plant cell does photosynthesis take place?",
         "Photosynthesis takes place in chloroplasts, organelles of the plant cell that contain the green pigment chlorophyll."),
        ("Which wavelengths of light does chlorophyll absorb most strongly?",
         "Chlorophyll absorbs blue and red wavelengths of light most strongly and reflects green light."),
    ],
    "volcanoes": [
        ("What makes some volcanic eruptions explosive?",
         "Volcanic eruptions become explosive when viscous, gas-rich magma traps pressure until it fragments violently."),
        ("What is a shield volcano made of?",
         "A shield volcano is made almost entirely of fluid basalt lava flows that spread into broad, gentle slopes."),
        ("How can volcanic ash affect aircraft engines?",
         "Volcanic ash can melt inside hot aircraft engines and coat turbine parts, which may cause the engines to fail."),
    ],
    "aqueducts": [
        ("How did Roman aqueducts move water without pumps?",
         "Roman aqueducts moved water without pumps by keeping a steady, gentle downhill gradient over long distances."),
        ("What material did Romans use to line aqueduct channels?",
         "Romans lined aqueduct channels with a waterproof hydraulic mortar known as opus signinum."),
        ("How long was the Aqua Marcia aqueduct?",
         "The Aqua Marcia aqueduct, completed around 140 BC, ran for about 91 kilometres to supply Rome."),
    ],
    "coral": [
        ("What causes coral bleaching?",
         "Coral bleaching has one main cause: heat-stressed corals expel the symbiotic algae that give them colour and food."),
        ("What share of marine species depend on coral reefs?",
         "Coral reefs cover less than one percent of the ocean floor yet support roughly a quarter of all marine species."),
        ("How do coral reefs protect coastlines?",
         "Coral reefs protect coastlines by breaking incoming waves and absorbing much of their energy before it reaches shore."),
    ],
    "vaccines": [
        ("How do mRNA vaccines train the immune system?",
         "mRNA vaccines deliver instructions that cells use to make a harmless viral protein, which trains the immune system to recognise it."),
        ("What is herd immunity?",
         "Herd immunity arises when enough people in a population are immune that an infection can no longer spread easily."),
        ("Why do some vaccines need booster doses?",
         "Some vaccines need booster doses because protective antibody levels decline in the months after the first doses."),
    ],
    "bitcoin": [
        ("What does proof of work require from blockchain miners?",
         "Proof of work requires blockchain miners to find a hash below a target value, which costs large amounts of computation."),
        ("How often is a new Bitcoin block produced on average?",
         "The Bitcoin network adjusts mining difficulty so that a new block is produced about every ten minutes on average."),
        ("What happens at a Bitcoin halving?",
         "At each Bitcoin halving, roughly every four years, the reward paid to miners for a new block is cut in half."),
    ],
    "sleep": [
        ("What happens in the brain during REM sleep?",
         "During REM sleep the brain is highly active, dreams are vivid, and most skeletal muscles are temporarily paralysed."),
        ("How much sleep do adults need each night?",
         "Health agencies recommend that adults get at least seven hours of sleep each night."),
        ("Which hormone signals the body that it is time to sleep?",
         "The pineal gland releases the hormone melatonin in darkness, signalling the body that it is time to sleep."),
    ],
    "antibiotics": [
        ("How do bacteria become resistant to antibiotics?",
         "Bacteria become resistant to antibiotics through random mutations and by sharing resistance genes with other bacteria."),
        ("Why does overuse of antibiotics speed up resistance?",
         "Overuse of antibiotics kills susceptible microbes and leaves resistant strains to multiply, which speeds up resistance."),
        ("Do antibiotics work against viral infections?",
         "Antibiotics target bacteria and have no effect on viral infections such as the common cold."),
    ],
    "black holes": [
        ("What is the event horizon of a black hole?",
         "The event horizon is the boundary around a black hole beyond which nothing, not even light, can escape."),
        ("How was the first image of a black hole captured?",
         "The Event Horizon Telescope captured the first image of a black hole in 2019 by linking radio dishes across the globe."),
        ("What is Hawking radiation?",
         "Hawking radiation is faint thermal radiation that quantum effects predict black holes emit near their horizon."),
    ],
    "monarchs": [
        ("How far do monarch butterflies migrate?",
         "Eastern monarch butterflies migrate up to about 4,000 kilometres from Canada to overwinter in central Mexico."),
        ("Why are monarch butterflies toxic to predators?",
         "Monarch caterpillars feed on milkweed and store its toxins, which makes adult butterflies toxic to many predators."),
        ("How do monarch butterflies navigate during migration?",
         "Monarch butterflies navigate during migration with a sun compass that a clock in their antennae corrects."),
    ],
    "batteries": [
        ("Why do lithium-ion batteries lose capacity over time?",
         "Lithium-ion batteries lose capacity over time as side reactions consume lithium and thicken the layer on the anode."),
        ("What is thermal runaway in a lithium-ion battery?",
         "Thermal runaway is a chain reaction in a damaged lithium-ion battery where heat triggers further heat-releasing reactions."),
        ("What material is commonly used for the anode of lithium-ion batteries?",
         "Most lithium-ion batteries use graphite for the anode, a material that stores lithium ions between its carbon layers."),
    ],
    "tides": [
        ("What causes ocean tides?",
         "Ocean tides have one main cause, the gravitational pull of the Moon, with a smaller contribution from the Sun."),
        ("What are spring tides?",
         "Spring tides, with the largest tidal range, occur when the Sun, Moon and Earth line up at new and full moon."),
        ("How many high tides do most coasts get each day?",
         "Most coasts get two high tides and two low tides each lunar day of about 24 hours and 50 minutes."),
    ],
    "printing": [
        ("When did Gutenberg build his printing press?",
         "Johannes Gutenberg built his movable-type printing press in Mainz around 1440."),
        ("How did the printing press change the spread of books?",
         "The printing press cut the cost of books so sharply that millions of copies spread across Europe by 1500."),
        ("What was the first major book printed by Gutenberg?",
         "The first major book Gutenberg printed was the Latin Bible, finished around 1455."),
    ],
    "vents": [
        ("What do organisms at hydrothermal vents use for energy?",
         "Microbes at hydrothermal vents use chemical energy from hydrogen sulfide instead of sunlight, a process called chemosynthesis."),
        ("How hot can water from hydrothermal vents get?",
         "Water from black smoker hydrothermal vents can exceed 400 degrees Celsius without boiling because of the high pressure."),
        ("When were hydrothermal vents discovered?",
         "Hydrothermal vents were discovered in 1977 near the Galapagos Islands by scientists aboard the submersible Alvin."),
    ],
    "inflation": [
        ("How do central banks fight inflation?",
         "Central banks usually fight inflation by raising interest rates, which makes borrowing more expensive and cools demand."),
        ("What inflation rate do many central banks target?",
         "Many central banks target an inflation rate of about two percent a year."),
        ("What is the difference between inflation and deflation?",
         "Inflation is a general rise in prices over time, while deflation is a general fall in prices."),
    ],
    "optics": [
        ("Why does a rainbow form after rain?",
         "A rainbow forms when sunlight is refracted, reflected and dispersed inside raindrops, which splits it into colours."),
        ("Why is the sky blue?",
         "The sky looks blue because air molecules scatter short blue wavelengths of sunlight far more than red ones."),
        ("What causes a mirage on a hot road?",
         "A mirage on a hot road appears when light bends through layers of hot air near the surface."),
    ],
    "octopuses": [
        ("How do octopuses change colour?",
         "Octopuses change colour using chromatophores, skin cells with pigment sacs that muscles expand or shrink."),
        ("How many hearts does an octopus have?",
         "An octopus has three hearts: two pump blood through the gills and one pumps it to the rest of the body."),
        ("Where are most of an octopus's neurons located?",
         "About two thirds of an octopus's neurons are located in its arms rather than in its central brain."),
    ],
    "glaciers": [
        ("How do glaciers move?",
         "Glaciers move by slow internal deformation of the ice and by sliding over meltwater at their base."),
        ("How much of the world's fresh water is stored in glaciers and ice sheets?",
         "Glaciers and ice sheets store roughly 69 percent of the world's fresh water."),
        ("What landforms do glaciers leave behind?",
         "Retreating glaciers leave behind landforms such as moraines, drumlins and U-shaped valleys."),
    ],
    "internet": [
        ("What does DNS do on the internet?",
         "The Domain Name System (DNS) translates human-readable names into the numeric addresses computers use on the internet."),
        ("How does TCP make data transfer reliable?",
         "TCP makes data transfer reliable by numbering packets, acknowledging receipt and retransmitting lost packets."),
        ("Why was IPv6 introduced?",
         "IPv6 was introduced because the IPv4 address space of about 4.3 billion addresses was running out."),
    ],
    "tea": [
        ("Where did tea drinking originate?",
         "Tea drinking began in southwest China, where leaves of the Camellia sinensis plant were brewed for thousands of years."),
        ("What is the difference between green tea and black tea?",
         "Green tea is heated soon after picking to stop oxidation, while black tea leaves are fully oxidised before drying."),
        ("How much caffeine does a cup of tea contain?",
         "A typical cup of black tea contains roughly 40 to 70 milligrams of caffeine."),
    ],
    "earthquakes": [
        ("What causes earthquakes?",
         "Most earthquakes have one main cause: the sudden slip of rock along faults when stress between tectonic plates is released."),
        ("What does the moment magnitude scale measure?",
         "The moment magnitude scale measures the energy an earthquake releases, and each whole step means about 32 times more energy."),
        ("How can earthquakes cause tsunamis?",
         "Undersea earthquakes can cause tsunamis when they suddenly lift or drop the seafloor and displace the water above."),
    ],
    "penguins": [
        ("How do emperor penguins survive the Antarctic winter?",
         "Emperor penguins survive the Antarctic winter by huddling in tight groups that share body heat and shelter from the wind."),
        ("How deep can emperor penguins dive?",
         "Emperor penguins can dive deeper than 500 metres and hold their breath for more than twenty minutes."),
        ("Which parent incubates the emperor penguin egg?",
         "The male emperor penguin incubates the egg on his feet for about two months while the female feeds at sea."),
    ],
    "solar": [
        ("How do solar panels turn sunlight into electricity?",
         "Solar panels turn sunlight into electricity through the photovoltaic effect, in which light frees electrons in silicon cells."),
        ("How efficient are typical silicon solar panels?",
         "Typical commercial silicon solar panels convert about 18 to 23 percent of incoming sunlight into electricity."),
        ("Why do solar panels produce less power when hot?",
         "Solar panels produce less power when hot because the cell voltage drops as temperature rises."),
    ],
    "language": [
        ("When do infants usually say their first words?",
         "Most infants say their first recognisable words between about 10 and 14 months of age."),
        ("What is the critical period hypothesis for language learning?",
         "The critical period hypothesis proposes that language learning is easiest before puberty and harder afterwards."),
        ("How do bilingual children handle two languages?",
         "Bilingual children learn early to keep their two languages apart and often mix them only when talking to other bilinguals."),
    ],
    "compilers": [
        ("What does a compiler's parser produce?",
         "A compiler's parser reads the token stream and produces a syntax tree that later stages analyse."),
        ("What is register allocation in a compiler?",
         "Register allocation is the compiler phase that decides which program values live in the processor's few fast registers."),
        ("What does just-in-time compilation do?",
         "Just-in-time compilation translates code to machine instructions while the program runs, using observed behaviour to optimise hot paths."),
    ],
    "mars": [
        ("Why is Mars red?",
         "Mars looks red because iron minerals in its dust and rocks have oxidised into rust."),
        ("How long is a day on Mars?",
         "A day on Mars, called a sol, lasts about 24 hours and 40 minutes."),
        ("What is Olympus Mons?",
         "Olympus Mons on Mars is the largest known volcano in the solar system, about 22 kilometres high."),
    ],
    "coffee": [
        ("How does caffeine keep people awake?",
         "Caffeine keeps people awake by blocking adenosine receptors in the brain, which normally promote sleepiness."),
        ("Where was coffee first cultivated?",
         "Coffee was first cultivated in Yemen in the 15th century, from plants that came from the Ethiopian highlands."),
        ("What is the difference between arabica and robusta coffee?",
         "Arabica coffee has a milder, sweeter taste, while robusta coffee is more bitter and contains about twice as much caffeine."),
    ],
    "wind": [
        ("Why are wind turbine blades so long?",
         "Wind turbine blades are long because the power captured grows with the square of the blade length."),
        ("At what wind speed do turbines shut down?",
         "Most wind turbines shut down at wind speeds above about 25 metres per second to avoid damage."),
        ("Why are offshore wind farms attractive?",
         "Offshore wind farms are attractive because winds at sea are stronger and steadier than on land."),
    ],
    "markets": [
        ("What happens to price when demand rises and supply stays fixed?",
         "When demand rises while supply stays fixed, the market price rises until buyers and sellers balance again."),
        ("What is price elasticity of demand?",
         "Price elasticity of demand measures how much the quantity demanded changes when the price changes."),
        ("What does a price ceiling do?",
         "A price ceiling set below the market price creates shortages because buyers want more than sellers offer."),
    ],
    "dna": [
        ("What is the shape of the DNA molecule?",
         "The DNA molecule has the shape of a double helix, two strands wound around each other."),
        ("How many base pairs are in the human genome?",
         "The human genome contains about 3.1 billion base pairs of DNA."),
        ("What does PCR do with DNA?",
         "The polymerase chain reaction, PCR, copies a chosen stretch of DNA millions of times in a few hours."),
    ],
    "olympics": [
        ("When were the first modern Olympic Games held?",
         "The first modern Olympic Games were held in Athens in 1896."),
        ("What do the five Olympic rings represent?",
         "The five interlocking Olympic rings represent the union of the inhabited continents."),
        ("How often are the Summer Olympic Games held?",
         "The Summer Olympic Games are normally held every four years."),
    ],
    "plastics": [
        ("Why is most plastic not recycled?",
         "Most plastic is not recycled because mixed polymers and food contamination make sorting costly."),
        ("What are microplastics?",
         "Microplastics are plastic fragments smaller than five millimetres, found from deep oceans to drinking water."),
        ("How long does a plastic bottle take to break down?",
         "A plastic bottle can take hundreds of years to break down in a landfill."),
    ],
    "memory": [
        ("What role does the hippocampus play in memory?",
         "The hippocampus helps turn new experiences into long-term memory and is needed to form new episodic memories."),
        ("How many items can working memory hold?",
         "Working memory can hold only about four meaningful items at once in most adults."),
        ("What is the spacing effect in learning?",
         "The spacing effect is the finding that learning spread over several sessions is remembered better than cramming."),
    ],
    "bridges": [
        ("How does a suspension bridge carry its load?",
         "A suspension bridge carries its load through main cables that hang from towers and pass the forces to anchorages."),
        ("Why did the Tacoma Narrows Bridge collapse?",
         "The Tacoma Narrows Bridge collapsed in 1940 when wind drove twisting oscillations that the deck could not damp."),
        ("What is an expansion joint on a bridge for?",
         "An expansion joint lets a bridge deck grow and shrink with temperature without cracking."),
    ],
    "jupiter": [
        ("What is Jupiter's Great Red Spot?",
         "Jupiter's Great Red Spot is a giant storm larger than Earth that has raged for at least 190 years."),
        ("How many moons does Jupiter have?",
         "Jupiter has more than 90 confirmed moons, including the four large Galilean moons."),
        ("What is Jupiter mostly made of?",
         "Jupiter is made mostly of hydrogen and helium, much like the Sun."),
    ],
    "bread": [
        ("Why does bread dough rise?",
         "Bread dough rises because yeast ferments sugars and releases carbon dioxide gas that the gluten network traps."),
        ("What does kneading do to dough?",
         "Kneading develops gluten in dough, aligning proteins into elastic strands."),
        ("What makes sourdough bread sour?",
         "Sourdough bread tastes sour because lactic acid bacteria in the starter produce lactic and acetic acids."),
    ],
    "voting": [
        ("What is ranked-choice voting?",
         "In ranked-choice voting, voters rank candidates and the last-placed candidate's votes are transferred until one candidate has a majority."),
        ("What is gerrymandering?",
         "Gerrymandering is drawing electoral district boundaries to favour one party or group."),
        ("Why do some countries use compulsory voting?",
         "Countries such as Australia use compulsory voting to raise turnout so that results reflect the whole electorate."),
    ],
    "birds": [
        ("How do migratory birds find their way?",
         "Migratory birds find their way using the sun, the stars and the Earth's magnetic field."),
        ("Which bird has the longest migration?",
         "The Arctic tern has the longest known migration, flying about 70,000 kilometres a year between the poles."),
        ("Why do birds fly in a V formation?",
         "Birds fly in a V formation to save energy by catching the updraft from the wingtip of the bird ahead."),
    ],
    "gps": [
        ("How does GPS determine a position?",
         "A GPS receiver determines its position by timing signals from at least four satellites."),
        ("Why must GPS satellites correct for relativity?",
         "GPS satellites must correct their clocks for relativity, which would otherwise cause errors of about ten kilometres per day."),
        ("How many satellites are in the GPS constellation?",
         "The GPS constellation has about 31 operational satellites in medium Earth orbit."),
    ],
}

RAG_TASKS = 240
UNANSWERABLE_SHARE = 0.125


def make_rag():
    subjects = sorted(FACTS)
    facts = [(subject, q, e) for subject in subjects for (q, e) in FACTS[subject]]
    for subject, question, passage in facts:
        assert addresses(question, passage), f"passage does not address its question: {question}"
    order = shuffled(list(range(len(facts))), "rag-order")
    rows = []
    for n in range(RAG_TASKS):
        task_id = f"rag-{n + 1:04d}"
        subject, question, passage = facts[order[n % len(facts)]]
        answerable = unit(task_id, "answerable") >= UNANSWERABLE_SHARE
        # Distractors: passages from other subjects that do not address the question.
        candidates = [
            e for (s, q, e) in facts if s != subject and not addresses(question, e)
        ]
        candidates = shuffled(candidates, task_id, "distractors")
        passages = []
        relevant = []
        if answerable:
            size = 2 + below(5, task_id, "size")  # 2..6
            passages.append(passage)
            relevant.append(passage)
            siblings = [e for (s, q, e) in facts if s == subject and e != passage]
            if size >= 3 and unit(task_id, "sibling") < 0.35:
                sibling = pick(siblings, task_id, "sibling-pick")
                passages.append(sibling)
                if addresses(question, sibling):
                    relevant.append(sibling)
        else:
            size = 2 + below(4, task_id, "size")  # 2..5
        passages.extend(candidates[: size - len(passages)])
        passages = shuffled(passages, task_id, "pool")
        evidence = {f"d{i + 1}": text for i, text in enumerate(passages)}
        relevant_ids = [key for key, text in evidence.items() if text in relevant]
        rows.append(
            {
                "id": task_id,
                "prompt": question,
                "kind": "rag",
                "evidence": evidence,
                "labels": {"answerable": answerable, "relevant": relevant_ids},
                "meta": {
                    "difficulty": difficulty(task_id),
                    "format": "prose" if unit(task_id, "format") < 0.4 else "json",
                    "subject": subject,
                },
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Papers: field -> [(topic, method, data, finding)], plus per-field motivations, open questions
# and angles that vary the prompt.

FIELDS = {
    "machine learning": {
        "topics": [
            ("sparse attention for long documents", "block-sparse attention patterns", "long-document summarisation benchmarks", "memory use grows almost linearly with input length"),
            ("label noise in image classification", "loss reweighting and sample selection", "crowd-labelled image datasets", "a small clean validation set recovers most of the lost accuracy"),
            ("continual learning without forgetting", "replay buffers and weight regularisation", "sequences of classification tasks", "a small replay buffer prevents most catastrophic forgetting"),
            ("calibration of neural network confidence", "temperature scaling and ensembles", "held-out classification benchmarks", "deeper networks tend to be overconfident"),
            ("data augmentation for speech recognition", "spectrogram masking and speed perturbation", "read and conversational speech corpora", "masking time and frequency bands lowers word error rates"),
            ("federated learning on mobile devices", "federated averaging with client sampling", "keyboard prediction logs kept on devices", "uneven data across clients slows convergence"),
            ("knowledge distillation for small models", "teacher-student training on soft labels", "language and vision benchmarks", "students keep most of the teacher's accuracy at a fraction of its size"),
            ("retrieval-augmented text generation", "dense passage retrieval feeding a generator", "open-domain question answering sets", "grounding answers in retrieved passages reduces unsupported claims"),
        ],
        "motivations": ["models are deployed faster than they are understood", "compute budgets limit what most teams can train", "benchmark gains often fail to carry over to practice"],
        "open": ["how these results hold outside standard benchmarks", "whether the gains survive at larger scale", "what the methods cost in energy"],
        "angles": ["evaluation under limited data", "cost and scalability", "robustness outside the benchmark"],
    },
    "ecology": {
        "topics": [
            ("pollinator decline in farmland", "transect counts and pan traps", "field margins over several seasons", "flower-rich margins raise wild bee abundance"),
            ("urban heat islands and tree cover", "satellite land-surface temperature maps", "neighbourhoods of large cities", "streets with dense canopy are several degrees cooler"),
            ("invasive species spread along rivers", "environmental DNA sampling", "river networks downstream of ports", "boat traffic predicts where invaders appear first"),
            ("wolf reintroduction and trophic cascades", "long-term vegetation plots", "a national park before and after reintroduction", "browsing pressure on young trees fell in some valleys"),
            ("soil carbon under regenerative grazing", "paired soil cores", "managed and conventional pastures", "carbon gains are real but smaller and slower than claimed"),
            ("seagrass meadows as carbon sinks", "sediment cores and radiocarbon dating", "temperate and tropical meadows", "seagrass sediments store carbon for centuries"),
            ("light pollution and nocturnal insects", "light-trap experiments", "streetlit and dark road verges", "artificial light reduces caterpillar numbers"),
            ("amphibian declines from chytrid fungus", "skin swab surveys", "mountain frog populations", "cool highland sites suffered the steepest losses"),
        ],
        "motivations": ["habitats are changing faster than monitoring can follow", "conservation budgets must be spent where they help most", "local field results rarely scale to whole landscapes"],
        "open": ["how long the effects last", "whether the pattern holds in other climates", "which management actions are worth their cost"],
        "angles": ["long-term monitoring", "management decisions", "differences between regions"],
    },
    "materials science": {
        "topics": [
            ("perovskite solar cell stability", "accelerated ageing under heat and light", "encapsulated test cells", "moisture ingress drives most early degradation"),
            ("self-healing polymers", "microcapsules of healing agent", "fractured epoxy samples", "healed samples recover much of their original toughness"),
            ("solid-state battery electrolytes", "ceramic and sulfide electrolytes", "lithium metal test cells", "dendrites can still grow along grain boundaries"),
            ("graphene membranes for desalination", "nanoporous graphene sheets", "salt water filtration tests", "control of pore size decides salt rejection"),
            ("high-entropy alloys", "arc melting of multi-element mixtures", "tensile tests at low temperature", "some alloys become tougher as temperature falls"),
            ("concrete with recycled aggregate", "compressive strength testing", "mixes with crushed demolition waste", "strength drops modestly as recycled content rises"),
            ("corrosion-resistant coatings for steel", "salt spray chamber exposure", "coated bridge steel panels", "zinc-rich primers delay rust the longest"),
            ("biodegradable packaging plastics", "composting trials", "polylactic acid films", "degradation needs industrial composting temperatures"),
        ],
        "motivations": ["laboratory records rarely survive the move to production", "durability decides whether a material is used at all", "cheaper processing could open new markets"],
        "open": ["how samples behave after years in service", "whether processing can scale up cheaply", "what happens at the end of the material's life"],
        "angles": ["long-term durability", "manufacturing at scale", "environmental cost"],
    },
    "economics": {
        "topics": [
            ("minimum wage effects on employment", "difference-in-differences across regions", "payroll records from small businesses", "moderate increases show small employment effects"),
            ("remote work and productivity", "randomised trials in firms", "call-centre and software teams", "hybrid schedules keep output while reducing quits"),
            ("microfinance and household income", "randomised rollouts of loans", "villages in several countries", "average income gains are modest"),
            ("carbon pricing and emissions", "comparisons of taxed and untaxed sectors", "national emissions inventories", "a carbon tax cut emissions without slowing growth"),
            ("housing supply and rents", "case studies of zoning reform", "rental listings in growing cities", "new construction eases rents in nearby older buildings"),
            ("behavioural nudges for retirement saving", "default enrolment experiments", "employer pension plans", "automatic enrolment raises participation sharply"),
            ("mobile money and financial inclusion", "household panel surveys", "rural areas with new mobile money agents", "access to mobile money helps households absorb shocks"),
            ("tariffs and consumer prices", "import price data", "goods hit by recent tariffs", "most of the tariff cost passed through to domestic buyers"),
        ],
        "motivations": ["policy debates often run ahead of the evidence", "small design choices change who gains and who loses", "average effects can hide large differences between groups"],
        "open": ["how effects differ between groups", "whether short-run effects persist", "how general equilibrium effects change the picture"],
        "angles": ["effects on low-income households", "short-run against long-run effects", "policy design"],
    },
    "public health": {
        "topics": [
            ("sugar taxes and soft drink consumption", "before-and-after sales analysis", "cities that introduced a beverage tax", "purchases of taxed drinks fell noticeably"),
            ("air pollution and childhood asthma", "cohort studies with exposure models", "children living near major roads", "higher nitrogen dioxide exposure raises asthma risk"),
            ("handwashing campaigns in schools", "cluster randomised trials", "primary schools", "absences from infections dropped"),
            ("telemedicine for rural patients", "observational comparisons of visits", "rural clinics", "video visits cut travel without worse outcomes"),
            ("vaccine hesitancy and messaging", "survey experiments", "parents of young children", "messages from trusted doctors move intentions most"),
            ("heat waves and hospital admissions", "time-series analysis", "daily admissions in large cities", "admissions rise sharply above local temperature thresholds"),
            ("physical activity and depression", "meta-analysis of trials", "adults with mild depression", "regular exercise reduces symptoms moderately"),
            ("salt reduction in processed food", "reformulation targets", "national food supply data", "gradual cuts go unnoticed by consumers"),
        ],
        "motivations": ["health systems face rising demand with flat budgets", "prevention is cheaper than treatment but harder to fund", "inequalities in health outcomes remain large"],
        "open": ["which groups benefit most", "how long behaviour changes last", "what the programmes cost per life year gained"],
        "angles": ["health inequalities", "cost-effectiveness", "implementation in practice"],
    },
    "linguistics": {
        "topics": [
            ("code-switching in bilingual speech", "corpus annotation", "recorded conversations of bilingual families", "switches cluster at clause boundaries"),
            ("endangered language documentation", "audio and video archiving with speakers", "small speaker communities", "community-led projects keep more materials in use"),
            ("sound change in urban dialects", "acoustic measurement of vowels", "interviews across age groups", "younger speakers lead vowel shifts"),
            ("sign language grammar", "video corpus analysis", "deaf signing communities", "signers use space to track who did what"),
            ("readability of public documents", "readability formulas and user tests", "government forms", "plain rewrites cut filling errors"),
            ("machine translation for low-resource languages", "transfer from related languages", "small parallel corpora", "related high-resource languages boost quality"),
            ("child word learning from picture books", "eye-tracking experiments", "toddlers reading with parents", "repeated reading of the same book helps word learning"),
            ("politeness strategies across cultures", "discourse completion tasks", "students in several countries", "indirect requests vary more than direct ones"),
        ],
        "motivations": ["most of the world's languages are barely described", "language technology serves a handful of languages well", "everyday language use differs from textbook accounts"],
        "open": ["how findings transfer to other languages", "what role the community plays", "how stable the patterns are over time"],
        "angles": ["cross-linguistic comparison", "community involvement", "applications in technology"],
    },
    "astronomy": {
        "topics": [
            ("exoplanet atmospheres", "transmission spectroscopy", "transits of hot Jupiters", "water vapour appears in several atmospheres"),
            ("fast radio bursts", "localisation with radio interferometers", "bursts traced to host galaxies", "some bursts repeat from the same source"),
            ("dark matter in dwarf galaxies", "stellar velocity measurements", "satellite galaxies of the Milky Way", "dwarf galaxies are dominated by dark matter"),
            ("near-Earth asteroid detection", "wide-field survey telescopes", "nightly sky images", "most large near-Earth asteroids are now catalogued"),
            ("solar flare forecasting", "models built on magnetograms", "active regions on the Sun", "complex magnetic regions flare more often"),
            ("gravitational wave astronomy", "laser interferometers", "merging black holes and neutron stars", "merger signals match general relativity"),
            ("light curves of variable stars", "photometric time series", "survey catalogues", "period-luminosity relations give distances"),
            ("satellite constellations and sky surveys", "analysis of image streaks", "survey exposures at twilight", "satellite trails spoil a growing share of images"),
        ],
        "motivations": ["new surveys produce more data than can be inspected by eye", "small samples have shaped much of what is believed", "instrument time is scarce and must be justified"],
        "open": ["what larger samples will show", "how selection effects bias the sample", "which follow-up observations matter most"],
        "angles": ["survey design", "selection effects", "what the next instruments will add"],
    },
    "civil engineering": {
        "topics": [
            ("bridge health monitoring with sensors", "vibration and strain sensors", "highway bridges", "changes in natural frequency reveal damage early"),
            ("permeable pavements for stormwater", "infiltration tests", "parking lots with porous surfaces", "runoff volumes drop when pavements are maintained"),
            ("timber high-rise buildings", "fire and load testing of cross-laminated timber", "mass-timber panels", "charring protects the inner load-bearing core"),
            ("seismic retrofitting of schools", "shake-table tests", "unreinforced masonry walls", "steel bracing greatly reduces collapse risk"),
            ("adaptive traffic signal timing", "field trials at intersections", "urban corridors", "adaptive signals cut delays at busy times"),
            ("flood barriers for coastal cities", "hydraulic modelling", "estuary cities", "movable barriers protect against storm surges"),
            ("3D-printed concrete structures", "layer bonding tests", "printed wall elements", "the time between layers controls bond strength"),
            ("road maintenance planning", "pavement condition surveys", "regional road networks", "early resurfacing is cheaper than late repair"),
        ],
        "motivations": ["ageing infrastructure needs repair faster than budgets allow", "climate change raises the loads structures must bear", "construction is a large source of emissions"],
        "open": ["how designs perform over decades", "what maintenance the systems need", "how codes and standards should change"],
        "angles": ["life-cycle cost", "climate resilience", "design codes"],
    },
    "neuroscience": {
        "topics": [
            ("sleep and memory consolidation", "overnight recall tests with EEG", "adult volunteers", "slow-wave sleep predicts better recall"),
            ("adult neurogenesis in the hippocampus", "staining of post-mortem tissue", "human brain samples", "evidence for new neurons in adults is contested"),
            ("brain-computer interfaces for paralysis", "implanted electrode arrays", "people with spinal cord injury", "decoded signals let users type by thought"),
            ("the gut microbiome and the brain", "germ-free mouse experiments", "mouse behaviour tests", "gut bacteria influence stress responses"),
            ("music training and auditory skills", "longitudinal studies of children", "school music programmes", "trained children discriminate sounds better"),
            ("ageing and processing speed", "reaction time tasks", "adults across the lifespan", "processing speed declines steadily from early adulthood"),
            ("pain perception and expectation", "placebo experiments with brain imaging", "healthy volunteers", "expectation alone changes reported pain"),
            ("decision making under risk", "gambling tasks with imaging", "adult participants", "losses weigh more than equal gains"),
        ],
        "motivations": ["small samples have made many findings hard to replicate", "animal results do not always carry over to people", "new recording methods reveal activity that was hidden before"],
        "open": ["whether the effects replicate in larger samples", "what mechanism explains them", "how individual differences shape the results"],
        "angles": ["replicability", "mechanisms", "clinical applications"],
    },
    "education": {
        "topics": [
            ("retrieval practice in classrooms", "classroom experiments with quizzes", "secondary school science classes", "frequent low-stakes quizzes improve exam scores"),
            ("class size and achievement", "randomised class assignment", "early primary grades", "smaller classes help most in the first years"),
            ("feedback timing in online courses", "A/B tests on course platforms", "large online courses", "immediate feedback helps on simple tasks"),
            ("peer tutoring", "meta-analysis of school studies", "primary and secondary pupils", "both tutors and tutees gain"),
            ("homework and learning outcomes", "survey data linked to test scores", "secondary students", "moderate homework helps more than heavy loads"),
            ("teaching coding to young children", "block-based programming lessons", "primary classrooms", "children learn sequencing and debugging"),
            ("school start times and adolescent sleep", "comparisons of district policies", "high schools that moved start times later", "students slept longer and attended more"),
            ("growth mindset interventions", "large online experiments", "ninth-grade students", "short lessons helped lower-achieving students most"),
        ],
        "motivations": ["teachers have little time to test new methods", "promising pilots often fade when scaled up", "gaps between groups of students remain wide"],
        "open": ["whether the effects last beyond one school year", "how teachers adapt the method", "which students benefit most"],
        "angles": ["classroom practice", "scaling up", "equity between students"],
    },
}


def sentence(text):
    return text[0].upper() + text[1:] + "."


def make_papers():
    rows = []
    n = 0
    for field in FIELDS:
        spec = FIELDS[field]
        for topic, method, data, finding in spec["topics"]:
            for variant in range(3):
                n += 1
                task_id = f"paper-{n:04d}"
                if variant == 0:
                    prompt = f"Write a short research paper on {topic}."
                else:
                    angle = spec["angles"][(variant + below(3, task_id, "angle")) % 3]
                    prompt = f"Write a short research paper on {topic}, focusing on {angle}."
                motivation = pick(spec["motivations"], task_id, "motivation")
                question = pick(spec["open"], task_id, "open")
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
                        "prompt": prompt,
                        "kind": "paper",
                        "context": context,
                        "meta": {"difficulty": difficulty(task_id), "topic": topic, "field": field},
                    }
                )
    order = shuffled(rows, "paper-order")
    # Renumber after shuffling so neighbouring ids are not the same topic.
    for i, row in enumerate(order):
        row["id"] = f"paper-{i + 1:04d}"
    return order


def write(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    papers = make_papers()
    rag = make_rag()
    write(os.path.join(here, "papers.jsonl"), papers)
    write(os.path.join(here, "rag.jsonl"), rag)
    unanswerable = sum(1 for row in rag if not row["labels"]["answerable"])
    print(f"papers.jsonl: {len(papers)} tasks")
    print(f"rag.jsonl: {len(rag)} tasks, {unanswerable} without a relevant passage")


if __name__ == "__main__":
    main()
