"""Retrieval quality of fact search: BM25 "any", "vector" and "hybrid" (SPEC 17), with the
offline WordLlama model. `python -m benchmarks.retrieval [--distractors N] [--history]
[--onnx DIR] [--json]`.

`--history` stores the same corpus as conversation history instead (one message per memory,
in a shuffled order, sessions of `SESSION_LENGTH` messages) and searches it with
`history.search`: there a message's neighbours are unrelated to it, the case where a ranking
that lifts a turn by its neighbours (hybrid history search) could only lose. `--onnx DIR`
uses an `OnnxEmbedder` over that folder instead of WordLlama.

The corpus, written by hand, each fact with two questions a person would ask:
- 40 "paraphrase" facts about one user, whose questions mostly share no word with the
  answer ("Any restaurant ideas for me?" / "The user is vegetarian.");
- 20 "specific" facts (codes, names, numbers), whose questions carry the rare term and
  paraphrase the rest ("status of SQM-3141?");
hidden among generated distractors. Reported: recall@1/5/10 and MRR@10 per mode, per
question set and over all 120.

Why these proportions. Questions: an agent's memory is asked both ways, and which way wins
decides which leg helps: paraphrases are what lexical search cannot do (the reason
vectors exist), exact names, ids and numbers are what averaged static word vectors blur.
Two to one reflects that most questions people ask an assistant about themselves are
phrased in their own words, while a steady share names a person, place, code or number;
both sets are reported apart so a reader can weigh them otherwise. Distractors: a real
memory is not a set of answers among unrelated text. They come in equal thirds: work notes
sharing the questions' common words (eat, city, name, weekend); facts about the people
around the user on the same topics as the user's own ("The user's brother Tom is vegan.",
the near-misses of a paraphrase); and codes, ids, names and numbers shaped like the
specifics ("Ticket SQM-5120 tracks ...", the near-misses of an exact-term question). Until
session 6 all distractors were work notes: words like "is", "in" or "the user" then
appeared almost only in the answers, which made them rare, so BM25 ranked answers by
function words, and no exact-term question had a near-miss. The thirds were fixed before
measuring and not tuned to a result.

What it does not measure: real multi-session conversations (benchmarks/recall.py does,
on LoCoMo), and speed (benchmarks/vector_workloads.py does).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

PAIRS: list[tuple[str, tuple[str, str]]] = [
    ("The user is vegetarian.", ("Any restaurant ideas for me?", "what do I eat?")),
    ("The user lives in Lisbon.", ("Which city do I live in?", "where is my home?")),
    ("The user's dog is called Rex.", ("what's my dog's name?", "what is my pet called?")),
    ("The user is allergic to peanuts.", ("can I have satay sauce?", "any food allergies?")),
    ("The user works as a nurse.", ("what is my job?", "where do I work, a hospital?")),
    (
        "The user's sister Ana lives in Porto.",
        ("where does my sister live?", "tell me about my sibling"),
    ),
    ("The user prefers tea over coffee.", ("what hot drink should I order?", "do I like coffee?")),
    (
        "The user runs every Sunday morning.",
        ("what do I do on weekends?", "how often do I go running?"),
    ),
    (
        "The user speaks Portuguese and German.",
        ("which languages do I know?", "can I read a German menu?"),
    ),
    ("The user's birthday is on 3 March.", ("when is my birthday?", "what day was I born?")),
    (
        "The user is learning to play the cello.",
        ("what instrument am I practising?", "my music lessons?"),
    ),
    ("The user drives an electric car.", ("what kind of vehicle do I own?", "do I need petrol?")),
    (
        "The user hates flying and takes trains.",
        ("how should I travel to Madrid?", "book me a plane?"),
    ),
    ("The user's partner is called Sam.", ("who is my partner?", "what is my spouse's name?")),
    (
        "The user has two children, Maya and Leo.",
        ("how many kids do I have?", "names of my children"),
    ),
    (
        "The user is training for a marathon in May.",
        ("what race am I preparing for?", "my fitness goal"),
    ),
    (
        "The user's favourite author is Ursula K. Le Guin.",
        ("recommend me a novel", "who do I like to read?"),
    ),
    ("The user wakes up at 6 am.", ("what time do I get up?", "am I an early riser?")),
    ("The user is saving money for a house.", ("what am I saving for?", "my financial goals")),
    (
        "The user keeps a vegetable garden.",
        ("do I grow tomatoes?", "what hobbies do I have outdoors?"),
    ),
    ("The user is colour blind.", ("can I tell red from green?", "any problems with my eyes?")),
    (
        "The user's laptop runs Linux.",
        ("which operating system do I use?", "will this Windows app work for me?"),
    ),
    (
        "The user volunteers at an animal shelter.",
        ("where do I volunteer?", "do I help with pets?"),
    ),
    ("The user cannot eat gluten.", ("can I eat bread?", "is pasta fine for me?")),
    (
        "The user plays chess online every evening.",
        ("what game do I play at night?", "my favourite board game"),
    ),
    ("The user moved from Berlin last year.", ("where did I live before?", "my previous city")),
    ("The user is afraid of spiders.", ("what am I scared of?", "any phobias?")),
    ("The user's manager is called Priya.", ("who is my boss?", "who do I report to?")),
    ("The user takes the 8:15 train to work.", ("how do I commute?", "what time is my train?")),
    ("The user is lactose intolerant.", ("can I drink milk?", "is cheese a problem for me?")),
    ("The user supports FC Porto.", ("which football team do I follow?", "my favourite club")),
    (
        "The user's flat is on the fourth floor.",
        ("which floor do I live on?", "is there a lift problem for me?"),
    ),
    (
        "The user wants to learn Japanese.",
        ("what language am I planning to study?", "my next course"),
    ),
    ("The user donates blood twice a year.", ("do I give blood?", "how often do I donate?")),
    (
        "The user is a night owl on weekends.",
        ("do I sleep late on Saturdays?", "my weekend sleep habits"),
    ),
    (
        "The user meditates for ten minutes daily.",
        ("do I have a mindfulness routine?", "how do I relax each day?"),
    ),
    (
        "The user's favourite colour is green.",
        ("what colour do I like best?", "pick a colour for my room"),
    ),
    ("The user collects vinyl records.", ("what do I collect?", "gift idea: music on LP?")),
    (
        "The user had knee surgery in 2024.",
        ("any injuries I should mention?", "what operation did I have?"),
    ),
    (
        "The user prefers short answers.",
        ("how should you reply to me?", "do I like long explanations?"),
    ),
]

#: Specifics an agent must recall by their exact names, codes or numbers: questions carry the
#: rare term and paraphrase the rest. Static word vectors blur names; BM25 does not.
SPECIFIC: list[tuple[str, tuple[str, str]]] = [
    (
        "The wifi password at the Alfama flat is tangerine42.",
        ("Alfama wifi?", "what is the password for Alfama"),
    ),
    (
        "Ticket SQM-3141 tracks the slow export bug.",
        ("status of SQM-3141?", "what is SQM-3141 about"),
    ),
    ("The staging server is called kestrel.", ("how do I reach kestrel?", "what runs on kestrel")),
    ("Dr. Okonkwo is the user's dentist.", ("when did I see Okonkwo?", "who is Okonkwo")),
    ("The user's locker code at the gym is 7719.", ("what's 7719 for?", "gym locker number")),
    (
        "Invoice 2024-117 was paid on 2 April.",
        ("was invoice 2024-117 settled?", "payment date of 2024-117"),
    ),
    ("The user's car plate is AB-12-CD.", ("whose plate is AB-12-CD?", "registration AB-12-CD")),
    (
        "The team's Slack channel is #kite-ops.",
        ("where is kite-ops?", "which channel for kite ops"),
    ),
    ("Brunch with Ines is at Dear Breakfast.", ("where do I meet Ines?", "brunch place with Ines")),
    ("The user's bike is a Brompton M6L.", ("what model is my Brompton?", "my folding bike model")),
    (
        "The repo for the thesis is gitlab.com/ut/quanta.",
        ("link to quanta repo", "where is the quanta code"),
    ),
    (
        "Grandma Rosa's recipe uses saffron.",
        ("what spice in Rosa's recipe?", "Rosa's secret ingredient"),
    ),
    ("The user's insurance policy number is PX-55812.", ("what is PX-55812?", "policy PX-55812")),
    (
        "The Helsinki trip is booked for 14 June.",
        ("when is Helsinki?", "dates of the Helsinki trip"),
    ),
    (
        "Oskar from Zurich sends the quarterly numbers.",
        ("who is Oskar?", "who sends quarterly numbers from Zurich"),
    ),
    ("The user's router is a Fritzbox 7590.", ("which Fritzbox do I have?", "my router model")),
    (
        "The podcast the user likes is Hardcore History.",
        ("what podcast do I listen to?", "Hardcore History episodes"),
    ),
    (
        "The cat's vet is Clinica Veterinaria Alvalade.",
        ("phone of the Alvalade vet", "where does the cat see the vet"),
    ),
    ("The user's employee id is E-40921.", ("what is E-40921?", "my employee number")),
    (
        "The book club reads Solaris in October.",
        ("what does the book club read?", "when is Solaris discussed"),
    ),
]

_TOPICS = ["project", "meeting", "invoice", "release", "ticket", "sprint", "budget", "report"]
_VERBS = ["discussed", "approved", "postponed", "reviewed", "closed", "opened", "planned"]
_OBJECTS = [
    "the new dashboard",
    "a restaurant booking for the team",
    "my travel expenses",
    "the Sunday deployment",
    "what to eat at the offsite",
    "the city office move",
    "the coffee machine repair",
    "the weekend on-call rota",
    "the language of the docs",
    "the name of the new service",
    "the early train to the client",
    "the car park permits",
]
_NAMES = ["Ana", "Sam", "Priya", "Leo", "Tom", "Mei", "Omar", "Lena", "Raj", "Eva", "Jonas"]
_CITIES = ["Lisbon", "Porto", "Berlin", "Madrid", "Zurich", "Oslo", "Lyon", "Krakow"]
_RELATIONS = ["brother", "colleague", "neighbour", "cousin", "friend", "mother", "flatmate"]
#: Facts about the people around the user, on the same topics as the user's own facts
#: (food, places, work, hobbies, health): the near-misses of a paraphrase question.
_PEOPLE = [
    "is vegan",
    "lives in {city}",
    "works as a teacher",
    "is allergic to cats",
    "prefers coffee over tea",
    "plays tennis on Saturdays",
    "speaks French and Italian",
    "drives a diesel van",
    "is learning to play the piano",
    "supports {city} FC",
    "moved to {city} in 2023",
    "collects old maps",
    "wakes up at 9 am",
    "is training for a triathlon",
    "has a cat called Miso",
]
#: Codes, ids and numbers of the same shapes as SPECIFIC's: an exact-term question must
#: beat these, which BM25 does (the term is rare) and averaged word vectors may not.
_ENTITIES = [
    "Ticket SQM-{n4} tracks the {thing} bug.",
    "Invoice {year}-{n3} was paid on {day} {month}.",
    "The {place} door code is {n4}.",
    "The user's {item} serial number is SN-{n5}.",
    "Policy PX-{n5} covers the {item}.",
    "The {env} server is called {bird}.",
    "{name} from {city} sends the {period} figures.",
    "The wifi password at the {city} office is {word}{n2}.",
    "Employee id E-{n5} belongs to {name}.",
    "The {city} trip is booked for {day} {month}.",
]
_FILL = {
    "thing": ["login timeout", "slow import", "memory leak", "date parsing", "cache miss"],
    "month": ["January", "March", "May", "July", "September", "November"],
    "place": ["office", "garage", "storage room", "bike shed"],
    "item": ["laptop", "phone", "camera", "bicycle", "washing machine"],
    "env": ["build", "test", "backup", "metrics"],
    "bird": ["falcon", "heron", "osprey", "wren", "magpie", "plover"],
    "period": ["monthly", "weekly", "annual"],
    "word": ["mango", "copper", "violet", "harbour"],
}


def distractors(count: int, rng: random.Random) -> list[str]:
    """Generated memories the answers hide among, in thirds: work notes that share the
    questions' common words (eat, city, name, weekend ...); facts about the people around
    the user, on the user facts' topics ("The user's brother Tom is vegan."); and codes,
    ids, names and numbers shaped like SPECIFIC's ("Ticket SQM-5120 tracks ...")."""
    out: list[str] = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            out.append(
                f"{rng.choice(_TOPICS).capitalize()} {i}: {rng.choice(_VERBS)}"
                f" {rng.choice(_OBJECTS)} with {rng.choice([*_NAMES[:4], 'the team'])}."
            )
        elif kind == 1:
            what = rng.choice(_PEOPLE).format(city=rng.choice(_CITIES))
            out.append(f"The user's {rng.choice(_RELATIONS)} {rng.choice(_NAMES)} {what}.")
        else:
            out.append(_entity(rng))
    return out


