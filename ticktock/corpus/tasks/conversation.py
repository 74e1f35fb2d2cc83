"""Authored conversation material for the turn-taking tasks: short stories told in pieces, remarks to
other people in the room, and unrelated background sentences.

Items: a story item is (topic, chosen sentences, closing question), split by
``ticktock.corpus.splits.split_of`` on its id; side-talk lines and background sentences are items of their
own, a fixed quarter of each held out for evaluation.

Example::

    >>> import random
    >>> story = make_story(random.Random(2))
    >>> 3 <= len(story.sentences) <= 4, story.id.startswith("story/")
    (True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from ticktock.corpus.splits import held_out_forms

MODEL_BACKCHANNELS = ("mm-hmm", "I see", "uh-huh", "right", "okay")
USER_BACKCHANNELS = ("uh-huh", "okay", "right", "yeah", "mm-hmm", "I see")


@dataclass(frozen=True)
class Topic:
    id: str
    sentences: tuple[str, ...]
    questions: tuple[tuple[str, str], ...]  # (question, scripted reply)


TOPICS = (
    Topic("moving", (
        "We finally moved into the new apartment last week.", "The kitchen is tiny, but it gets a lot of morning sun.",
        "Our neighbors brought us a plate of cookies on the first day.", "The boxes are still stacked in the hallway.",
        "My cat keeps hiding under the bed.", "The train station is only five minutes away."), (
        ("Do you have any tips for unpacking faster?", "Unpack the kitchen and bedroom first, and do one room at a time with a box of trash bags nearby."),
        ("How do I help my cat settle in?", "Give your cat one quiet room with food, water and a litter box, and let it explore the rest slowly."))),
    Topic("garden", (
        "I started a small vegetable garden this spring.", "The tomatoes are growing really fast.",
        "Something keeps eating my lettuce at night.", "I water everything early in the morning.",
        "My neighbor gave me some basil seedlings.", "The soil in the back corner stays very wet."), (
        ("What could be eating my lettuce?", "It is probably slugs or snails. Try a ring of crushed eggshells or a shallow beer trap around the plants."),
        ("What grows well in wet soil?", "Mint, watercress and some ferns like wet soil, and so does celery if it gets enough sun."))),
    Topic("guitar", (
        "I bought a used guitar a month ago.", "I practice for about twenty minutes every evening.",
        "My fingertips hurt a lot at first.", "I can play four chords now.",
        "Switching between chords is still slow.", "My sister wants me to play at her birthday."), (
        ("How can I change chords faster?", "Practice switching between just two chords for one minute at a time, slowly at first, and lift all your fingers together."),
        ("What kind of song should I learn first?", "Pick a song with only three or four chords, like a simple folk tune, and play it slowly before you speed up."))),
    Topic("new_job", (
        "I started a new job on Monday.", "The office is in a tall building downtown.",
        "Everyone on my team has been really friendly.", "There is so much new software to learn.",
        "My manager asked me to lead a small project.", "I still get lost finding the meeting rooms."), (
        ("How do I make a good first impression?", "Be curious, ask good questions, write things down, and deliver one small task well and on time."),
        ("How should I start leading the project?", "Meet each person on the project, agree on one clear goal, and write down who does what by when."))),
    Topic("coast_trip", (
        "Last weekend we drove to the coast.", "It rained the whole first day.", "On Sunday the sun finally came out.",
        "We found a tiny restaurant that served amazing fish soup.", "My son collected a bag full of shells.",
        "The drive home took almost six hours."), (
        ("What can we do with all those shells?", "You could wash them and glue them onto a picture frame, or fill a glass jar to keep as a souvenir."),
        ("How can we make long drives easier for kids?", "Plan a stop every two hours, pack snacks, and bring audiobooks or car games like I spy."))),
    Topic("baking", (
        "I tried baking bread for the first time yesterday.", "The dough did not rise very much.",
        "I left it in a cold kitchen overnight.", "It came out dense and flat.", "It still tasted good with butter.",
        "My grandmother used to bake every Sunday."), (
        ("Why didn't my dough rise?", "The kitchen was probably too cold, or the yeast was old. Let the dough rise somewhere warm until it doubles."),
        ("What bread is easy for beginners?", "A simple no knead loaf is easiest. You mix flour, water, salt and yeast and let time do the work."))),
    Topic("running", (
        "I have been training for a five kilometer race.", "I run three times a week before work.",
        "Last week my knee started to ache.", "I bought new running shoes on Saturday.",
        "My best time so far is thirty-one minutes.", "The race is in two weeks."), (
        ("What should I do about my knee?", "Rest it for a few days, ice it after runs, and see a doctor if the pain does not go away."),
        ("How should I prepare in the last week?", "Run shorter and easier in the final week, sleep well, and do not try anything new on race day."))),
    Topic("shelter_dog", (
        "We adopted a dog from the shelter.", "She is a three year old mixed breed.", "She is very shy around other dogs.",
        "She loves long walks in the park.", "She barks whenever the doorbell rings.", "She sleeps on the sofa when we go out."), (
        ("How can I stop her barking at the doorbell?", "Ring the bell often while rewarding her for staying calm, so the sound stops being a big event."),
        ("How do I help her with other dogs?", "Start at a distance from calm dogs, reward her for relaxed behavior, and let her move closer slowly."))),
    Topic("book_club", (
        "My friends and I started a book club.", "We meet on the first Friday of every month.",
        "Last month we read a long mystery novel.", "Half of the group did not finish it.",
        "We usually meet at a small cafe near my home.", "Next month it is my turn to choose the book."), (
        ("What kind of book should I choose?", "Pick a shorter book with a strong story and plenty to discuss, maybe a classic novel under three hundred pages."),
        ("How can I get everyone to finish the book?", "Choose shorter books, announce them early, and maybe split long ones across two meetings."))),
    Topic("kitchen_paint", (
        "We decided to repaint the kitchen.", "The old walls are a dark green.", "My partner wants a bright yellow.",
        "I would prefer a soft white.", "We have to finish before my parents visit.",
        "The paint store closes early on weekends."), (
        ("How can we pick a color we both like?", "Buy small sample pots, paint large patches on the wall, and look at them in morning and evening light."),
        ("How many coats do we need over dark green?", "Use a primer first, then two coats of the new color, so the dark green does not show through."))),
)

SIDE_TALK = (
    "Hang on, honey, I'll be there in a minute.", "Sorry, can you close the door, please?",
    "Yes, I'll take the coffee, thanks.", "Just a second, I'm on the phone.", "Kids, please keep it down for a moment.",
    "No, the keys are on the kitchen table.", "Thanks, just leave it by the door.", "Hold on, I'm almost done here.",
    "Can you grab the mail on your way in?", "I'll call you back in five minutes, okay?",
    "Dinner is in the oven, take it out at six.", "Tell your brother to get his shoes on.",
    "Yes, the blue one is fine, thank you.", "Can you turn the music down a little?",
    "I'll be right with you, just one second.", "Did you feed the dog this morning?",
)

BACKGROUND = (
    "The meeting has been moved to Thursday afternoon.", "Did anyone see where I left my glasses?",
    "The weather is supposed to clear up by tonight.", "We are out of milk again.",
    "The game starts at eight, so we should eat early.", "I think the printer is jammed.",
    "Your sister called while you were out.", "The train was twenty minutes late today.",
    "Remember to water the plants before you go.", "I can't find the remote anywhere.",
    "The new bakery on the corner is really good.", "Somebody left the back door open.",
    "The package should arrive on Monday.", "It is getting cold, close the window.",
    "We need to book the hotel for the wedding.", "The kids have a day off school on Friday.",
    "I forgot my umbrella at the office.", "The neighbors are painting their fence.",
    "Can we have pasta for dinner tonight?", "The car needs new tires before winter.",
)


@dataclass(frozen=True)
class Story:
    id: str
    sentences: tuple[str, ...]
    question: str
    reply: str


def make_story(rng: random.Random) -> Story:
    """Three or four sentences of one topic, in their order, then one of its questions."""
    topic = rng.choice(TOPICS)
    chosen = sorted(rng.sample(range(len(topic.sentences)), rng.randint(3, 4)))
    which = rng.randrange(len(topic.questions))
    question, reply = topic.questions[which]
    item_id = f"story/{topic.id}/{'.'.join(map(str, chosen))}/q{which}"
    return Story(item_id, tuple(topic.sentences[i] for i in chosen), question, reply)


@dataclass(frozen=True)
class Line:
    """A side-talk line or a background sentence, as an item."""

    id: str
    text: str


def _lines(kind: str, texts: tuple[str, ...], split: str) -> tuple[Line, ...]:
    """The lines of ``split``: a fixed quarter of them (lowest stable hashes) is held out for evaluation."""
    lines = [Line(f"{kind}/{n}", text) for n, text in enumerate(texts)]
    held_out = set(held_out_forms(kind, [line.id for line in lines]))
    return tuple(line for line in lines if (line.id in held_out) == (split == "eval"))


@lru_cache(maxsize=None)
def side_talk_lines(split: str) -> tuple[Line, ...]:
    """Remarks the user makes to someone else in the room."""
    return _lines("side_talk", SIDE_TALK, split)


@lru_cache(maxsize=None)
def background_lines(split: str) -> tuple[Line, ...]:
    """Unrelated sentences a second voice says in the background."""
    return _lines("background", BACKGROUND, split)
