"""Open spoken instructions with long scripted replies (``alpaca_eval``), also used as the long model
replies that the turn-taking tasks interrupt or backchannel over.

An instruction has three phrasings and one fixed reply of 30-45 words. An item is a (phrasing,
instruction) pair; its split follows ``ticktock.corpus.splits.form_split``, so every instruction keeps
training phrasings.

Example::

    >>> item = instruction_items("train")[0]
    >>> item.id.startswith("alpaca/"), 30 <= len(item.instruction.reply.split()) <= 45
    (True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ticktock.corpus.script import At, Piece, SessionScript, Utterance, lead_in, reply_end, speak
from ticktock.corpus.splits import form_split
from ticktock.corpus.tasks.base import SessionContext


@dataclass(frozen=True)
class Instruction:
    id: str
    phrasings: tuple[str, str, str]
    reply: str


@dataclass(frozen=True)
class InstructionItem:
    instruction: Instruction
    phrasing: int

    @property
    def id(self) -> str:
        return f"alpaca/{self.instruction.id}/{self.phrasing}"

    @property
    def text(self) -> str:
        return self.instruction.phrasings[self.phrasing]


def _instruction(id: str, phrasings: str, reply: str) -> Instruction:
    first, second, third = (p.strip() for p in phrasings.split("|"))
    return Instruction(id, (first, second, third), reply)


INSTRUCTIONS = (
    _instruction("sleep_tips", "Give me three tips for sleeping better. | Could you share three tips for better sleep? | What are three things I can do to sleep better?",
                 "Here are three tips. First, go to bed and wake up at the same time every day. Second, keep your bedroom cool, dark and quiet. Third, avoid screens and caffeine in the hour before you sleep."),
    _instruction("rainbow", "Explain how a rainbow forms. | Can you tell me how rainbows are made? | How does a rainbow form?",
                 "A rainbow forms when sunlight passes through raindrops. Each drop bends the light, splits it into its colors, and reflects it back toward you. Because each color bends by a different amount, you see bands from red to violet."),
    _instruction("pasta_dinner", "Suggest a quick pasta dinner I can make tonight. | What is a fast pasta dish I could cook this evening? | Give me an idea for a quick pasta dinner.",
                 "Try garlic and lemon spaghetti. Boil the pasta, then warm olive oil with sliced garlic. Toss the pasta with the oil, lemon juice, a little pasta water and grated cheese. It takes about fifteen minutes."),
    _instruction("study_focus", "How can I stay focused while studying? | Give me some advice for concentrating when I study. | What helps you focus during study sessions?",
                 "Put your phone in another room and work in short blocks of about twenty-five minutes with five minute breaks. Start each block with one clear goal, and keep water and your materials within reach so you do not get up."),
    _instruction("photosynthesis", "Describe photosynthesis in simple terms. | Can you explain photosynthesis simply? | What is photosynthesis, in plain words?",
                 "Photosynthesis is how plants make food. Their leaves take in sunlight, water from the roots and carbon dioxide from the air. They turn these into sugar for energy and release oxygen, which is the air we breathe."),
    _instruction("birthday_message", "Write a short birthday message for my friend. | Help me write a birthday note for a friend. | Could you draft a quick birthday message for my best friend?",
                 "Happy birthday! I am so glad to have a friend like you. Thank you for all the laughs, the long talks and the support. I hope this year brings you lots of joy and adventure."),
    _instruction("save_money", "Give me three ways to save money each month. | How can I save a bit more money every month? | What are some easy ways to cut my monthly spending?",
                 "First, cook at home more often and bring lunch to work. Second, cancel subscriptions you rarely use. Third, set up an automatic transfer to savings on payday, so you save before you can spend."),
    _instruction("seasons", "Why do we have seasons? | Explain what causes the seasons. | Can you tell me why the seasons change?",
                 "We have seasons because the Earth is tilted on its axis. As it orbits the Sun, each half of the planet leans toward the Sun for part of the year, which brings longer days and warmer weather."),
    _instruction("job_interview", "How should I prepare for a job interview? | Give me tips to get ready for an interview. | What should I do before a job interview?",
                 "Research the company and the role, then practice answers to common questions out loud. Prepare two or three short stories about your past work. Plan your outfit and route the night before, and bring a few questions to ask."),
    _instruction("houseplant", "How do I keep a houseplant alive? | Give me advice for taking care of houseplants. | What does a houseplant need to stay healthy?",
                 "Most houseplants need bright but indirect light and water only when the top of the soil feels dry. Use a pot with drainage holes, wipe dust off the leaves, and feed the plant lightly in spring and summer."),
    _instruction("internet_for_kids", "Explain how the internet works to a child. | How would you describe the internet to a kid? | Can you explain the internet in a way a child understands?",
                 "The internet is like a giant web of roads between computers. When you open a website, your computer sends a message along these roads to another computer, which sends back the pictures and words you see."),
    _instruction("morning_routine", "Suggest a healthy morning routine. | What is a good routine for the morning? | Help me plan a healthier morning.",
                 "Wake up at the same time each day and drink a glass of water. Spend ten minutes stretching or walking outside, then eat a breakfast with some protein. Finally, write down the three most important tasks for your day."),
    _instruction("public_speaking", "How can I get better at public speaking? | Give me tips for speaking in front of people. | What helps with nerves when giving a talk?",
                 "Practice your talk out loud several times, ideally in front of a friend. Know your first minute by heart, because nerves are worst at the start. Speak slowly, pause between points, and look at a few friendly faces."),
    _instruction("volcano", "Explain why volcanoes erupt. | What makes a volcano erupt? | Can you tell me how volcanic eruptions happen?",
                 "Deep underground, rock melts into magma, which is lighter than the rock around it. The magma rises and collects in a chamber. When gas and pressure build up enough, the magma forces its way to the surface and erupts."),
    _instruction("weekend_packing", "What should I pack for a weekend trip? | Help me make a packing list for two nights away. | Give me a short packing list for a weekend away.",
                 "Pack two changes of clothes, a warm layer, sleepwear and comfortable shoes. Add a toothbrush, toothpaste, any medicine, your phone charger and your wallet. A small bag, a water bottle and a snack are useful too."),
    _instruction("learn_language", "How can I learn a new language faster? | Give me tips for learning a foreign language. | What is the best way to pick up a new language?",
                 "Practice a little every day instead of a lot once a week. Learn the most common words first, listen to podcasts or shows in the language, and speak with real people as early as you can, even with mistakes."),
    _instruction("reduce_stress", "Give me some ways to reduce stress. | How can I feel less stressed? | What are good ways to deal with stress?",
                 "Take a short walk outside, since movement and fresh air calm the body. Try slow breathing, in for four counts and out for six. Write your worries down, and talk to someone you trust about what is bothering you."),
    _instruction("moon_phases", "Why does the Moon change shape? | Explain the phases of the Moon. | Can you tell me why we see different Moon phases?",
                 "The Moon does not really change shape. The Sun always lights half of it, and as the Moon orbits the Earth we see different amounts of that lit half, from a thin crescent to a full Moon."),
    _instruction("quiz_team_names", "Suggest some names for a trivia team. | Give me a few fun names for our quiz team. | What would be a good name for a pub quiz team?",
                 "Here are a few ideas: The Smarty Pants, Know It Ales, Les Quizerables, The Fact Hunters and Quiztopher Columbus. Pick one that fits your group, or mix two of them for something new."),
    _instruction("late_email", "Write a short email saying I will be late to a meeting. | Help me tell my team I am running late for the meeting. | Draft a quick note that I will join the meeting late.",
                 "Hi everyone, I am running about fifteen minutes late for our meeting today. Please start without me, and I will catch up as soon as I arrive. Sorry for the trouble, and thank you for your patience."),
    _instruction("fresh_bread", "How can I keep bread fresh longer? | What is the best way to stop bread going stale? | Give me tips for storing bread.",
                 "Keep bread in a paper or cloth bag at room temperature, away from sunlight, and eat it within a few days. For longer storage, slice it and freeze it, then toast slices straight from the freezer."),
    _instruction("start_exercising", "I want to start exercising. Where should I begin? | Give me a simple plan to start working out. | How should a beginner start exercising?",
                 "Start small with three sessions a week of twenty minutes. Walk briskly, then add simple body weight moves like squats, push ups against a wall and lunges. Increase the time a little each week and rest when you are sore."),
    _instruction("thunder", "What causes thunder? | Explain where the sound of thunder comes from. | Why do we hear thunder during storms?",
                 "Thunder is caused by lightning. A lightning bolt heats the air around it to extremely high temperatures in a split second. The air expands so quickly that it creates a shock wave, which we hear as a loud rumble."),
    _instruction("rainy_day_kids", "Suggest some activities for kids on a rainy day. | What can children do indoors when it rains? | Give me ideas to keep kids busy on a rainy afternoon.",
                 "Build a blanket fort and read stories inside it. Have a living room treasure hunt, bake simple cookies together, or put on a puppet show with socks. A dance party with their favorite songs also burns energy."),
    _instruction("neighbor_thanks", "Write a thank you note to my neighbor for watering my plants. | Help me thank my neighbor for looking after my plants. | Draft a thank you message for a neighbor who watered my garden.",
                 "Dear neighbor, thank you so much for watering my plants while I was away. Everything is green and happy thanks to you. Please let me know if I can ever return the favor. With warm wishes."),
    _instruction("recycling", "Why is recycling important? | Explain the benefits of recycling. | What good does recycling do?",
                 "Recycling turns used materials into new products, so we dig up and cut down fewer natural resources. It saves energy, reduces the waste that goes to landfills, and cuts pollution of the air, water and soil."),
    _instruction("budget", "Explain what a budget is. | What is a budget and why do I need one? | Can you explain budgeting simply?",
                 "A budget is a plan for your money. You list what you earn each month, then decide how much goes to bills, food, savings and fun. It helps you spend on purpose and avoid running short."),
    _instruction("cold_relief", "What can I do to feel better when I have a cold? | Give me tips for getting over a cold. | How can I ease the symptoms of a cold?",
                 "Rest as much as you can and drink plenty of water, tea or soup. Warm salt water can soothe a sore throat, and steam from a hot shower helps a blocked nose. See a doctor if you feel much worse."),
    _instruction("dog_sit", "How do I teach my dog to sit? | Give me steps to train a puppy to sit. | What is the easiest way to teach a dog the sit command?",
                 "Hold a treat near your dog's nose, then slowly move it up and back over the head. As the dog's bottom lowers, say sit and give the treat. Repeat a few short times every day."),
    _instruction("cooking_gift", "Suggest a gift for someone who loves cooking. | What should I buy a friend who enjoys cooking? | Give me present ideas for a home cook.",
                 "A good chef's knife, a cast iron pan, or a set of quality spices are great choices. You could also give a cooking class for two, or a cookbook from a cuisine they have always wanted to try."),
    _instruction("water_cycle", "Explain the water cycle. | How does the water cycle work? | Can you describe the water cycle briefly?",
                 "The Sun heats water in oceans and lakes, and it rises as vapor. High in the sky the vapor cools and forms clouds. When the droplets get heavy they fall as rain or snow, and the water flows back to the sea."),
    _instruction("procrastination", "How can I stop procrastinating? | Give me tips to beat procrastination. | What helps when I keep putting things off?",
                 "Break the task into tiny steps and start with one that takes only two minutes. Set a timer, remove distractions, and promise yourself a short break afterward. Starting is the hardest part, so make starting easy."),
    _instruction("composting", "How do I start composting at home? | Give me simple steps for making compost. | What do I need to begin a compost pile?",
                 "Pick a bin or a corner of the garden. Mix green scraps like fruit peels and coffee grounds with brown material like dry leaves and paper. Keep it damp, turn it every week, and in a few months you will have compost."),
    _instruction("bicycle_balance", "Why don't bicycles fall over when they move? | Explain how a moving bike stays upright. | What keeps a bicycle balanced while riding?",
                 "A moving bike stays up mainly because the rider keeps steering slightly into any lean, which brings the wheels back under the body. The spinning wheels and the shape of the front fork help the bike steer itself too."),
    _instruction("dinner_party", "Help me plan a small dinner party. | Give me tips for hosting dinner for six people. | How should I plan a dinner party at home?",
                 "Choose a simple menu you have cooked before, with one dish you can make ahead. Set the table and chill drinks early. Plan a starter that needs no work, and ask one friend to bring dessert."),
    _instruction("memory", "How can I improve my memory? | Give me tips for remembering things better. | What helps with a better memory?",
                 "Sleep well, since the brain stores memories during sleep. Review new information a few times over several days instead of all at once. Link new facts to things you already know, and test yourself instead of rereading."),
)


def item_split(item: InstructionItem) -> str:
    forms = [f"{item.instruction.id}/{n}" for n in range(len(item.instruction.phrasings))]
    return form_split(item.instruction.id, f"{item.instruction.id}/{item.phrasing}", forms)


@lru_cache(maxsize=None)
def instruction_items(split: str) -> tuple[InstructionItem, ...]:
    """All (phrasing, instruction) items of ``split``, in a fixed order."""
    items = [InstructionItem(i, n) for i in INSTRUCTIONS for n in range(len(i.phrasings))]
    return tuple(item for item in items if item_split(item) == split)


def build_alpaca(ctx: SessionContext) -> SessionScript:
    """One spoken instruction followed by a long scripted reply."""
    item = ctx.dealer.deal("instructions", instruction_items(ctx.split))
    reply = item.instruction.reply
    return SessionScript(
        task=ctx.task,
        item=item.id,
        item_parts=(item.id,),
        utterances=(Utterance("user", "request", (Piece(item.text),), lead_in(ctx.rng), True),),
        actions=(speak(0, reply),),
        behaviour={"type": "instruction_following", "respond_after_s": [At(0, "end")]},
        busy_until=(reply_end(0, reply),),
    )