def _entity(rng: random.Random) -> str:
    slots = {key: rng.choice(values) for key, values in _FILL.items()}
    return rng.choice(_ENTITIES).format(
        n2=rng.randrange(10, 100),
        n3=rng.randrange(100, 1000),
        n4=rng.randrange(1000, 10000),
        n5=rng.randrange(10000, 100000),
        year=rng.choice([2023, 2024, 2025]),
        day=rng.randrange(1, 29),
        name=rng.choice(_NAMES),
        city=rng.choice(_CITIES),
        **slots,
    )


#: Messages per session when the corpus is stored as history (`--history`).
SESSION_LENGTH = 20


def _embedder(onnx_dir: str | None) -> object:
    if onnx_dir is not None:
        from sqlmem.embedders import OnnxEmbedder

        return OnnxEmbedder(onnx_dir)
    from sqlmem.embedders import WordLlamaEmbedder

    return WordLlamaEmbedder()


def evaluate(
    distractor_count: int, seed: int = 7, *, history: bool = False, onnx_dir: str | None = None
) -> dict[str, dict[str, float]]:
    import sqlmem

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="sqlmem-retrieval-"))
    if history:
        return _evaluate_history(distractor_count, rng, folder, _embedder(onnx_dir))
    results: dict[str, dict[str, float]] = {}
    with sqlmem.open(folder / "memory.db", embedder=_embedder(onnx_dir)) as db:
        sets = {"paraphrase": PAIRS, "specific": SPECIFIC}
        db.facts.index_many(
            [
                sqlmem.Fact(id=f"{name}{i}", content=fact)
                for name, pairs in sets.items()
                for i, (fact, _) in enumerate(pairs)
            ]
            + [sqlmem.Fact(content=text) for text in distractors(distractor_count, rng)]
        )
        for mode in ("any", "vector", "hybrid"):
            ranks: dict[str, list[int | None]] = {"paraphrase": [], "specific": []}
            for name, pairs in sets.items():
                for i, (_, qs) in enumerate(pairs):
                    for question in qs:
                        found = [f.id for f in db.facts.search(question, top_k=10, mode=mode)]
                        answer = f"{name}{i}"
                        ranks[name].append(found.index(answer) + 1 if answer in found else None)
            ranks["all"] = ranks["paraphrase"] + ranks["specific"]
            for name, found_ranks in ranks.items():
                results[f"{mode} ({name})"] = _metrics(found_ranks)
    return results


