"""Training targets for the embedded model: what the model should output in every chunk of a session.

An oracle policy turns a session's turns and scripted behaviour (``expected.script``) into one unit per
chunk, exactly in the MiniCPM-o / Gander layout the adapter decodes:

- listen (``<|listen|>``) unless something below applies;
- a reply to user turn i starts in the first chunk whose audio ends at least ``RESPOND_AFTER_S`` after the
  turn ends (the model has heard the end of the turn); its text is spread over consecutive speak units of
  K text tokens (``<|speak|> t1..tK <|chunk_eos|>``, the last one with ``<|turn_eos|>``);
- tool calls: ``<tool_call>{json}</tool_call>... <|chunk_eos|>`` units, independent calls together, a call
  that needs an earlier result in a later unit; the mock tool world answers each unit's calls in the next
  chunk's tail (``<tool_response>`` per call, as the engine injects them); the spoken answer follows;
- a barge-in (script action "stop"): ``<|interrupt|>`` in the first chunk with ``BARGE_IN_S`` of the
  barge-in heard, dropping the rest of the reply; user backchannels, side talk and background speech
  change nothing (the reply goes on, or the model keeps listening);
- a model backchannel (``<|backchannel|> mm-hmm <|chunk_eos|>``) in the first chunk ``BACKCHANNEL_AFTER_S``
  into the user's pause, if the model is not speaking.

Phrasings: without ``rng`` every reply and backchannel says its action's ``text``; with ``rng`` (a numpy
Generator) each speak / speak_after_tools / backchannel action says a phrasing drawn uniformly from its text
and its ``variants``, independently per action (see :func:`phrasing`), so a model trained on several plans
of a session learns a distribution of replies. With ``framing`` > 0 a drawn reply may also open with an
acknowledgement or a filler and close with a closing remark (:func:`framed`), as real assistants' replies do,
where that fits in the reply's room (no more speak units than its longest phrasing): the first and last words
of a reply are then uncertain too, not only its wording. With ``mixing`` > 0 a drawn reply of several
sentences may be rebuilt sentence by sentence from its phrasings (:func:`mixed`), so its middle is uncertain too:
a model trained on whole phrasings alone knows, after a reply's first words, every word that follows. With
``wording`` > 0 single words and contractions inside a drawn reply are redrawn among interchangeable forms
(:func:`worded`: "it is" / "it's", "big" / "large"), so its words are uncertain within a sentence too, as a large
model's are under sampling. The three rates are a :class:`ReplyVariety`. Where each reply starts is the same
either way; only how many speak units it takes depends on the phrasing.

Example::

    plan = plan_session(session, tokenizer_adapter, executor)    # one ChunkPlan per chunk
    plan[4].output   # e.g. [<|speak|>, 'The', ' capital', ... , <|chunk_eos|>]
    drawn = plan_session(session, tokenizer_adapter, executor, rng=np.random.default_rng(7),
                         variety=ReplyVariety(framing=0.8, mixing=0.6))
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field

from ticktock.adapters.base import hermes_call_text
from ticktock.sessions.manifest import Session

RESPOND_AFTER_S = 0.5  # silence heard after a user turn before the reply starts
BARGE_IN_S = 0.3  # barge-in speech heard before the model stops
BACKCHANNEL_AFTER_S = 0.4  # pause heard before a model backchannel
SPOKEN_ACTIONS = ("speak", "speak_after_tools", "backchannel")  # script actions whose text the model says


@dataclass
class ChunkPlan:
    """Known inputs after the audio (``tail``) and the target output of one chunk."""

    tail: list[int] = field(default_factory=list)
    output: list[int] = field(default_factory=list)
    label: str = "listen"


def tool_call_text(call: dict) -> str:
    """The text the model writes inside <tool_call>: Hermes/Qwen form, json.dumps default separators."""
    return hermes_call_text(call["function"], call["args"])


def speak_units(adapter, text: str) -> list[list[int]]:
    """A reply's speak units: K text tokens each, the last one closing the turn. An adapter whose runtime cuts a
    unit's text at a number of characters (``speak_chars_per_unit``: MiniCPM-o 4.5's, 28) gets units whose text
    stays under it, so the model never meets the cut."""
    p = adapter.protocol
    tokens = adapter.encode_text(" " + text.strip())
    k = p.max_text_tokens
    limit = getattr(adapter, "speak_chars_per_unit", None)
    if limit:
        pieces = text_pieces(tokens, k, lambda piece: len(adapter.decode_tokens(piece)) < limit)
    else:
        pieces = [tokens[i : i + k] for i in range(0, len(tokens), k)] or [[]]
    units = [[p.speak, *piece, p.chunk_eos] for piece in pieces]
    units[-1].insert(-1, p.turn_eos)
    return units


def text_pieces(tokens: list[int], k: int, fits) -> list[list[int]]:
    """``tokens`` cut into pieces of at most ``k`` whose text ``fits`` (a piece of one token always does).

    >>> text_pieces([1, 2, 3, 4, 5], 3, lambda piece: sum(piece) < 6)
    [[1, 2], [3], [4], [5]]
    """
    pieces: list[list[int]] = []
    for token in tokens:
        if pieces and len(pieces[-1]) < k and fits(pieces[-1] + [token]):
            pieces[-1].append(token)
        else:
            pieces.append([token])
    return pieces or [[]]


def tool_unit(adapter, calls: list[dict]) -> list[int]:
    """One tool unit holding ``calls`` (Gander allows several independent calls per unit)."""
    p = adapter.protocol
    unit = []
    for call in calls:
        unit += adapter.tool_call_tokens(call["function"], call["args"])
    return unit + [p.chunk_eos]


def call_groups(calls: list[dict], request_text: str, executor, limit: int = 4) -> list[list[dict]]:
    """Split calls into units: a call that uses a value only an earlier call's result holds (a flight id,
    a product id, an address) starts a new unit; independent calls share one (at most ``limit``)."""
    groups: list[list[dict]] = []
    results = ""
    for call in calls:
        values = [str(v) for v in call["args"].values()]
        dependent = any(v in results and v not in request_text for v in values)
        if not groups or dependent or len(groups[-1]) >= limit:
            groups.append([])
        groups[-1].append(call)
        results += executor.respond(call)
    return groups


def phrasings(action: dict) -> list[str]:
    """A reply or backchannel action's phrasings: its ``text``, then its ``variants``."""
    return [action["text"], *action.get("variants", ())]


