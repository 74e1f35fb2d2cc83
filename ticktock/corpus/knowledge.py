"""The closed knowledge base of TickTock-Bench and its question templates. All text is authored here.

A :class:`Fact` is one (subject, answer) pair of a fact type ("capital": France -> Paris). A
:class:`Template` asks about any fact of its type in one phrasing; templates belong to a *group* that says
which task draws them (``llama``, ``web``, ``trivia`` for the three QA tasks; ``pause`` for pause-handling
requests, where "|" marks the mid-utterance pause; ``casual`` and ``barge`` for the turn-taking tasks).
Every fact has several spoken replies: the reply (:func:`reply_for`) and its variants
(:func:`reply_variants`), from the kind's templates in ``REPLIES`` or written with the fact; each contains
the answer. A question item is a (template, fact) pair; its split is fixed by :func:`ticktock.corpus.splits.form_split`
over all templates of the fact's type, so every fact keeps training phrasings.

Example::

    >>> fact = fact_by_id("capital:france")
    >>> template = template_by_id("capital.llama.1")
    >>> render_question(template, fact), reply_for(fact)
    ('What is the capital of France?', 'The capital of France is Paris.')
    >>> reply_variants(fact)
    ('Paris is the capital of France.', 'The capital city of France is Paris.', 'In France, the capital is Paris.')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ticktock.corpus.script import variants_of
from ticktock.corpus.splits import form_split

GROUPS = ("llama", "web", "trivia", "pause", "casual", "barge")


@dataclass(frozen=True)
class Fact:
    kind: str
    subject: str  # as spoken inside a question, e.g. "the United Kingdom"
    answer: str  # short reference answer
    aliases: tuple[str, ...] = ()
    reply: str | None = None  # explicit spoken reply; default: the kind's reply template
    variants: tuple[str, ...] = ()  # other phrasings of an explicit reply

    @property
    def id(self) -> str:
        return f"{self.kind}:{slug(self.subject)}"


@dataclass(frozen=True)
class Template:
    id: str
    group: str
    kind: str
    text: str  # "{subject}" marks the fact; "|" marks a pause (pause group only)


def slug(text: str) -> str:
    """Lower-case id form: ``slug("The Four Seasons") == "the_four_seasons"``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _pairs(kind: str, rows: str, aliases: dict[str, tuple[str, ...]] | None = None) -> list[Fact]:
    """Facts from "subject = answer" rows, separated by newlines or semicolons."""
    facts = []
    for row in re.split(r"[;\n]", rows.strip()):
        subject, answer = (part.strip() for part in row.split("="))
        facts.append(Fact(kind, subject, answer, (aliases or {}).get(subject, ())))
    return facts


CAPITALS = _pairs("capital", """
France = Paris; Germany = Berlin; Italy = Rome; Spain = Madrid
Portugal = Lisbon; Japan = Tokyo; China = Beijing; India = New Delhi
Canada = Ottawa; Mexico = Mexico City; Brazil = Brasilia; Argentina = Buenos Aires
Peru = Lima; Chile = Santiago; Colombia = Bogota; Egypt = Cairo
Kenya = Nairobi; Nigeria = Abuja; Morocco = Rabat; Ghana = Accra
Ethiopia = Addis Ababa; Australia = Canberra; New Zealand = Wellington; Russia = Moscow
Poland = Warsaw; Greece = Athens; Turkey = Ankara; Sweden = Stockholm
Norway = Oslo; Finland = Helsinki; Denmark = Copenhagen; Ireland = Dublin
Austria = Vienna; Hungary = Budapest; the Czech Republic = Prague; Thailand = Bangkok
Vietnam = Hanoi; South Korea = Seoul; the Philippines = Manila; Iran = Tehran
Saudi Arabia = Riyadh; Cuba = Havana; Iceland = Reykjavik; Belgium = Brussels
Romania = Bucharest; the United Kingdom = London
""", {"India": ("Delhi",), "Colombia": ("Bogotá",), "Brazil": ("Brasília",)})

CURRENCIES = _pairs("currency", """
Japan = yen; the United Kingdom = pound; France = euro; Ireland = euro
India = rupee; China = yuan; Mexico = peso; Russia = ruble
Brazil = real; South Korea = won; Switzerland = franc; Sweden = krona
Norway = krone; Denmark = krone; Poland = zloty; Turkey = lira
South Africa = rand; Thailand = baht; Vietnam = dong; Israel = shekel
Egypt = pound; Canada = dollar; Australia = dollar; Hungary = forint
Indonesia = rupiah; Saudi Arabia = riyal; Nigeria = naira; Kenya = shilling
""", {"the United Kingdom": ("pound sterling", "sterling"), "China": ("renminbi",), "Switzerland": ("Swiss franc",),
      "India": ("Indian rupee",), "Mexico": ("Mexican peso",), "Canada": ("Canadian dollar",),
      "Australia": ("Australian dollar",), "Egypt": ("Egyptian pound",), "Japan": ("Japanese yen",)})