def _evaluate_history(
    distractor_count: int, rng: random.Random, folder: Path, embedder: object
) -> dict[str, dict[str, float]]:
    """The corpus as conversation history: every memory one message, answers and
    distractors shuffled together, cut into sessions of `SESSION_LENGTH` messages."""
    import sqlmem

    sets = {"paraphrase": PAIRS, "specific": SPECIFIC}
    texts = [
        (f"{name}{i}", fact) for name, pairs in sets.items() for i, (fact, _) in enumerate(pairs)
    ]
    texts += [("", text) for text in distractors(distractor_count, rng)]
    rng.shuffle(texts)
    answer_of: dict[tuple[str, int], str] = {}
    results: dict[str, dict[str, float]] = {}
    with sqlmem.open(folder / "memory.db", embedder=embedder) as db:
        for start in range(0, len(texts), SESSION_LENGTH):
            session = f"session-{start // SESSION_LENGTH}"
            chunk = texts[start : start + SESSION_LENGTH]
            seqs = db.history.append_many(
                session, [sqlmem.Message(role="user", content=text) for _, text in chunk]
            )
            keys = [key for key, _ in chunk]
            answer_of.update(((session, seq), key) for seq, key in zip(seqs, keys, strict=True))
        for mode in ("any", "vector", "hybrid"):
            ranks: dict[str, list[int | None]] = {"paraphrase": [], "specific": []}
            for name, pairs in sets.items():
                for i, (_, qs) in enumerate(pairs):
                    for question in qs:
                        hits = db.history.search(question, top_k=10, mode=mode)
                        found = [answer_of[(m.session_id or "", m.seq or 0)] for m in hits]
                        answer = f"{name}{i}"
                        ranks[name].append(found.index(answer) + 1 if answer in found else None)
            ranks["all"] = ranks["paraphrase"] + ranks["specific"]
            for name, found_ranks in ranks.items():
                results[f"{mode} ({name})"] = _metrics(found_ranks)
    return results


def _metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "recall@1": sum(r is not None and r <= 1 for r in ranks) / n,
        "recall@5": sum(r is not None and r <= 5 for r in ranks) / n,
        "recall@10": sum(r is not None for r in ranks) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None) / n,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval")
    parser.add_argument("--distractors", type=int, default=2000)
    parser.add_argument("--history", action="store_true", help="search it as history")
    parser.add_argument("--onnx", metavar="DIR", default=None, help="an OnnxEmbedder folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = evaluate(args.distractors, history=args.history, onnx_dir=args.onnx)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    facts = len(PAIRS) + len(SPECIFIC)
    print(f"{facts} facts, {2 * facts} questions, {args.distractors} distractors")
    print(f"{'mode (questions)':22} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
    for mode, m in sorted(results.items(), key=lambda kv: (kv[0].split()[1], kv[0])):
        print(
            f"{mode:22} {m['recall@1']:6.3f} {m['recall@5']:6.3f} {m['recall@10']:6.3f}"
            f" {m['mrr@10']:7.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
