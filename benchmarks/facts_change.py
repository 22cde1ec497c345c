"""Facts that change: does memory answer "what is X now?" and "what was X on date D?".

A generated set (fixed seed): `subjects` people, each moving city several times (dated
moves), plus distractor facts about the same people (what they like, who they know) and
about nothing in particular. Three ways to store the same moves in a SQLite file:

- keyed: `remember(Fact(..., key="<person>.city", valid_from=move date))`, the moves
  arriving in random order (late arrivals included);
- resolver: no key; each move, in date order, through `remember(..., resolver=
  ContradictionResolver(complete))` with a scripted `complete` that reads the prompt and
  names the candidate about the same person's city (a perfect model: this measures the
  store's side, not a model's judgement);
- plain: no key, no resolver (0.2's behaviour: every move stays live).

Questions: "now" asks `search("<person> lives", top_k=5)` and checks that the first
result holds the current city; "as of" asks the same `as_of` a date between two moves and
checks the city of that time (plain search has no `as_of`: its first result is checked
against the city of that time). `python -m benchmarks.facts_change [--subjects N] [--json]`.
No timing: these are answers, so the numbers are exact for the seed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem import ContradictionResolver, Fact

__all__ = ["Move", "evaluate", "generate", "main"]

CITIES = [
    "Paris", "Berlin", "Lisbon", "Oslo", "Madrid", "Vienna", "Prague", "Dublin", "Warsaw",
    "Athens", "Rome", "Zurich", "Helsinki", "Tallinn", "Riga", "Vilnius", "Sofia", "Zagreb",
    "Porto", "Seville", "Lyon", "Munich", "Hamburg", "Krakow", "Gdansk", "Bergen", "Malmo",
    "Geneva", "Milan", "Naples", "Valencia", "Bilbao", "Ghent", "Utrecht", "Leiden",
]  # fmt: skip
LIKES = ["tea", "coffee", "jazz", "chess", "hiking", "sailing", "painting", "cycling"]
T0 = datetime(2015, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Move:
    person: str
    city: str
    at: datetime


def generate(subjects: int, seed: int = 11) -> tuple[list[list[Move]], list[str]]:
    """Each person's moves in date order (2-5 of them, distinct consecutive cities), and
    the distractor texts."""
    rng = random.Random(seed)
    people: list[list[Move]] = []
    distractors: list[str] = []
    for i in range(subjects):
        person = f"Person{i:05d}"
        when, city, moves = T0 + timedelta(days=rng.randrange(365)), "", []
        for _ in range(rng.randint(2, 5)):
            city = rng.choice([c for c in CITIES if c != city])
            moves.append(Move(person, city, when))
            when += timedelta(days=rng.randint(60, 900))
        people.append(moves)
        distractors.append(f"{person} likes {rng.choice(LIKES)}.")
        distractors.append(f"{person} knows Person{rng.randrange(subjects):05d} from work.")
    for i in range(subjects):
        distractors.append(f"A museum in {rng.choice(CITIES)} opened wing {i}.")
    return people, distractors


def _text(move: Move) -> str:
    return f"{move.person} lives in {move.city}."


def _scripted_model(prompt: str) -> str:
    """A model that always knows: the candidate about the new fact's person and city."""
    new = re.search(r"New fact: (\S+) lives in", prompt)
    if new is None:
        return '{"supersedes": null}'
    for fact_id, text in re.findall(r"- id (\S+): (.*)", prompt):
        if text.startswith(f"{new.group(1)} lives in"):
            return json.dumps({"supersedes": fact_id})
    return '{"supersedes": null}'


def _store(db: Any, people: list[list[Move]], distractors: list[str], way: str, seed: int) -> None:
    rng = random.Random(seed)
    for text in distractors:
        db.facts.remember(Fact(content=text))
    if way == "keyed":
        moves = [m for moves in people for m in moves]
        rng.shuffle(moves)  # late arrivals: an older move may come after a newer one
        for m in moves:
            db.facts.remember(Fact(content=_text(m), key=f"{m.person}.city", valid_from=m.at))
        return
    resolver = ContradictionResolver(_scripted_model) if way == "resolver" else None
    order = sorted((m for moves in people for m in moves), key=lambda m: m.at)
    for m in order:
        valid_from = m.at if way == "resolver" else None
        db.facts.remember(Fact(content=_text(m), valid_from=valid_from), resolver=resolver)


def _first_city(db: Any, person: str, as_of: datetime | None) -> str | None:
    found = db.facts.search(f"{person} lives", top_k=5, as_of=as_of)
    for fact in found:
        match = re.match(rf"{person} lives in (\w+)\.", fact.content)
        if match:
            return match.group(1)
    return None


def evaluate(subjects: int = 1000, seed: int = 11) -> dict[str, dict[str, float]]:
    """Per way: the share of "now" and "as of" questions answered right (first result)."""
    people, distractors = generate(subjects, seed)
    rng = random.Random(seed + 1)
    out: dict[str, dict[str, float]] = {}
    folder = Path(tempfile.mkdtemp(prefix="sqlmem-facts-change-"))
    for way in ("keyed", "resolver", "plain"):
        with sqlmem.open(folder / f"{way}.db") as db:
            _store(db, people, distractors, way, seed)
            now_right = then_right = then_asked = 0
            for moves in people:
                person = moves[0].person
                now_right += _first_city(db, person, None) == moves[-1].city
                k = rng.randrange(len(moves) - 1)  # a day between move k and move k+1
                day = moves[k].at + (moves[k + 1].at - moves[k].at) / 2
                then_asked += 1
                # plain: 0.2 had no `as_of`; its answer is whatever search puts first
                when = None if way == "plain" else day
                then_right += _first_city(db, person, when) == moves[k].city
            out[way] = {
                "now": now_right / len(people),
                "as_of": then_right / then_asked,
                "facts_live": float(db.facts.count()),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.facts_change")
    parser.add_argument("--subjects", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = evaluate(args.subjects, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"facts that change: {args.subjects} subjects, seed {args.seed}")
    print("| way | 'what is X now?' | 'what was X on D?' | live facts |")
    print("|---|---|---|---|")
    for way, r in results.items():
        print(f"| {way} | {r['now']:.1%} | {r['as_of']:.1%} | {int(r['facts_live'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