def phrasing(action: dict, rng=None) -> str:
    """What a reply or backchannel action says: its ``text`` without ``rng``; with it, one of [text, *variants]
    drawn uniformly (one draw, only when the action has variants).

    >>> import numpy as np
    >>> action = {"action": "speak", "text": "It is Paris.", "variants": ["Paris.", "The answer is Paris."]}
    >>> phrasing(action)
    'It is Paris.'
    >>> rng = np.random.default_rng(0)
    >>> [phrasing(action, rng) for _ in range(5)]
    ['The answer is Paris.', 'Paris.', 'Paris.', 'It is Paris.', 'It is Paris.']
    """
    options = phrasings(action)
    if rng is None or len(options) == 1:
        return action["text"]
    return options[int(rng.integers(len(options)))]


OPENERS = ("Sure.", "Okay.", "Right.", "Got it.", "Alright.", "Hmm.", "Let me see.", "Good question.")
CLOSERS = ("Hope that helps.", "Anything else?", "Happy to help.")
WIDE_OPENERS = OPENERS + ("Well.", "So.", "Um.", "Yes.", "Of course.", "Certainly.", "Sure thing.", "Let's see.",
                          "Let me think.", "Great question.", "Absolutely.", "No problem.", "Okay then.", "Interesting.",
                          "Good one.", "Oh.")
WIDE_CLOSERS = CLOSERS + ("Glad to help.", "Is there anything else?", "Let me know if you need more.",
                          "I hope this helps.")


@dataclass(frozen=True)
class Frames:
    """The openers and closers :func:`framed` draws from: ``basic`` (8 + 3, the v5/v6 stages) or ``wide`` (24 + 7:
    fillers and acknowledgements as spoken assistants say them, so a reply's first words are as uncertain as a
    real speech LM's)."""

    openers: tuple[str, ...]
    closers: tuple[str, ...]