LANGUAGES = _pairs("language", """
Brazil = Portuguese; Mexico = Spanish; Japan = Japanese; Germany = German
Egypt = Arabic; the Netherlands = Dutch; Greece = Greek; Poland = Polish
Turkey = Turkish; Iran = Persian; Thailand = Thai; Vietnam = Vietnamese
Argentina = Spanish; Sweden = Swedish; Hungary = Hungarian; Portugal = Portuguese
Austria = German; South Korea = Korean; Norway = Norwegian; Denmark = Danish
Ukraine = Ukrainian; Indonesia = Indonesian
""", {"Iran": ("Farsi",)})

CONTINENTS = _pairs("continent", """
Kenya = Africa; Peru = South America; Thailand = Asia; Portugal = Europe
Egypt = Africa; Argentina = South America; Canada = North America; Mexico = North America
Vietnam = Asia; Norway = Europe; Nigeria = Africa; Chile = South America
Mongolia = Asia; Ghana = Africa; Iceland = Europe; Nepal = Asia
Morocco = Africa; Colombia = South America; Finland = Europe; Jamaica = North America
Uruguay = South America; Cambodia = Asia
""")

AUTHORS = _pairs("author", """
Pride and Prejudice = Jane Austen; Emma = Jane Austen; Moby Dick = Herman Melville; Frankenstein = Mary Shelley
Dracula = Bram Stoker; Hamlet = William Shakespeare; War and Peace = Leo Tolstoy; Anna Karenina = Leo Tolstoy
Great Expectations = Charles Dickens; Oliver Twist = Charles Dickens; The Adventures of Tom Sawyer = Mark Twain; Jane Eyre = Charlotte Bronte
Wuthering Heights = Emily Bronte; The Time Machine = H. G. Wells; Treasure Island = Robert Louis Stevenson; Don Quixote = Miguel de Cervantes
Crime and Punishment = Fyodor Dostoevsky; Little Women = Louisa May Alcott; Around the World in Eighty Days = Jules Verne; The Picture of Dorian Gray = Oscar Wilde
The Call of the Wild = Jack London; Robinson Crusoe = Daniel Defoe; The Jungle Book = Rudyard Kipling; The Scarlet Letter = Nathaniel Hawthorne
Gulliver's Travels = Jonathan Swift
""", {"Pride and Prejudice": ("Austen",), "Emma": ("Austen",), "Moby Dick": ("Melville",), "Hamlet": ("Shakespeare",),
      "War and Peace": ("Tolstoy",), "Anna Karenina": ("Tolstoy",), "Great Expectations": ("Dickens",),
      "Oliver Twist": ("Dickens",), "Don Quixote": ("Cervantes",), "Crime and Punishment": ("Dostoevsky",),
      "The Time Machine": ("H.G. Wells", "Wells")})

COMPOSERS = _pairs("composer", """
the Moonlight Sonata = Beethoven; the Four Seasons = Vivaldi; the Magic Flute = Mozart; Swan Lake = Tchaikovsky
the Nutcracker = Tchaikovsky; Clair de Lune = Debussy; the Blue Danube = Johann Strauss; the Messiah = Handel
the Planets suite = Gustav Holst; Bolero = Ravel; the opera Carmen = Bizet
""", {"the Blue Danube": ("Strauss",), "the Planets suite": ("Holst",)})

_ELEMENTS = """
hydrogen = H; helium = He; carbon = C; nitrogen = N
oxygen = O; sodium = Na; magnesium = Mg; aluminum = Al
silicon = Si; phosphorus = P; sulfur = S; chlorine = Cl
potassium = K; calcium = Ca; iron = Fe; copper = Cu
zinc = Zn; silver = Ag; tin = Sn; gold = Au
mercury = Hg; lead = Pb; nickel = Ni; neon = Ne
uranium = U; iodine = I
"""
ELEMENT_SYMBOLS = _pairs("element_symbol", _ELEMENTS)
SYMBOL_ELEMENTS = [
    Fact("symbol_element", " ".join(f.answer.upper()), f.subject, (), f"{f.answer} is the chemical symbol for {f.subject}.",
         (f"The symbol {f.answer} stands for {f.subject}.", f"{f.subject.capitalize()} has the chemical symbol {f.answer}.",
          f"That's {f.subject}, whose chemical symbol is {f.answer}."))
    for f in ELEMENT_SYMBOLS
]

