"""Spoken reasoning items in the four Big Bench Audio categories, generated with computed answers.

* object counting: "I have a chair, two tables and a lamp. How many objects do I have?"
* navigate: "Take three steps forward. Turn around. Take three steps. Are you back at the start?"
* formal fallacies: a syllogism in a valid or an invalid form; "Is this argument valid or invalid?"
* web of lies: "Ana tells the truth. Ben says Ana lies. ... Does Cal tell the truth?"

An item's id spells out all its parameters; the split comes from ``ticktock.corpus.splits.split_of``.
Each session asks two items of different categories.

Example::

    >>> import random
    >>> item = make_navigate(random.Random(1))
    >>> item.answer in ("yes", "no"), item.id.startswith("bbh/navigate/")
    (True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ticktock.corpus.knowledge import capitalize, with_article
from ticktock.corpus.script import At, Piece, SessionScript, Utterance, after_reply, answer, gap, lead_in, reply_end, speak
from ticktock.corpus.tasks.base import SessionContext

CATEGORIES = ("object_counting", "navigate", "formal_fallacies", "web_of_lies")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen")
THINGS = {  # category (plural) -> (singular, plural) item names
    "fruits": [("apple", "apples"), ("banana", "bananas"), ("orange", "oranges"), ("peach", "peaches"),
               ("plum", "plums"), ("pear", "pears")],
    "vegetables": [("carrot", "carrots"), ("onion", "onions"), ("potato", "potatoes"), ("cabbage", "cabbages"),
                   ("cucumber", "cucumbers")],
    "musical instruments": [("piano", "pianos"), ("violin", "violins"), ("flute", "flutes"),
                            ("trumpet", "trumpets"), ("drum", "drums"), ("guitar", "guitars")],
    "animals": [("cat", "cats"), ("dog", "dogs"), ("rabbit", "rabbits"), ("goat", "goats"), ("cow", "cows")],
    "objects": [("chair", "chairs"), ("table", "tables"), ("lamp", "lamps"), ("bed", "beds"), ("sofa", "sofas"),
                ("desk", "desks")],
}
NAMES = ("Ana", "Ben", "Cal", "Dana", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jade", "Kofi", "Lena", "Milo", "Nora")
ROLES = [("poet", "poets"), ("dreamer", "dreamers"), ("gardener", "gardeners"), ("teacher", "teachers"),
         ("sailor", "sailors"), ("musician", "musicians"), ("baker", "bakers"), ("hiker", "hikers"),
         ("painter", "painters"), ("runner", "runners"), ("singer", "singers"), ("chess player", "chess players")]
FALLACY_FORMS = {  # form -> (valid?, sentence templates)
    "modus_ponens": (True, "Every {a} is {b_}. {n} is {a_}. So {n} is {b_}."),
    "modus_tollens": (True, "Every {a} is {b_}. {n} is not {b_}. So {n} is not {a_}."),
    "chain": (True, "All {as_} are {bs}. All {bs} are {cs}. So all {as_} are {cs}."),
    "exclusion": (True, "No {as_} are {bs}. All {cs} are {as_}. So no {cs} are {bs}."),
    "affirming_consequent": (False, "Every {a} is {b_}. {n} is {b_}. So {n} is {a_}."),
    "denying_antecedent": (False, "Every {a} is {b_}. {n} is not {a_}. So {n} is not {b_}."),
    "undistributed_middle": (False, "All {as_} are {bs}. All {cs} are {bs}. So all {as_} are {cs}."),
    "conversion": (False, "All {as_} are {bs}. So all {bs} are {as_}."),
}

NAVIGATE_REPLIES = {  # back at the start? -> the reply, then its variants
    True: ("Yes, you are back where you started.", "Yes, you end up where you started.", "Yes, you are back at the start.",
           "Yes, you return to the starting point."),
    False: ("No, you are not back where you started.", "No, you end up somewhere else.",
            "No, you are not back at the start.", "No, you don't return to where you started."),
}
WEB_OF_LIES_REPLIES = {  # does {name} tell the truth? -> the reply, then its variants
    True: ("Yes, {name} tells the truth.", "Yes, {name} is telling the truth.", "Yes, {name} is honest.",
           "Yes, {name} is truthful."),
    False: ("No, {name} lies.", "No, {name} is lying.", "No, {name} tells lies.", "No, {name} is dishonest."),
}


@dataclass(frozen=True)
class ReasoningItem:
    id: str
    category: str
    text: str
    answer: str
    reply: str
    aliases: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()  # other phrasings of the reply, each with the answer


def make_object_counting(rng: random.Random) -> ReasoningItem:
    """A list of items, some from the asked category and maybe some distractors from another."""
    category = rng.choice(list(THINGS))
    kinds = rng.sample(THINGS[category], rng.randint(2, 4))
    counts = [rng.randint(1, 3) for _ in kinds]
    others = [c for c in THINGS if c != category and "objects" not in (c, category)]
    distractors = rng.sample(THINGS[rng.choice(others)], rng.randint(0, 2)) if others else []
    listed = [(k, n) for k, n in zip(kinds, counts)] + [(d, rng.randint(1, 2)) for d in distractors]
    rng.shuffle(listed)
    phrases = [with_article(s) if n == 1 else f"{NUMBER_WORDS[n]} {p}" for (s, p), n in listed]
    listing = ", ".join(phrases[:-1]) + f" and {phrases[-1]}"
    total = sum(counts)
    text = f"I have {listing}. How many {category} do I have?"
    item_id = "bbh/object_counting/" + category.replace(" ", "_") + "/" + ".".join(f"{s}{n}" for (s, _), n in listed)
    number = NUMBER_WORDS[total]
    reply = f"You have {number} {category}."
    variants = (f"That makes {number} {category}.", f"{capitalize(number)} {category} in total.", f"The answer is {number}.")
    return ReasoningItem(item_id, "object_counting", text, number, reply, (str(total),), variants)


def make_navigate(rng: random.Random) -> ReasoningItem:
    """Moves forward/backward/left/right while always facing forward; about half return to the start."""
    moves = [(rng.choice("FBLR"), rng.randint(1, 5)) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.5:  # close the path so that it returns to the start
        opposite = {"F": "B", "B": "F", "L": "R", "R": "L"}
        closing = [(opposite[d], n) for d, n in moves]
        rng.shuffle(closing)
        moves += closing
    x = sum(n * {"L": -1, "R": 1}.get(d, 0) for d, n in moves)
    y = sum(n * {"F": 1, "B": -1}.get(d, 0) for d, n in moves)
    words = {"F": "forward", "B": "backward", "L": "left", "R": "right"}
    steps = [f"Take {NUMBER_WORDS[n]} {'step' if n == 1 else 'steps'} {words[d]}." for d, n in moves]
    text = "Always face forward. " + " ".join(steps) + " Are you back where you started?"
    back = x == 0 and y == 0
    reply, *variants = NAVIGATE_REPLIES[back]
    item_id = "bbh/navigate/" + "-".join(f"{d}{n}" for d, n in moves)
    return ReasoningItem(item_id, "navigate", text, "yes" if back else "no", reply, (), tuple(variants))


def make_formal_fallacy(rng: random.Random) -> ReasoningItem:
    """A syllogism in one of eight forms, half of them valid."""
    form = rng.choice(sorted(FALLACY_FORMS))
    valid, template = FALLACY_FORMS[form]
    (a, as_), (b, bs), (c, cs) = rng.sample(ROLES, 3)
    name = rng.choice(NAMES)
    argument = template.format(a=a, a_=with_article(a), as_=as_, b_=with_article(b), bs=bs, cs=cs, n=name)
    text = capitalize(argument) + " Is this argument valid or invalid?"
    verdict = "valid" if valid else "invalid"
    item_id = f"bbh/formal_fallacies/{form}/{a}/{b}/{c}/{name}".replace(" ", "_")
    variants = (f"This argument is {verdict}.", f"The reasoning here is {verdict}.", f"It is {with_article(verdict)} argument.")
    return ReasoningItem(item_id, "formal_fallacies", text, verdict, f"The argument is {verdict}.", (), variants)


def make_web_of_lies(rng: random.Random) -> ReasoningItem:
    """A chain of people vouching for or accusing the previous one; is the last one truthful?"""
    people = rng.sample(NAMES, rng.randint(3, 5))
    truthful = rng.random() < 0.5
    sentences = [f"{people[0]} {'tells the truth' if truthful else 'lies'}."]
    codes = [f"{people[0]}:{'T' if truthful else 'L'}"]
    for previous, person in zip(people, people[1:]):
        vouches = rng.random() < 0.5
        sentences.append(f"{person} says {previous} {'tells the truth' if vouches else 'lies'}.")
        codes.append(f"{person}:{'T' if vouches else 'L'}")
        truthful = vouches == truthful
    last = people[-1]
    text = " ".join(sentences) + f" Does {last} tell the truth?"
    reply, *variants = (template.format(name=last) for template in WEB_OF_LIES_REPLIES[truthful])
    return ReasoningItem("bbh/web_of_lies/" + "-".join(codes), "web_of_lies", text, "yes" if truthful else "no", reply,
                         (), tuple(variants))


MAKERS = {
    "object_counting": make_object_counting,
    "navigate": make_navigate,
    "formal_fallacies": make_formal_fallacy,
    "web_of_lies": make_web_of_lies,
}


def build_bbh(ctx: SessionContext) -> SessionScript:
    """Two reasoning items of consecutive categories (so every category appears equally often)."""
    categories = [CATEGORIES[ctx.index % 4], CATEGORIES[(ctx.index + 1) % 4]]
    items = [ctx.dealer.draw(ctx.rng, MAKERS[c], lambda item: item.id) for c in categories]
    utterances, actions, answers = [], [], []
    start = lead_in(ctx.rng)
    for turn, item in enumerate(items):
        utterances.append(Utterance("user", "request", (Piece(item.text),), start, True))
        actions.append(speak(turn, item.reply, item.variants))
        answers.append(answer(turn, item.answer, item.aliases))
        start = after_reply(turn, item.reply, gap(ctx.rng))
    return SessionScript(
        task=ctx.task,
        item="+".join(i.id for i in items),
        item_parts=tuple(i.id for i in items),
        utterances=tuple(utterances),
        actions=tuple(actions),
        behaviour={"type": "reasoning", "categories": categories, "respond_after_s": [At(0, "end"), At(1, "end")]},
        busy_until=(reply_end(1, items[1].reply),),
        answers=tuple(answers),
    )