FRAME_SETS = {"basic": Frames(OPENERS, CLOSERS), "wide": Frames(WIDE_OPENERS, WIDE_CLOSERS)}
REPLY_ACTIONS = ("speak", "speak_after_tools")  # the actions whose phrasing ``framed`` may frame


def framed(text: str, rng, framing: float, fits=None, frames: Frames = FRAME_SETS["basic"]) -> str:
    """``text`` with, at rate ``framing``, an opener (an acknowledgement or a filler, drawn uniformly from
    ``frames.openers``) and, at half that rate and independently, a closer from ``frames.closers``. Two draws per
    reply whatever the outcome, so the generator's stream does not depend on them. With the basic frames each
    opener comes at ``framing / 8``, so while ``framing`` < 8/9 the bare reply is the likeliest single form (a
    trained model may still prefer an opener where the reply's own first words are split among its variants); with
    the wide ones at ``framing / 24``.
    ``fits`` (text -> bool): a frame that does not fit is dropped, the closer first, then the opener.

    >>> import numpy as np
    >>> rng = np.random.default_rng(2)
    >>> [framed("It is Paris.", rng, 0.6) for _ in range(3)]
    ['Got it. It is Paris. Happy to help.', 'It is Paris. Hope that helps.', 'It is Paris.']
    >>> framed("It is Paris.", np.random.default_rng(2), 0.6, fits=lambda t: len(t) < 30)
    'Got it. It is Paris.'
    >>> framed("It is Paris.", np.random.default_rng(2), 0.6, frames=FRAME_SETS["wide"])
    'Um. It is Paris. I hope this helps.'
    """
    opener, closer = rng.random(2)
    head = frames.openers[int(opener / framing * len(frames.openers))] if opener < framing else None
    tail = frames.closers[int(closer / (framing / 2) * len(frames.closers))] if closer < framing / 2 else None
    for parts in ((head, text, tail), (head, text), (text, tail)):
        candidate = " ".join(part for part in parts if part)
        if fits is None or fits(candidate):
            return candidate
    return text


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """``text`` split after each sentence's final ``.``, ``!`` or ``?``.

    >>> sentences("Sure, three tips. One, keep a schedule! Two?")
    ['Sure, three tips.', 'One, keep a schedule!', 'Two?']
    """
    return SENTENCE_END.split(text.strip())


def _words(sentence: str) -> list[str]:
    return [word.strip(".,!?;:\"'()") for word in sentence.split()]


def reply_names(texts) -> set[str]:
    """The names (people, places, products) of a reply: the words some phrasing capitalises past a sentence's first
    word, "I" aside.

    >>> sorted(reply_names(["Peter Walsh flies to Athens.", "I booked Peter Walsh."]))
    ['Athens', 'Peter', 'Walsh']
    """
    return {word for text in texts for sentence in sentences(text) for i, word in enumerate(_words(sentence))
            if i > 0 and word[:1].isupper() and word != "I"}


ENUMERATIONS = {"First": "ordinal", "Second": "ordinal", "Third": "ordinal", "One": "count", "Two": "count",
                "Three": "count"}  # a sentence's first word that says how a list is counted


def sentence_values(sentence: str, names: set[str]) -> list[str]:
    """What of ``sentence`` a phrasing mixed into it must keep, sorted: its words with a digit, its ``names``, and how
    it counts a list ("First," or "One,", ``ENUMERATIONS``), so that mixing never mixes the counting styles.

    >>> sentence_values("Peter Walsh is on flight AC721 at 08:30.", {"Peter", "Walsh"})
    ['08:30', 'AC721', 'Peter', 'Walsh']
    >>> sentence_values("Two, keep the room cool.", set()), sentence_values("Second, keep it cool.", set())
    (['<count>'], ['<ordinal>'])
    """
    words = _words(sentence)
    counting = [f"<{ENUMERATIONS[words[0]]}>"] if words and words[0] in ENUMERATIONS else []
    return sorted(counting + [word for word in words if word in names or any(c.isdigit() for c in word)])