PLANETS = [
    Fact("planet_order", ordinal, planet, (), f"{planet} is the {ordinal} planet from the Sun.",
         (f"The {ordinal} planet from the Sun is {planet}.", f"Counting from the Sun, {planet} comes {ordinal}.",
          f"It's {planet}, the {ordinal} planet out from the Sun."))
    for ordinal, planet in zip(
        ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"),
        ("Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"),
    )
]

BABY_ANIMALS = _pairs("baby_animal", """
cat = kitten; dog = puppy; cow = calf; horse = foal
sheep = lamb; kangaroo = joey; goat = kid; frog = tadpole
duck = duckling; pig = piglet; bear = cub; swan = cygnet
owl = owlet; deer = fawn; goose = gosling
""")

LANDMARKS = _pairs("landmark", """
the Eiffel Tower = Paris; the Colosseum = Rome; Big Ben = London; the Statue of Liberty = New York
the Sydney Opera House = Sydney; the Taj Mahal = Agra; the Brandenburg Gate = Berlin; the Acropolis = Athens
the Golden Gate Bridge = San Francisco; the Kremlin = Moscow; the Sagrada Familia = Barcelona; the Forbidden City = Beijing
the Space Needle = Seattle; the Little Mermaid statue = Copenhagen
""", {"the Statue of Liberty": ("New York City",)})

COUNTS = [
    Fact("count", subject, answer, (digits,), reply, tuple(variants.split(" | ")))
    for subject, answer, digits, reply, variants in (
        ("legs does a spider have", "eight", "8", "A spider has eight legs.",
         "Spiders have eight legs. | It has eight legs. | A spider walks on eight legs."),
        ("legs does an insect have", "six", "6", "An insect has six legs.",
         "Insects have six legs. | It has six legs. | Every insect has six legs."),
        ("days are there in a week", "seven", "7", "There are seven days in a week.",
         "A week has seven days. | A week is seven days long. | There are seven, from Monday to Sunday."),
        ("months are there in a year", "twelve", "12", "There are twelve months in a year.",
         "A year has twelve months. | A year is made of twelve months. | There are twelve, January to December."),
        ("sides does a hexagon have", "six", "6", "A hexagon has six sides.",
         "Hexagons have six sides. | It has six sides. | A hexagon always has six sides."),
        ("sides does an octagon have", "eight", "8", "An octagon has eight sides.",
         "Octagons have eight sides. | It has eight sides. | An octagon always has eight sides."),
        ("minutes are there in an hour", "sixty", "60", "There are sixty minutes in an hour.",
         "An hour has sixty minutes. | An hour is sixty minutes long. | There are sixty of them in an hour."),
        ("hours are there in a day", "twenty-four", "24", "There are twenty-four hours in a day.",
         "A day has twenty-four hours. | A day is twenty-four hours long. | One day lasts twenty-four hours."),
        ("players does a soccer team have on the field", "eleven", "11", "A soccer team has eleven players on the field.",
         "Each soccer team fields eleven players. | There are eleven players per team on the field. "
         "| A soccer team plays with eleven players on the field."),
        ("strings does a violin have", "four", "4", "A violin has four strings.",
         "Violins have four strings. | It has four strings. | A standard violin has four strings."),
        ("continents are there", "seven", "7", "There are seven continents.",
         "The world has seven continents. | There are seven of them. | Earth has seven continents."),
        ("planets are in our solar system", "eight", "8", "There are eight planets in our solar system.",
         "Our solar system has eight planets. | Eight planets go around our Sun. | The solar system has eight planets in it."),
        ("keys does a standard piano have", "eighty-eight", "88", "A standard piano has eighty-eight keys.",
         "Most pianos have eighty-eight keys. | A full piano keyboard has eighty-eight keys. | It has eighty-eight keys."),
        ("days are in a leap year", "three hundred sixty-six", "366", "A leap year has three hundred sixty-six days.",
         "Leap years have three hundred sixty-six days. | A leap year lasts three hundred sixty-six days. "
         "| It has three hundred sixty-six days."),
        ("hearts does an octopus have", "three", "3", "An octopus has three hearts.",
         "Octopuses have three hearts. | It has three hearts. | Every octopus has three hearts."),
    )
]

