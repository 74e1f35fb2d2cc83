"""Authored conversation material for the turn-taking tasks: short stories told in pieces, remarks to
other people in the room, and unrelated background sentences.

Every closing question has a scripted reply and four authored variants of it (the same advice in
other words, within a few words of its length).

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
    questions: tuple[tuple[str, str, tuple[str, ...]], ...]  # (question, scripted reply, its variants)


TOPICS = (
    Topic("moving", (
        "We finally moved into the new apartment last week.", "The kitchen is tiny, but it gets a lot of morning sun.",
        "Our neighbors brought us a plate of cookies on the first day.", "The boxes are still stacked in the hallway.",
        "My cat keeps hiding under the bed.", "The train station is only five minutes away."), (
        ("Do you have any tips for unpacking faster?", "Unpack the kitchen and bedroom first, and do one room at a time with a box of trash bags nearby.",
         ("Start with the kitchen and the bedroom, then finish one room at a time, with trash bags close by.",
          "Do the kitchen and bedroom first. Then take one room at a time and keep trash bags nearby.",
          "Open the kitchen and bedroom boxes first, work through one room at a time, and keep trash bags handy.",
          "Begin with the rooms you use most, the kitchen and bedroom, then go room by room with trash bags nearby.")),
        ("How do I help my cat settle in?", "Give your cat one quiet room with food, water and a litter box, and let it explore the rest slowly.",
         ("Set up one quiet room with food, water and a litter box, then let your cat explore the rest slowly.",
          "Start your cat in a single quiet room with food, water and a litter box, and open up the rest gradually.",
          "Keep your cat in one calm room with its food, water and litter box at first, then let it explore slowly.",
          "Give it a quiet room of its own with food, water and a litter box, and let it discover the rest slowly.")))),
    Topic("garden", (
        "I started a small vegetable garden this spring.", "The tomatoes are growing really fast.",
        "Something keeps eating my lettuce at night.", "I water everything early in the morning.",
        "My neighbor gave me some basil seedlings.", "The soil in the back corner stays very wet."), (
        ("What could be eating my lettuce?", "It is probably slugs or snails. Try a ring of crushed eggshells or a shallow beer trap around the plants.",
         ("Most likely slugs or snails. Put a ring of crushed eggshells or a shallow beer trap around the plants.",
          "It sounds like slugs or snails. A ring of crushed eggshells or a shallow beer trap around the plants can help.",
          "Slugs or snails are the usual culprits at night. Try crushed eggshells or a shallow beer trap around the plants.",
          "I would guess slugs or snails. Surround the plants with crushed eggshells, or set a shallow beer trap nearby.")),
        ("What grows well in wet soil?", "Mint, watercress and some ferns like wet soil, and so does celery if it gets enough sun.",
         ("Mint, watercress and some ferns do well in wet soil, and celery too if it gets enough sun.",
          "Try mint, watercress or ferns, which like wet soil. Celery works as well if it gets enough sun.",
          "Wet soil suits mint, watercress and some ferns, and also celery when it gets enough sun.",
          "Plants like mint, watercress and many ferns enjoy wet soil, and celery does too with enough sun.")))),
    Topic("guitar", (
        "I bought a used guitar a month ago.", "I practice for about twenty minutes every evening.",
        "My fingertips hurt a lot at first.", "I can play four chords now.",
        "Switching between chords is still slow.", "My sister wants me to play at her birthday."), (
        ("How can I change chords faster?", "Practice switching between just two chords for one minute at a time, slowly at first, and lift all your fingers together.",
         ("Pick two chords and switch between them for a minute at a time, slowly at first, lifting all your fingers together.",
          "Drill just two chords for one minute at a time. Go slowly at first and move all your fingers as one.",
          "Practice one pair of chords in one minute bursts, start slowly, and lift your fingers together rather than one by one.",
          "Switch back and forth between two chords for a minute at a time, slowly at first, moving all your fingers together.")),
        ("What kind of song should I learn first?", "Pick a song with only three or four chords, like a simple folk tune, and play it slowly before you speed up.",
         ("Choose a song with just three or four chords, such as a simple folk tune, and play it slowly before speeding up.",
          "Start with a simple folk tune that uses only three or four chords, and play it slowly before you speed up.",
          "Go for a song with three or four chords, like an easy folk song. Play it slowly first, then speed up.",
          "A simple folk tune with only three or four chords is ideal. Play it slowly until it feels easy, then speed up.")))),
    Topic("new_job", (
        "I started a new job on Monday.", "The office is in a tall building downtown.",
        "Everyone on my team has been really friendly.", "There is so much new software to learn.",
        "My manager asked me to lead a small project.", "I still get lost finding the meeting rooms."), (
        ("How do I make a good first impression?", "Be curious, ask good questions, write things down, and deliver one small task well and on time.",
         ("Stay curious, ask good questions, take notes, and deliver one small task well and on time.",
          "Ask good questions, write things down, and make sure your first small task is done well and on time.",
          "Show curiosity, ask thoughtful questions, keep notes, and finish one small task well and on time.",
          "Be curious and ask good questions. Write things down, and deliver one small task well and on time.")),
        ("How should I start leading the project?", "Meet each person on the project, agree on one clear goal, and write down who does what by when.",
         ("Talk to each person on the project, agree on one clear goal, and write down who does what by when.",
          "First meet everyone on the project. Then agree on one clear goal and note who does what by when.",
          "Have a short meeting with each person, set one clear goal together, and write down who does what by when.",
          "Get to know each person on the project, agree on a single clear goal, and record who does what by when.")))),
    Topic("coast_trip", (
        "Last weekend we drove to the coast.", "It rained the whole first day.", "On Sunday the sun finally came out.",
        "We found a tiny restaurant that served amazing fish soup.", "My son collected a bag full of shells.",
        "The drive home took almost six hours."), (
        ("What can we do with all those shells?", "You could wash them and glue them onto a picture frame, or fill a glass jar to keep as a souvenir.",
         ("Wash them and glue them onto a picture frame, or fill a glass jar with them as a souvenir.",
          "You could clean them and decorate a picture frame, or put them in a glass jar as a souvenir of the trip.",
          "Try gluing the washed shells onto a picture frame, or fill a glass jar with them to keep as a souvenir.",
          "After washing them, you could decorate a picture frame, or keep them in a glass jar as a souvenir.")),
        ("How can we make long drives easier for kids?", "Plan a stop every two hours, pack snacks, and bring audiobooks or car games like I spy.",
         ("Stop every two hours, pack plenty of snacks, and bring audiobooks or car games like I spy.",
          "Take a break every two hours, bring snacks, and have audiobooks or games like I spy ready.",
          "Plan breaks every two hours, pack snacks, and keep them busy with audiobooks or car games like I spy.",
          "Build in a stop every two hours, bring snacks, and play audiobooks or car games like I spy.")))),
    Topic("baking", (
        "I tried baking bread for the first time yesterday.", "The dough did not rise very much.",
        "I left it in a cold kitchen overnight.", "It came out dense and flat.", "It still tasted good with butter.",
        "My grandmother used to bake every Sunday."), (
        ("Why didn't my dough rise?", "The kitchen was probably too cold, or the yeast was old. Let the dough rise somewhere warm until it doubles.",
         ("Most likely the kitchen was too cold, or the yeast was old. Next time let it rise somewhere warm until it doubles.",
          "A cold kitchen or old yeast is the usual cause. Let the dough rise in a warm spot until it doubles.",
          "It was probably too cold, or the yeast was past its best. Let the dough rise somewhere warm until it doubles.",
          "Cold air or old yeast usually stops dough rising. Put it somewhere warm and wait until it doubles.")),
        ("What bread is easy for beginners?", "A simple no knead loaf is easiest. You mix flour, water, salt and yeast and let time do the work.",
         ("Try a simple no knead loaf. You just mix flour, water, salt and yeast and let time do the work.",
          "A no knead loaf is the easiest start: mix flour, water, salt and yeast, then let time do the work.",
          "Start with a basic no knead bread. Mix flour, water, salt and yeast, and time does the rest.",
          "The easiest is a simple no knead loaf, where you mix flour, water, salt and yeast and simply wait.")))),
    Topic("running", (
        "I have been training for a five kilometer race.", "I run three times a week before work.",
        "Last week my knee started to ache.", "I bought new running shoes on Saturday.",
        "My best time so far is thirty-one minutes.", "The race is in two weeks."), (
        ("What should I do about my knee?", "Rest it for a few days, ice it after runs, and see a doctor if the pain does not go away.",
         ("Give it a few days of rest, ice it after runs, and see a doctor if the pain does not go away.",
          "Rest your knee for a few days and ice it after running. If the pain stays, see a doctor.",
          "Take a few days off, put ice on it after runs, and have a doctor look at it if the pain continues.",
          "Rest it for a few days, use ice after each run, and visit a doctor if the pain does not go away.")),
        ("How should I prepare in the last week?", "Run shorter and easier in the final week, sleep well, and do not try anything new on race day.",
         ("Keep your runs shorter and easier in the final week, sleep well, and try nothing new on race day.",
          "Ease off in the last week with shorter, easier runs, get good sleep, and try nothing new on race day.",
          "Cut back to short, easy runs in the final week, rest well, and stick to what you know on race day.",
          "In the final week, run less and more gently, sleep well, and avoid anything new on race day.")))),
    Topic("shelter_dog", (
        "We adopted a dog from the shelter.", "She is a three year old mixed breed.", "She is very shy around other dogs.",
        "She loves long walks in the park.", "She barks whenever the doorbell rings.", "She sleeps on the sofa when we go out."), (
        ("How can I stop her barking at the doorbell?", "Ring the bell often while rewarding her for staying calm, so the sound stops being a big event.",
         ("Ring the doorbell often and reward her each time she stays calm, so the sound stops being a big event.",
          "Practice with the bell: ring it often and reward her for staying calm, until the sound is no big deal.",
          "Ring the bell many times a day and reward calm behavior, so the sound becomes boring for her.",
          "Make the doorbell ordinary by ringing it often and rewarding her whenever she stays calm.")),
        ("How do I help her with other dogs?", "Start at a distance from calm dogs, reward her for relaxed behavior, and let her move closer slowly.",
         ("Begin far away from calm dogs, reward her when she is relaxed, and let her move closer slowly.",
          "Keep some distance from calm dogs at first, reward relaxed behavior, and let her get closer little by little.",
          "Start with calm dogs at a distance, reward her for staying relaxed, and slowly let her come closer.",
          "Let her watch calm dogs from far away, reward her for relaxed behavior, and close the gap slowly.")))),
    Topic("book_club", (
        "My friends and I started a book club.", "We meet on the first Friday of every month.",
        "Last month we read a long mystery novel.", "Half of the group did not finish it.",
        "We usually meet at a small cafe near my home.", "Next month it is my turn to choose the book."), (
        ("What kind of book should I choose?", "Pick a shorter book with a strong story and plenty to discuss, maybe a classic novel under three hundred pages.",
         ("Choose a shorter book with a strong story and lots to discuss, perhaps a classic under three hundred pages.",
          "Go for a short book with a gripping story and plenty to talk about, like a classic novel under three hundred pages.",
          "A shorter book with a strong plot and plenty to discuss works well, maybe a classic under three hundred pages.",
          "Pick something short with a strong story and lots to discuss, such as a classic novel under three hundred pages.")),
        ("How can I get everyone to finish the book?", "Choose shorter books, announce them early, and maybe split long ones across two meetings.",
         ("Pick shorter books, announce them early, and split long ones across two meetings.",
          "Choose short books and announce them early. Long ones can be split over two meetings.",
          "Go for shorter books, share the choice early, and spread long ones across two meetings.",
          "Announce each book early, keep them short, and maybe divide long ones over two meetings.")))),
    Topic("kitchen_paint", (
        "We decided to repaint the kitchen.", "The old walls are a dark green.", "My partner wants a bright yellow.",
        "I would prefer a soft white.", "We have to finish before my parents visit.",
        "The paint store closes early on weekends."), (
        ("How can we pick a color we both like?", "Buy small sample pots, paint large patches on the wall, and look at them in morning and evening light.",
         ("Get small sample pots, paint big patches on the wall, and look at them in morning and evening light.",
          "Try sample pots first. Paint large patches on the wall and compare them in morning and evening light.",
          "Buy a few sample pots, paint large squares on the wall, and check them in both morning and evening light.",
          "Paint large test patches from small sample pots, then look at them together in morning and evening light.")),
        ("How many coats do we need over dark green?", "Use a primer first, then two coats of the new color, so the dark green does not show through.",
         ("Start with a primer, then add two coats of the new color, so the dark green does not show through.",
          "Put on a primer first and then two coats of the new color, or the dark green may show through.",
          "You need a coat of primer and then two coats of the new color to hide the dark green.",
          "Prime the walls first, then apply two coats of the new color so no dark green shows through.")))),
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
    variants: tuple[str, ...] = ()  # other phrasings of the reply


def make_story(rng: random.Random) -> Story:
    """Three or four sentences of one topic, in their order, then one of its questions."""
    topic = rng.choice(TOPICS)
    chosen = sorted(rng.sample(range(len(topic.sentences)), rng.randint(3, 4)))
    which = rng.randrange(len(topic.questions))
    question, reply, variants = topic.questions[which]
    item_id = f"story/{topic.id}/{'.'.join(map(str, chosen))}/q{which}"
    return Story(item_id, tuple(topic.sentences[i] for i in chosen), question, reply, variants)


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