def mixed(action: dict, text: str, rng, mixing: float, fits=None) -> str:
    """At rate ``mixing``, ``text`` (one of ``action``'s phrasings) rebuilt sentence by sentence: sentence i drawn
    uniformly from the phrasings that match ``text`` sentence for sentence, as many sentences with the same values
    in each (``sentence_values`` of the ``reply_names``), so a mixed reply keeps every name, number and answer once. One draw for the
    rate, then one per sentence when it mixes. ``text`` itself where no other phrasing matches it, or where the
    result does not ``fits``.

    >>> import numpy as np
    >>> action = {"text": "It is Paris. It is big.", "variants": ["Paris is it. A big city.", "Paris. Big.", "Paris!"]}
    >>> [mixed(action, "It is Paris. It is big.", np.random.default_rng(seed), 1.0) for seed in (0, 1, 6)]
    ['Paris is it. It is big.', 'Paris. Big.', 'Paris is it. A big city.']
    """
    if rng.random() >= mixing:
        return text
    options = phrasings(action)
    names = reply_names(options)
    shape = [sentence_values(sentence, names) for sentence in sentences(text)]
    peers = [parts for parts in map(sentences, options) if [sentence_values(part, names) for part in parts] == shape]
    if len(shape) < 2 or len(peers) < 2:
        return text
    candidate = " ".join(peers[pick][i] for i, pick in enumerate(rng.integers(len(peers), size=len(shape))))
    return candidate if fits is None or fits(candidate) else text


WORDINGS = (  # interchangeable wordings, lower case; any one may stand for another wherever it occurs as words
    ("it is", "it's"), ("that is", "that's"), ("there is", "there's"), ("here is", "here's"), ("what is", "what's"),
    ("i am", "i'm"), ("i will", "i'll"), ("you are", "you're"), ("you will", "you'll"), ("we are", "we're"),
    ("they are", "they're"), ("do not", "don't"), ("does not", "doesn't"), ("did not", "didn't"),
    ("is not", "isn't"), ("are not", "aren't"), ("cannot", "can't"), ("will not", "won't"),
    ("main", "primary", "chief"), ("mainly", "mostly", "chiefly"), ("called", "known as"), ("big", "large"),
    ("small", "tiny"), ("start", "begin"), ("started", "began"), ("starting", "beginning"), ("slowly", "gently"),
    ("a little", "a bit"), ("a few", "a couple of"), ("plenty of", "lots of", "a lot of"), ("several", "a number of"),
    ("really", "truly"), ("useful", "handy"), ("good", "great"), ("simple", "easy"), ("calm", "quiet"),
    ("ideas", "suggestions"), ("choices", "options"), ("usually", "normally", "typically"), ("often", "frequently"),
    ("maybe", "perhaps"), ("because", "since"), ("until", "till"), ("toward", "towards"), ("nearby", "close by"),
    ("only", "just"), ("can", "could"), ("need to", "have to"), ("want to", "would like to"), ("help", "assist"),
    ("choose", "pick"), ("hardest", "toughest"), ("comfortable", "comfy"), ("mistakes", "errors"),
    ("someone", "somebody"), ("everyone", "everybody"), ("anyone", "anybody"), ("people", "folks"),
    ("thanks", "thank you"), ("sunlight", "sunshine"), ("make sure", "be sure"), ("give", "offer"),
    ("should arrive", "will arrive"), ("booked", "reserved"), ("added", "put"), ("capital", "capital city"),
    ("chemical symbol", "symbol"), ("baby", "young"), ("is in", "is located in", "lies in"),
    ("each day", "every day", "daily"), ("right away", "at once", "immediately"), ("quickly", "fast"),
    ("kids", "children"), ("afterward", "afterwards"), ("stays", "remains"), ("rises", "goes up"), ("shape", "form"),
    ("pictures", "images"), ("whole", "entire"), ("near", "close to"), ("soon", "shortly"), ("next to", "beside"),
    ("talk to", "speak to", "speak with"), ("takes about", "takes around", "takes roughly"), ("i found", "i've found"),
    ("dollars a month", "dollars per month"), ("your order", "the order"), ("all set", "all done"),
)
_WORDING_OF = {form: group for group in WORDINGS for form in group}
_WORDING_FORMS = "|".join(sorted(map(re.escape, _WORDING_OF), key=len, reverse=True))  # longest first
_WORDING = re.compile(r"(?<![\w'])(" + _WORDING_FORMS + r")(?![\w'])", re.IGNORECASE)