ALL_FACTS: tuple[Fact, ...] = tuple(
    CAPITALS + CURRENCIES + LANGUAGES + CONTINENTS + AUTHORS + COMPOSERS + ELEMENT_SYMBOLS + SYMBOL_ELEMENTS
    + PLANETS + BABY_ANIMALS + LANDMARKS + COUNTS
)

REPLIES = {  # fact kind -> reply templates: the reply, then its variants
    "capital": ("The capital of {subject} is {answer}.", "{answer} is the capital of {subject}.",
                "The capital city of {subject} is {answer}.", "In {subject}, the capital is {answer}."),
    "currency": ("The currency of {subject} is the {answer}.", "The {answer} is the currency of {subject}.",
                 "{subject} uses the {answer} as its currency.", "In {subject}, people pay with the {answer}."),
    "language": ("The main language of {subject} is {answer}.", "{answer} is the main language of {subject}.",
                 "People in {subject} mainly speak {answer}.", "In {subject}, most people speak {answer}."),
    "continent": ("{subject} is in {answer}.", "{subject} lies in {answer}.", "{subject} is part of {answer}.",
                  "It's in {answer}."),
    "author": ("{subject} was written by {answer}.", "{answer} wrote {subject}.", "The author of {subject} is {answer}.",
               "{subject} is the work of {answer}."),
    "composer": ("{subject} was composed by {answer}.", "{answer} composed {subject}.",
                 "The composer of {subject} was {answer}.", "{subject} is the work of {answer}."),
    "element_symbol": ("The chemical symbol for {subject} is {answer}.", "{answer} is the chemical symbol for {subject}.",
                       "The symbol for {subject} is {answer}.", "{subject} has the chemical symbol {answer}."),
    "baby_animal": ("A baby {subject} is called {a_answer}.", "A young {subject} is called {a_answer}.",
                    "We call a baby {subject} {a_answer}.", "{a_answer} is a baby {subject}."),
    "landmark": ("{subject} is in {answer}.", "{subject} stands in {answer}.", "{answer} is home to {subject}.",
                 "You'll find {subject} in {answer}."),
}

_TEMPLATE_TEXTS = {
    "capital": {
        "llama": ["What is the capital of {subject}?", "What city is the capital of {subject}?"],
        "web": ["What's the capital city of {subject}?", "Where is the government of {subject} based?"],
        "trivia": ["Which city serves as the capital of {subject}?"],
        "pause": ["Could you tell me | the capital of {subject}?", "What is the capital | of {subject}?",
                  "I was wondering what the | capital of {subject} is."],
        "casual": ["Hey, what's the capital of {subject}?"],
        "barge": ["Sorry, actually, what's the capital of {subject}?", "Wait, wait. What is the capital of {subject}?"],
    },
    "currency": {
        "llama": ["What is the currency of {subject}?"],
        "web": ["What currency does {subject} use?", "What kind of money do they use in {subject}?"],
        "trivia": ["What is the official currency of {subject}?"],
        "pause": ["What currency do they | use in {subject}?", "Do you know which | currency {subject} uses?"],
        "casual": ["What money do people use in {subject}?"],
        "barge": ["Hold on, what currency does {subject} use?"],
    },
    "language": {
        "llama": ["What is the main language of {subject}?"],
        "web": ["What language do they speak in {subject}?", "What language do people in {subject} speak?"],
        "trivia": ["Which language is the official language of {subject}?"],
        "pause": ["What language do people | speak in {subject}?"],
        "barge": ["Sorry to cut in, what language do they speak in {subject}?"],
    },
    "continent": {
        "web": ["What continent is {subject} on?", "Which continent is {subject} part of?"],
        "trivia": ["On which continent would you find {subject}?"],
        "casual": ["Which continent is {subject} in?"],
    },
    "author": {
        "llama": ["Who wrote {subject}?", "Who is the author of {subject}?"],
        "web": ["Who was the author of the book {subject}?"],
        "trivia": ["Which author wrote the classic {subject}?"],
        "pause": ["Who was the | author of {subject}?", "Do you know who | wrote {subject}?"],
        "casual": ["Who wrote the book {subject}?"],
    },
    "composer": {
        "llama": ["Who composed {subject}?"],
        "trivia": ["Which composer wrote {subject}?", "{subject} is the work of which composer?"],
        "casual": ["Who wrote the music for {subject}?"],
    },
    "element_symbol": {
        "llama": ["What is the chemical symbol for {subject}?"],
        "web": ["What is the element symbol of {subject}?"],
        "trivia": ["What symbol does {subject} have on the periodic table?"],
        "barge": ["Actually, quick question, what's the symbol for {subject}?"],
    },
    "symbol_element": {
        "llama": ["What element has the symbol {subject}?"],
        "trivia": ["Which element has the chemical symbol {subject}?", "The symbol {subject} stands for which element?"],
    },
    "planet_order": {
        "llama": ["Which planet is {subject} from the Sun?"],
        "trivia": ["Counting from the Sun, which planet comes {subject}?"],
        "casual": ["What's the {subject} planet from the Sun?"],
    },
    "baby_animal": {
        "llama": ["What is a baby {subject} called?"],
        "trivia": ["What name is given to a young {subject}?"],
        "casual": ["What do you call a baby {subject}?"],
    },
    "landmark": {
        "llama": ["In which city is {subject}?"],
        "web": ["What city is {subject} in?", "Where can I go to see {subject}?"],
        "trivia": ["{subject} stands in which city?"],
        "pause": ["In which city | can you find {subject}?"],
    },
    "count": {
        "llama": ["How many {subject}?"],
        "trivia": ["Quick trivia. How many {subject}?"],
        "casual": ["Do you know this one? How many {subject}?"],
    },
}

ALL_TEMPLATES: tuple[Template, ...] = tuple(
    Template(f"{kind}.{group}.{number}", group, kind, text)
    for kind, groups in _TEMPLATE_TEXTS.items()
    for group, texts in groups.items()
    for number, text in enumerate(texts, start=1)
)


@dataclass(frozen=True)
class Question:
    """A (template, fact) question item."""

    template: Template
    fact: Fact

    @property
    def id(self) -> str:
        return f"qa/{self.template.id}/{self.fact.id}"

    @property
    def pieces_text(self) -> list[str]:
        """The question split at its pause marks ("|")."""
        return [part.strip() for part in render_question(self.template, self.fact, keep_pauses=True).split("|")]

    @property
    def text(self) -> str:
        return " ".join(self.pieces_text)

    @property
    def reply(self) -> str:
        return reply_for(self.fact)

    @property
    def reply_variants(self) -> tuple[str, ...]:
        return reply_variants(self.fact)


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def with_article(noun: str) -> str:
    """``with_article("owlet") == "an owlet"``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def render_question(template: Template, fact: Fact, keep_pauses: bool = False) -> str:
    text = capitalize(template.text.format(subject=fact.subject))
    return text if keep_pauses else re.sub(r"\s*\|\s*", " ", text)


def reply_for(fact: Fact) -> str:
    """The scripted spoken reply to any question about ``fact``; it contains the reference answer."""
    return fact.reply or _render_reply(REPLIES[fact.kind][0], fact)


def reply_variants(fact: Fact) -> tuple[str, ...]:
    """The other phrasings of :func:`reply_for`; each contains the reference answer too."""
    phrasings = fact.variants if fact.reply else tuple(_render_reply(t, fact) for t in REPLIES[fact.kind][1:])
    return variants_of(reply_for(fact), phrasings)


def _render_reply(template: str, fact: Fact) -> str:
    return capitalize(template.format(subject=fact.subject, answer=fact.answer, a_answer=with_article(fact.answer)))


@lru_cache(maxsize=None)
def _templates_of_kind(kind: str) -> tuple[str, ...]:
    return tuple(t.id for t in ALL_TEMPLATES if t.kind == kind)


def question_split(question: Question) -> str:
    """"eval" or "train" for this (template, fact) pair (see ticktock.corpus.splits)."""
    return form_split(question.fact.id, question.template.id, _templates_of_kind(question.fact.kind))


@lru_cache(maxsize=None)
def questions(group: str, split: str, kinds: tuple[str, ...] | None = None) -> tuple[Question, ...]:
    """All question items of ``group`` in ``split`` (optionally only fact types ``kinds``), in a fixed order."""
    if group not in GROUPS:
        raise ValueError(f"unknown question group {group!r}; groups are {GROUPS}")
    items = [
        Question(template, fact)
        for template in ALL_TEMPLATES
        if template.group == group and (kinds is None or template.kind in kinds)
        for fact in ALL_FACTS
        if fact.kind == template.kind
    ]
    return tuple(q for q in items if question_split(q) == split)


def fact_by_id(fact_id: str) -> Fact:
    for fact in ALL_FACTS:
        if fact.id == fact_id:
            return fact
    raise KeyError(f"no fact {fact_id!r} in the knowledge base")


def template_by_id(template_id: str) -> Template:
    for template in ALL_TEMPLATES:
        if template.id == template_id:
            return template
    raise KeyError(f"no question template {template_id!r}")