def _wording_sites(text: str) -> list[re.Match]:
    """The matches of ``WORDINGS`` forms in ``text`` that are ordinary words: in lower case, or capitalised only as
    a sentence's first word or the pronoun "I", and not followed by a capitalised word (a capitalised form inside a
    sentence, or one before a capitalised word, is part of a name, as in "Big Ben")."""
    sites = []
    for match in _WORDING.finditer(text):
        form = match.group(0)
        sentence_start = re.search(r"(^|[.!?:]\s+)$", text[: match.start()]) is not None
        pronoun = re.match(r"I\b", form) is not None
        in_name = re.match(r"\s+[A-Z]", text[match.end() :]) is not None and not pronoun
        if form[1:] == form[1:].lower() and not in_name and (form[0].islower() or sentence_start or pronoun):
            sites.append(match)
    return sites


def _cased(form: str, like: str) -> str:
    """``form`` (lower case) with ``like``'s initial capital, and the pronoun "I" always capitalised."""
    return form[:1].upper() + form[1:] if like[:1].isupper() or re.match(r"i\b", form) else form


def worded(text: str, rng, wording: float, fits=None) -> str:
    """``text`` with each ordinary occurrence of a ``WORDINGS`` form replaced, at rate ``wording``, by a form of its
    group drawn uniformly (itself among them), keeping a sentence-initial capital: the words inside a reply are then
    uncertain too, as a large model's are under sampling. Names, numbers and answers are never in ``WORDINGS``,
    so every value of the reply is kept. Two draws per site whatever the outcome. ``text`` itself where the result
    does not ``fits``.

    >>> import numpy as np
    >>> [worded("It is big, so I will start now.", np.random.default_rng(seed), 1.0) for seed in (0, 1)]
    ["It is big, so I'll begin now.", "It's large, so I will start now."]
    >>> worded("Big Ben is in London.", np.random.default_rng(3), 1.0)
    'Big Ben is in London.'
    """
    pieces, end = [], 0
    for match in _wording_sites(text):
        swap, pick = rng.random(2)
        form = match.group(0)
        if swap < wording:
            group = _WORDING_OF[form.lower()]
            form = _cased(group[int(pick * len(group))], form)
        pieces += [text[end : match.start()], form]
        end = match.end()
    candidate = "".join(pieces) + text[end:]
    return candidate if fits is None or fits(candidate) else text


@dataclass(frozen=True)
class ReplyVariety:
    """How much a drawn reply varies beyond its phrasing: ``framing`` (the rate of an opener, half of it a
    closer, :func:`framed`, drawn from the ``frames`` set of ``FRAME_SETS``), ``mixing`` (the rate of a reply
    rebuilt sentence by sentence, :func:`mixed`) and ``wording`` (the rate of a word redrawn among its
    ``WORDINGS``, :func:`worded`). Zero rates draw nothing, and the basic frames are the only ones before ``frames``
    existed, so the plans (and training examples) of runs before a knob existed are unchanged."""

    framing: float = 0.0
    mixing: float = 0.0
    frames: str = "basic"
    wording: float = 0.0

    def __post_init__(self):
        if self.frames not in FRAME_SETS:
            raise ValueError(f"frames: expected one of {sorted(FRAME_SETS)}, got {self.frames!r}")


def _varied(action: dict, text: str, adapter, rng, variety: ReplyVariety) -> str:
    """A drawn reply ``text``, mixed, worded, then framed, within the reply's room in the session: no more speak units
    than its longest phrasing takes (the corpus times the next turn after the scripted reply, and every phrasing
    fits)."""
    if not (variety.mixing or variety.framing or variety.wording):
        return text
    room = max(len(speak_units(adapter, option)) for option in phrasings(action))
    fits = lambda candidate: len(speak_units(adapter, candidate)) <= room  # noqa: E731
    if variety.mixing > 0:
        text = mixed(action, text, rng, variety.mixing, fits)
    if variety.wording > 0:
        text = worded(text, rng, variety.wording, fits)
    if variety.framing > 0:
        text = framed(text, rng, variety.framing, fits, FRAME_SETS[variety.frames])
    return text


def backchannel_unit(adapter, text: str) -> list[int]:
    p = adapter.protocol
    return [p.backchannel, *adapter.encode_text(" " + text.strip()), p.chunk_eos]


@dataclass
class _Reply:
    """One scheduled response: tool-call units (each a list of calls), then speech units."""

    calls: list[dict]
    speech: list[list[int]]
    call_units: list[list[dict]] = field(default_factory=list)


def _replies(session: Session, adapter, executor, texts: dict[int, str]) -> dict[int, _Reply]:
    replies: dict[int, _Reply] = {}
    for i, action in enumerate(session.expected.get("script", [])):
        kind = action.get("action")
        reply = replies.setdefault(action["turn"], _Reply([], []))
        if kind == "tool_call":
            reply.calls.append(action["call"])
        elif kind in ("speak", "speak_after_tools"):
            reply.speech.extend(speak_units(adapter, texts[i]))
    for turn, reply in replies.items():
        reply.call_units = call_groups(reply.calls, session.turns[turn].text, executor) if reply.calls else []
    return {turn: r for turn, r in replies.items() if r.calls or r.speech}


def _first_chunk_after(time_s: float, spans) -> int:
    """Index of the first chunk whose audio ends at or after ``time_s``."""
    for span in spans:
        if span.end_s >= time_s - 1e-9:
            return span.index
    return math.inf


def plan_session(session: Session, adapter, executor, rng=None, variety: ReplyVariety = ReplyVariety()) -> list[ChunkPlan]:
    """The oracle policy's output (and injected tool responses) for every chunk of ``session``; with ``rng`` (a
    numpy Generator) every reply and backchannel says a phrasing drawn from its action (:func:`phrasing`), and
    each reply is then varied as ``variety`` says (mixed, then framed; backchannels are not)."""
    spans = session.chunk_spans()
    turns = session.turns
    script = session.expected.get("script", [])
    texts = {i: phrasing(a, rng) for i, a in enumerate(script) if a.get("action") in SPOKEN_ACTIONS}
    if rng is not None:
        texts = {i: _varied(script[i], text, adapter, rng, variety) if script[i]["action"] in REPLY_ACTIONS
                 else text for i, text in texts.items()}
    replies = _replies(session, adapter, executor, texts)
    reply_at = {_first_chunk_after(turns[i].end_s + RESPOND_AFTER_S, spans): i for i in replies}
    stops = {
        _first_chunk_after(turns[a["turn"]].start_s + BARGE_IN_S, spans)
        for a in script
        if a.get("action") == "stop"
    }
    backchannels = {
        _first_chunk_after(a["at_s"] + BACKCHANNEL_AFTER_S, spans): texts[i]
        for i, a in enumerate(script)
        if a.get("action") == "backchannel"
    }
    plans = [ChunkPlan() for _ in spans]
    queue: deque = deque()  # ("calls", [call, ...]) or ("speech", unit)
    pending_tail: list[int] = []
    for t in range(len(spans)):
        plan = plans[t]
        plan.tail, pending_tail = pending_tail, []
        if t in stops and queue:
            queue.clear()
            plan.output, plan.label = [adapter.protocol.interrupt], "interrupt"
            continue
        if t in reply_at:
            reply = replies[reply_at[t]]
            queue.clear()
            queue.extend(("calls", calls) for calls in reply.call_units)
            queue.extend(("speech", unit) for unit in reply.speech)
        if queue:
            kind, item = queue.popleft()
            if kind == "calls":
                plan.output, plan.label = tool_unit(adapter, item), "tool"
                pending_tail = [t for call in item for t in adapter.tool_response_tokens(executor.respond(call))]
            else:
                plan.output, plan.label = list(item), "speak"
        elif t in backchannels and adapter.protocol.backchannel is not None:
            plan.output, plan.label = backchannel_unit(adapter, backchannels[t]), "backchannel"
        else:
            plan.output = [adapter.protocol.listen]
    return plans
