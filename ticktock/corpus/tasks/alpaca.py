"""Open spoken instructions with long scripted replies (``alpaca_eval``), also used as the long model
replies that the turn-taking tasks interrupt or backchannel over.

An instruction has three phrasings and one scripted reply of 30-45 words, with four authored variants
of about its length (the same advice in other words). An item is a (phrasing, instruction) pair; its
split follows ``ticktock.corpus.splits.form_split``, so every instruction keeps training phrasings.

Example::

    >>> item = instruction_items("train")[0]
    >>> item.id.startswith("alpaca/"), 30 <= len(item.instruction.reply.split()) <= 45
    (True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ticktock.corpus.script import At, Piece, SessionScript, Utterance, lead_in, reply_end, speak, variants_of
from ticktock.corpus.splits import form_split
from ticktock.corpus.tasks.base import SessionContext


@dataclass(frozen=True)
class Instruction:
    id: str
    phrasings: tuple[str, str, str]
    reply: str
    variants: tuple[str, ...] = ()  # other phrasings of the reply, of about its length


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


def _instruction(id: str, phrasings: str, reply: str, variants: tuple[str, ...]) -> Instruction:
    first, second, third = (p.strip() for p in phrasings.split("|"))
    return Instruction(id, (first, second, third), reply, variants_of(reply, variants))


INSTRUCTIONS = (
    _instruction("sleep_tips", "Give me three tips for sleeping better. | Could you share three tips for better sleep? | What are three things I can do to sleep better?",
                 "Here are three tips. First, go to bed and wake up at the same time every day. Second, keep your bedroom cool, dark and quiet. Third, avoid screens and caffeine in the hour before you sleep.",
                 ("Three tips. First, keep the same bedtime and wake up time every day, even on weekends. Second, make your room cool, dark and quiet. Third, skip screens and caffeine in the hour before bed.",
                  "Sure, three tips. One, keep a regular schedule, going to sleep and getting up at set times. Two, keep the room cool, dark and quiet. Three, avoid screens and caffeine an hour before bed.",
                  "First, stick to one schedule, going to bed and getting up at the same time daily. Second, keep the room cool, dark and quiet. Third, put screens away and skip caffeine an hour before bed.",
                  "Here are three. Go to bed and wake up at the same time every day. Keep your bedroom cool, quiet and dark. And in the hour before sleeping, avoid caffeine and switch off your screens.")),
    _instruction("rainbow", "Explain how a rainbow forms. | Can you tell me how rainbows are made? | How does a rainbow form?",
                 "A rainbow forms when sunlight passes through raindrops. Each drop bends the light, splits it into its colors, and reflects it back toward you. Because each color bends by a different amount, you see bands from red to violet.",
                 ("When sunlight shines through raindrops, each drop bends the light, splits it into colors and reflects it back to you. Every color bends by a slightly different amount, so you see separate bands from red to violet.",
                  "Rainbows appear when sunlight passes through drops of rain. The drops bend the light, spread it into its colors and bounce it back toward you. Since each color bends differently, the colors fan out from red to violet.",
                  "Sunlight entering a raindrop is bent, split into its colors, and reflected back toward your eyes. Each color bends by its own amount, so millions of drops together show you bands of color from red to violet.",
                  "A rainbow happens when the sun shines through falling rain. Every raindrop bends and reflects the light and splits it into colors. Different colors bend by different amounts, which is why you see bands from red to violet.")),
    _instruction("pasta_dinner", "Suggest a quick pasta dinner I can make tonight. | What is a fast pasta dish I could cook this evening? | Give me an idea for a quick pasta dinner.",
                 "Try garlic and lemon spaghetti. Boil the pasta, then warm olive oil with sliced garlic. Toss the pasta with the oil, lemon juice, a little pasta water and grated cheese. It takes about fifteen minutes.",
                 ("How about lemon garlic spaghetti? Cook the pasta while you warm olive oil with sliced garlic. Toss it all with lemon juice, a splash of pasta water and grated cheese. Ready in about fifteen minutes.",
                  "Make spaghetti with garlic and lemon. Boil the pasta and heat olive oil with sliced garlic. Mix the pasta into the oil with lemon juice, some cooking water and cheese. Dinner in about fifteen minutes.",
                  "A quick option is garlic and lemon spaghetti. Warm sliced garlic in olive oil while the pasta boils, then toss the pasta with it, lemon juice, some pasta water and grated cheese. About fifteen minutes.",
                  "Garlic lemon spaghetti is fast. Boil the pasta. Meanwhile warm olive oil with sliced garlic. Mix the pasta and oil with lemon juice, some pasta water and grated cheese. It takes about fifteen minutes.")),
    _instruction("study_focus", "How can I stay focused while studying? | Give me some advice for concentrating when I study. | What helps you focus during study sessions?",
                 "Put your phone in another room and work in short blocks of about twenty-five minutes with five minute breaks. Start each block with one clear goal, and keep water and your materials within reach so you do not get up.",
                 ("Leave your phone in another room and study in blocks of about twenty-five minutes, with five minute breaks in between. Give each block one clear goal, and keep water and your books close so you stay seated.",
                  "Move your phone out of the room, then work for about twenty-five minutes at a time with short five minute breaks. Begin every block with a single clear goal and keep water and materials within reach.",
                  "Try short focused blocks of about twenty-five minutes with five minute breaks, and keep your phone in another room. Set one clear goal for each block and have water and your materials nearby so you do not get up.",
                  "First, put the phone away in another room. Then work in twenty-five minute blocks with five minute breaks. Start each one with a clear goal, and keep water and everything you need within reach.")),
    _instruction("photosynthesis", "Describe photosynthesis in simple terms. | Can you explain photosynthesis simply? | What is photosynthesis, in plain words?",
                 "Photosynthesis is how plants make food. Their leaves take in sunlight, water from the roots and carbon dioxide from the air. They turn these into sugar for energy and release oxygen, which is the air we breathe.",
                 ("Photosynthesis is the way plants make their food. Leaves catch sunlight, get water from the roots and take carbon dioxide from the air. They turn these into sugar for energy and give off the oxygen we breathe.",
                  "Plants make food through photosynthesis. Using sunlight, they combine water from their roots with carbon dioxide from the air. This makes sugar, which gives them energy, and releases the oxygen we breathe.",
                  "In simple terms, photosynthesis is plants cooking with sunlight. Their leaves use light to turn water and carbon dioxide into sugar for energy. As a bonus, they release oxygen, which is what we breathe.",
                  "Photosynthesis is how a plant feeds itself. Its leaves absorb sunlight, its roots bring up water, and it takes carbon dioxide from the air. It turns all of this into sugar and releases oxygen for us to breathe.")),
    _instruction("birthday_message", "Write a short birthday message for my friend. | Help me write a birthday note for a friend. | Could you draft a quick birthday message for my best friend?",
                 "Happy birthday! I am so glad to have a friend like you. Thank you for all the laughs, the long talks and the support. I hope this year brings you lots of joy and adventure.",
                 ("Happy birthday to my wonderful friend! Thank you for the laughs, the long talks and always being there for me. I hope this new year of yours is full of joy and adventure.",
                  "Happy birthday! Having a friend like you is a gift. Thanks for every laugh, every long talk and all your support. May this year bring you plenty of joy and adventure.",
                  "Wishing you the happiest birthday! I am lucky to have a friend like you. Thank you for the laughter, the long chats and the support. Here is to a year of joy and adventure.",
                  "Happy birthday, my friend! I am so grateful for you, for all the laughs, long talks and support. I hope the year ahead brings you lots of happiness and adventure.")),
    _instruction("save_money", "Give me three ways to save money each month. | How can I save a bit more money every month? | What are some easy ways to cut my monthly spending?",
                 "First, cook at home more often and bring lunch to work. Second, cancel subscriptions you rarely use. Third, set up an automatic transfer to savings on payday, so you save before you can spend.",
                 ("One, cook at home more and take your lunch to work. Two, cancel any subscriptions you hardly use. Three, set an automatic transfer to savings on payday, so you save before you spend it.",
                  "Cook at home more often and pack lunch for work. Go through your subscriptions and cancel those you rarely use. On payday, move money to savings automatically, so you save before you spend.",
                  "First, eat out less by cooking at home and bringing lunch to work. Second, drop subscriptions you do not use. Third, have money moved to savings on payday, before you can spend it.",
                  "Here are three ways. Cook more meals at home and bring your own lunch. Cancel subscriptions you rarely use. And set up an automatic payday transfer to savings, so you save first, spend later.")),
    _instruction("seasons", "Why do we have seasons? | Explain what causes the seasons. | Can you tell me why the seasons change?",
                 "We have seasons because the Earth is tilted on its axis. As it orbits the Sun, each half of the planet leans toward the Sun for part of the year, which brings longer days and warmer weather.",
                 ("Seasons happen because the Earth's axis is tilted. As the Earth travels around the Sun, each half leans toward it for part of the year, and that half gets longer days and warmer weather.",
                  "The Earth is tilted on its axis. So as it circles the Sun, first one half and then the other leans toward the Sun, getting longer days and warmer weather for part of the year.",
                  "It is because the Earth is tilted. During its orbit around the Sun, each hemisphere spends part of the year leaning toward the Sun, which gives it longer days and warmer weather.",
                  "The tilt of the Earth's axis causes the seasons. Over the year, as the planet orbits the Sun, each half takes a turn leaning toward it, bringing longer days and warmer weather.")),
    _instruction("job_interview", "How should I prepare for a job interview? | Give me tips to get ready for an interview. | What should I do before a job interview?",
                 "Research the company and the role, then practice answers to common questions out loud. Prepare two or three short stories about your past work. Plan your outfit and route the night before, and bring a few questions to ask.",
                 ("Learn about the company and the role, and practice answering common questions out loud. Have two or three short stories about past work ready. Choose your outfit and route the night before, and prepare some questions.",
                  "Start by researching the company and the job. Practice common interview answers out loud, and prepare two or three short examples from past work. Sort out clothes and route the night before, and bring questions to ask.",
                  "Read up on the company and the role, then rehearse answers to common questions aloud. Prepare a few short stories about past work. The night before, plan what to wear and how to get there, and think of questions to ask.",
                  "Research the role and the company first. Say your answers to common questions out loud, and get two or three short stories about your work ready. Plan the outfit and route ahead of time, and bring some questions.")),
    _instruction("houseplant", "How do I keep a houseplant alive? | Give me advice for taking care of houseplants. | What does a houseplant need to stay healthy?",
                 "Most houseplants need bright but indirect light and water only when the top of the soil feels dry. Use a pot with drainage holes, wipe dust off the leaves, and feed the plant lightly in spring and summer.",
                 ("Give it bright, indirect light, and water only when the top of the soil feels dry. Choose a pot with drainage holes, dust the leaves now and then, and feed it lightly in spring and summer.",
                  "Most houseplants like bright light that is not direct, and water only once the top of the soil is dry. Make sure the pot drains, wipe the leaves clean, and fertilize gently in spring and summer.",
                  "Keep it in bright but indirect light, and wait until the top of the soil feels dry before watering. Use a pot with drainage holes, wipe dust off the leaves, and feed it lightly in spring and summer.",
                  "Houseplants mostly need indirect bright light and water only when the soil surface is dry. Use a pot with drainage holes, keep the leaves free of dust, and give a little plant food in spring and summer.")),
    _instruction("internet_for_kids", "Explain how the internet works to a child. | How would you describe the internet to a kid? | Can you explain the internet in a way a child understands?",
                 "The internet is like a giant web of roads between computers. When you open a website, your computer sends a message along these roads to another computer, which sends back the pictures and words you see.",
                 ("Imagine the internet as a huge web of roads joining computers. When you open a website, your computer sends a message down the roads to another computer, which sends back the words and pictures you see.",
                  "The internet is a giant network of roads linking computers all over the world. Opening a website sends a message along the roads to another computer, which sends the pictures and words back to you.",
                  "Think of the internet as a big web of roads between computers. Visiting a website means your computer sends a message along the roads, and another computer replies with the pictures and words you see.",
                  "The internet is like lots of roads joining computers together. When you open a website, a message travels from your computer to another one, and that computer sends back the pictures and words you see.")),
    _instruction("morning_routine", "Suggest a healthy morning routine. | What is a good routine for the morning? | Help me plan a healthier morning.",
                 "Wake up at the same time each day and drink a glass of water. Spend ten minutes stretching or walking outside, then eat a breakfast with some protein. Finally, write down the three most important tasks for your day.",
                 ("Get up at the same time every day and start with a glass of water. Stretch or take a short walk outside for ten minutes, then have a breakfast with protein. Last, write down your three most important tasks.",
                  "Wake at a regular time and drink some water first. Take ten minutes to stretch or walk outdoors, and eat a breakfast that includes protein. Then list the three most important things you want to do today.",
                  "Begin each day at the same hour with a glass of water. Then spend ten minutes moving, by stretching or walking outside, and eat breakfast with some protein. Finish by writing down your top three tasks for the day.",
                  "Keep a fixed wake up time and drink a glass of water. Walk outside or stretch for ten minutes, then have a protein breakfast. Finally, note the three most important tasks of your day.")),
    _instruction("public_speaking", "How can I get better at public speaking? | Give me tips for speaking in front of people. | What helps with nerves when giving a talk?",
                 "Practice your talk out loud several times, ideally in front of a friend. Know your first minute by heart, because nerves are worst at the start. Speak slowly, pause between points, and look at a few friendly faces.",
                 ("Rehearse your talk out loud several times, ideally with a friend listening. Learn the first minute by heart, since nerves are worst at the start. Then speak slowly, pause between points, and find friendly faces.",
                  "Say your talk out loud a few times, in front of a friend if you can. Memorize the opening minute, because that is when nerves hit hardest. Slow down, pause between ideas, and look at friendly faces.",
                  "Practice aloud several times, ideally for a friend. Know your opening minute perfectly, since the start is when nerves are worst. While speaking, go slowly, pause between points, and look at a few friendly faces.",
                  "Practice the talk out loud several times with a friend as your audience. Memorize your first minute, because nerves peak at the start. Then speak slowly, pause between points, and look at a few friendly faces.")),
    _instruction("volcano", "Explain why volcanoes erupt. | What makes a volcano erupt? | Can you tell me how volcanic eruptions happen?",
                 "Deep underground, rock melts into magma, which is lighter than the rock around it. The magma rises and collects in a chamber. When gas and pressure build up enough, the magma forces its way to the surface and erupts.",
                 ("Far below the surface, rock melts into magma, which is lighter than the solid rock around it. The magma rises and gathers in a chamber. When enough gas and pressure build up, it pushes to the surface and erupts.",
                  "Rock deep underground melts into magma. Because magma is lighter than the rock around it, it rises and collects in a chamber. Once gas and pressure get high enough, the magma breaks through to the surface and erupts.",
                  "Volcanoes erupt because of magma, which is melted rock deep underground. It is lighter than the rock around it, so it rises into a chamber. When the gas and pressure grow too strong, it bursts out at the surface.",
                  "Deep in the Earth, heat melts rock into magma. Being lighter than the rock around it, the magma rises and pools in a chamber. As gas and pressure build up, the magma finally forces its way out and erupts.")),
    _instruction("weekend_packing", "What should I pack for a weekend trip? | Help me make a packing list for two nights away. | Give me a short packing list for a weekend away.",
                 "Pack two changes of clothes, a warm layer, sleepwear and comfortable shoes. Add a toothbrush, toothpaste, any medicine, your phone charger and your wallet. A small bag, a water bottle and a snack are useful too.",
                 ("Bring two changes of clothes, a warm layer, something to sleep in and comfy shoes. Add your toothbrush, toothpaste, any medicine, your phone charger and wallet. A small bag, a water bottle and a snack also help.",
                  "You will want two outfits, a warm layer, sleepwear and comfy shoes. Then a toothbrush and toothpaste, any medicine you take, a phone charger and your wallet. A day bag, water bottle and snack are handy too.",
                  "Pack two sets of clothes, a warm layer, sleepwear and shoes you can walk in. Do not forget a toothbrush, toothpaste, medicine, your phone charger and wallet. A small bag, a water bottle and a snack help too.",
                  "For two nights, take two changes of clothes, a warm layer, sleepwear and comfy shoes, plus a toothbrush, toothpaste, any medicine, a phone charger and your wallet. A small bag, water bottle and snack help too.")),
    _instruction("learn_language", "How can I learn a new language faster? | Give me tips for learning a foreign language. | What is the best way to pick up a new language?",
                 "Practice a little every day instead of a lot once a week. Learn the most common words first, listen to podcasts or shows in the language, and speak with real people as early as you can, even with mistakes.",
                 ("Study a little each day rather than a lot once a week. Start with the most common words, listen to podcasts or shows in the language, and talk with real people as soon as you can, mistakes and all.",
                  "Short daily practice beats one long weekly session. Learn the most frequent words first, watch shows or listen to podcasts in the language, and speak with real people early, even if you make mistakes.",
                  "Do a bit every day instead of one big session a week. Focus first on the most common words, fill your ears with podcasts and shows in the language, and speak with people early on, even with mistakes.",
                  "Practice every day, even briefly, instead of once a week. Learn common words first, listen to podcasts or shows in the language, and do not wait to speak with real people, since mistakes are part of it.")),
    _instruction("reduce_stress", "Give me some ways to reduce stress. | How can I feel less stressed? | What are good ways to deal with stress?",
                 "Take a short walk outside, since movement and fresh air calm the body. Try slow breathing, in for four counts and out for six. Write your worries down, and talk to someone you trust about what is bothering you.",
                 ("Go for a short walk outside, because movement and fresh air calm your body. Breathe slowly, in for four counts and out for six. Write down your worries, and talk about what bothers you with someone you trust.",
                  "A short walk outdoors helps, since moving and fresh air relax the body. Practice slow breathing, four counts in and six counts out. Put your worries on paper, and share what bothers you with someone you trust.",
                  "Step outside for a short walk, as movement and fresh air calm you down. Try breathing in for four counts and out for six. Writing your worries down helps too, and so does talking to someone you trust.",
                  "Take a quick walk in the fresh air to calm your body. Breathe slowly, in for four counts and out for six. Then write down what worries you, and talk it over with someone you trust.")),
    _instruction("moon_phases", "Why does the Moon change shape? | Explain the phases of the Moon. | Can you tell me why we see different Moon phases?",
                 "The Moon does not really change shape. The Sun always lights half of it, and as the Moon orbits the Earth we see different amounts of that lit half, from a thin crescent to a full Moon.",
                 ("The Moon's shape never really changes. Half of it is always lit by the Sun, and as it goes around the Earth we see more or less of that lit half, from a thin crescent to a full Moon.",
                  "It only looks like it changes. The Sun always lights one half of the Moon, and as the Moon circles the Earth, we see different parts of the lit half, from a crescent to a full Moon.",
                  "The Moon stays round. Sunlight always falls on half of it, and as the Moon orbits us, we see changing amounts of that lit side, anywhere from a thin crescent to a full Moon.",
                  "Its shape stays the same. One half is always in sunlight, and while the Moon travels around the Earth, we see a different share of that sunny half, from a thin crescent to a full Moon.")),
    _instruction("quiz_team_names", "Suggest some names for a trivia team. | Give me a few fun names for our quiz team. | What would be a good name for a pub quiz team?",
                 "Here are a few ideas: The Smarty Pants, Know It Ales, Les Quizerables, The Fact Hunters and Quiztopher Columbus. Pick one that fits your group, or mix two of them for something new.",
                 ("How about The Smarty Pants, Know It Ales, Les Quizerables, The Fact Hunters or Quiztopher Columbus? Choose the one that suits your group, or combine two of them into something new.",
                  "Some fun options are Les Quizerables, The Fact Hunters, Know It Ales, The Smarty Pants and Quiztopher Columbus. Pick whichever fits your team, or blend two into a brand new name.",
                  "Try one of these: Quiztopher Columbus, The Smarty Pants, Les Quizerables, Know It Ales or The Fact Hunters. Go with the one your group likes best, or mix two together.",
                  "A few ideas: Know It Ales, The Fact Hunters, Les Quizerables, Quiztopher Columbus and The Smarty Pants. Choose one that matches your group, or put two together for something new.")),
    _instruction("late_email", "Write a short email saying I will be late to a meeting. | Help me tell my team I am running late for the meeting. | Draft a quick note that I will join the meeting late.",
                 "Hi everyone, I am running about fifteen minutes late for our meeting today. Please start without me, and I will catch up as soon as I arrive. Sorry for the trouble, and thank you for your patience.",
                 ("Hello team, I will be about fifteen minutes late to today's meeting. Please go ahead and start without me, and I will catch up when I arrive. Sorry for the trouble, and thanks for your patience.",
                  "Hi all, I am running roughly fifteen minutes behind for our meeting today. Feel free to begin without me, and I will join as soon as I can. Apologies, and thank you for understanding.",
                  "Hi everyone, a quick note that I will join today's meeting about fifteen minutes late. Please start without me and I will catch up once I arrive. Sorry about this, and thank you for your patience.",
                  "Hi team, I am about fifteen minutes late for our meeting today. Please do not wait for me, I will catch up as soon as I get there. Sorry for the delay, and thanks for bearing with me.")),
    _instruction("fresh_bread", "How can I keep bread fresh longer? | What is the best way to stop bread going stale? | Give me tips for storing bread.",
                 "Keep bread in a paper or cloth bag at room temperature, away from sunlight, and eat it within a few days. For longer storage, slice it and freeze it, then toast slices straight from the freezer.",
                 ("Store bread in a paper or cloth bag at room temperature, out of the sun, and finish it within a few days. To keep it longer, slice and freeze it, then toast the slices straight from frozen.",
                  "A paper or cloth bag at room temperature, away from sunlight, keeps bread fresh for a few days. For longer, slice the loaf, freeze it, and toast the slices right from the freezer.",
                  "Keep it at room temperature in a cloth or paper bag, out of direct sunlight, and eat it within a few days. If you need longer, freeze it sliced and toast the slices straight from the freezer.",
                  "Bread stays fresh longest in a paper or cloth bag at room temperature and away from the sun, for a few days. Beyond that, slice and freeze it, and toast slices directly from the freezer.")),
    _instruction("start_exercising", "I want to start exercising. Where should I begin? | Give me a simple plan to start working out. | How should a beginner start exercising?",
                 "Start small with three sessions a week of twenty minutes. Walk briskly, then add simple body weight moves like squats, push ups against a wall and lunges. Increase the time a little each week and rest when you are sore.",
                 ("Begin small, with three twenty minute sessions a week. Go for brisk walks, then add simple body weight moves such as squats, wall push ups and lunges. Add a little time each week, and rest when you feel sore.",
                  "Start with three sessions of twenty minutes each week. Brisk walking is a good base, and you can add squats, push ups against a wall and lunges. Build up the time slowly each week and rest when sore.",
                  "Keep it small at first: twenty minutes, three times a week. Walk briskly, and add easy body weight exercises like squats, wall push ups and lunges. Increase a bit every week, and take rest days when you are sore.",
                  "Try three twenty minute workouts a week to start. Do some brisk walking, then simple moves like squats, lunges and push ups against a wall. Each week add a little more time, and rest whenever you are sore.")),
    _instruction("thunder", "What causes thunder? | Explain where the sound of thunder comes from. | Why do we hear thunder during storms?",
                 "Thunder is caused by lightning. A lightning bolt heats the air around it to extremely high temperatures in a split second. The air expands so quickly that it creates a shock wave, which we hear as a loud rumble.",
                 ("Lightning causes thunder. A bolt of lightning heats the air around it to extreme temperatures in a split second. That air expands so fast that it makes a shock wave, and we hear it as a loud rumble.",
                  "Thunder comes from lightning. In a split second, a lightning bolt makes the air around it incredibly hot. The heated air expands so suddenly that it sends out a shock wave, which reaches us as a booming rumble.",
                  "When lightning strikes, it heats the nearby air to very high temperatures almost instantly. The air then expands so quickly that it creates a shock wave. That shock wave is the loud rumble we call thunder.",
                  "The sound of thunder is made by lightning. The bolt superheats the air around it in a fraction of a second, and the air expands so violently that it forms a shock wave we hear as a loud rumble.")),
    _instruction("rainy_day_kids", "Suggest some activities for kids on a rainy day. | What can children do indoors when it rains? | Give me ideas to keep kids busy on a rainy afternoon.",
                 "Build a blanket fort and read stories inside it. Have a living room treasure hunt, bake simple cookies together, or put on a puppet show with socks. A dance party with their favorite songs also burns energy.",
                 ("Make a blanket fort and read stories in it. Set up a treasure hunt in the living room, bake easy cookies together, or put on a sock puppet show. A dance party to their favorite songs also burns energy.",
                  "Try building a blanket fort for story time, or hide treasure around the living room for a hunt. You could bake simple cookies or make sock puppets for a show. A dance party burns off energy too.",
                  "Kids love a blanket fort with books inside. You can also run a living room treasure hunt, bake cookies together, or stage a puppet show with old socks. Put on their favorite songs for a dance party.",
                  "Build a fort out of blankets and read inside it. Plan a treasure hunt around the living room, bake some simple cookies, or do a sock puppet show. A dance party with favorite songs uses up energy too.")),
    _instruction("neighbor_thanks", "Write a thank you note to my neighbor for watering my plants. | Help me thank my neighbor for looking after my plants. | Draft a thank you message for a neighbor who watered my garden.",
                 "Dear neighbor, thank you so much for watering my plants while I was away. Everything is green and happy thanks to you. Please let me know if I can ever return the favor. With warm wishes.",
                 ("Dear neighbor, thank you for watering my plants while I was gone. They are all green and happy because of you. If I can ever return the favor, please just let me know. Warm wishes.",
                  "Hello neighbor, many thanks for looking after my plants while I was away. Everything is healthy and green, thanks to you. Please tell me if I can ever do the same for you. Best wishes.",
                  "Dear neighbor, I am so grateful that you watered my plants while I was away. They look green and happy. Let me know whenever I can return the favor. With warm wishes and thanks.",
                  "Dear neighbor, a big thank you for watering my plants during my trip. Thanks to you, everything is green and thriving. I would be glad to return the favor any time. Warmly.")),
    _instruction("recycling", "Why is recycling important? | Explain the benefits of recycling. | What good does recycling do?",
                 "Recycling turns used materials into new products, so we dig up and cut down fewer natural resources. It saves energy, reduces the waste that goes to landfills, and cuts pollution of the air, water and soil.",
                 ("Recycling makes new products out of used materials, so we take fewer natural resources from the ground and forests. It saves energy, sends less waste to landfills, and cuts pollution of air, water and soil.",
                  "When we recycle, old materials become new products, so we dig up and cut down fewer natural resources. It also saves energy, keeps waste out of landfills, and lowers pollution in the air, water and soil.",
                  "Recycling lets us reuse materials instead of taking more natural resources from the earth. It uses less energy than making things new, shrinks the waste in landfills, and cuts air, water and soil pollution.",
                  "It turns used materials into new things, so we need fewer fresh natural resources. Recycling saves energy, reduces how much waste ends up in landfills, and cuts down on pollution of the air, water and soil.")),
    _instruction("budget", "Explain what a budget is. | What is a budget and why do I need one? | Can you explain budgeting simply?",
                 "A budget is a plan for your money. You list what you earn each month, then decide how much goes to bills, food, savings and fun. It helps you spend on purpose and avoid running short.",
                 ("A budget is simply a plan for your money. You note what you earn each month and decide how much goes to bills, food, savings and fun. It helps you spend on purpose and not run short.",
                  "Think of a budget as a money plan. List your monthly income, then split it between bills, food, savings and fun. That way you spend on purpose and avoid running out before month end.",
                  "A budget is a plan that tells your money where to go. Start with what you earn each month, then set sums for bills, food, savings and fun, so you spend wisely and never run short.",
                  "A budget plans your money ahead of time. You note your monthly pay and decide what goes to bills, food, savings and fun. It keeps spending planned and helps you avoid running short.")),
    _instruction("cold_relief", "What can I do to feel better when I have a cold? | Give me tips for getting over a cold. | How can I ease the symptoms of a cold?",
                 "Rest as much as you can and drink plenty of water, tea or soup. Warm salt water can soothe a sore throat, and steam from a hot shower helps a blocked nose. See a doctor if you feel much worse.",
                 ("Get as much rest as you can and drink lots of water, tea or soup. Gargling salt water soothes a sore throat, and steam from a hot shower helps a blocked nose. See a doctor if it gets worse.",
                  "Rest well and keep drinking water, tea or soup. For a sore throat try warm salt water, and for a blocked nose breathe the steam of a hot shower. If you feel much worse, see a doctor.",
                  "Rest as much as possible and drink plenty of water, tea and soup. Warm salt water eases a sore throat, and a hot shower's steam clears a blocked nose. Call a doctor if you get much worse.",
                  "Take it easy, rest, and drink lots of water, tea or soup. Warm salt water can calm a sore throat, while steam from a hot shower opens a blocked nose. See a doctor if you feel a lot worse.")),
    _instruction("dog_sit", "How do I teach my dog to sit? | Give me steps to train a puppy to sit. | What is the easiest way to teach a dog the sit command?",
                 "Hold a treat near your dog's nose, then slowly move it up and back over the head. As the dog's bottom lowers, say sit and give the treat. Repeat a few short times every day.",
                 ("Hold a treat by your dog's nose and slowly move it up and back over its head. When its bottom goes down, say sit and give the treat. Practice a few short times each day.",
                  "Let your dog sniff a treat, then slowly raise it up and back over the head. As the dog sits to follow it, say sit and hand over the treat. Repeat in short sessions daily.",
                  "Put a treat by your dog's nose and move it slowly up and back over the head. The dog's bottom will drop, so say sit and reward it. Do this a few short times daily.",
                  "Start with a treat near the nose, then move it slowly back over your dog's head. As the bottom lowers, say sit and give the treat right away. Repeat a few short times a day.")),
    _instruction("cooking_gift", "Suggest a gift for someone who loves cooking. | What should I buy a friend who enjoys cooking? | Give me present ideas for a home cook.",
                 "A good chef's knife, a cast iron pan, or a set of quality spices are great choices. You could also give a cooking class for two, or a cookbook from a cuisine they have always wanted to try.",
                 ("Great choices are a good chef's knife, a cast iron pan, or a set of quality spices. You could also give a cooking class for two, or a cookbook for a cuisine they have always wanted to try.",
                  "Think about a quality chef's knife, a cast iron pan or a box of good spices. A cooking class for two, or a cookbook from a cuisine they want to explore, would be lovely too.",
                  "Someone who loves cooking would enjoy a good chef's knife, a cast iron pan, or quality spices. A cooking class for two, or a cookbook of a cuisine they have always wanted to try, works too.",
                  "You can rarely go wrong with a good chef's knife, a cast iron pan or a set of fine spices. Or give a cooking class for two, or a cookbook from a cuisine they have been wanting to try.")),
    _instruction("water_cycle", "Explain the water cycle. | How does the water cycle work? | Can you describe the water cycle briefly?",
                 "The Sun heats water in oceans and lakes, and it rises as vapor. High in the sky the vapor cools and forms clouds. When the droplets get heavy they fall as rain or snow, and the water flows back to the sea.",
                 ("The Sun warms water in oceans and lakes, and it rises into the air as vapor. Up high, the vapor cools and forms clouds. When the drops grow heavy, they fall as rain or snow, and flow back to the sea.",
                  "Sunlight heats the water in oceans and lakes, turning it into vapor that rises. The vapor cools high up and becomes clouds. Heavy drops then fall as rain or snow, and rivers carry it back to the sea.",
                  "First, the Sun heats water in lakes and oceans, and it rises as vapor. Then the vapor cools in the sky and forms clouds. Finally the drops get heavy and fall as rain or snow, flowing back to the sea.",
                  "Water in oceans and lakes is heated by the Sun and rises as vapor. In the cold air high up it forms clouds. When the droplets become heavy, they fall as rain or snow and the water returns to the sea.")),
    _instruction("procrastination", "How can I stop procrastinating? | Give me tips to beat procrastination. | What helps when I keep putting things off?",
                 "Break the task into tiny steps and start with one that takes only two minutes. Set a timer, remove distractions, and promise yourself a short break afterward. Starting is the hardest part, so make starting easy.",
                 ("Split the task into tiny steps and begin with one that takes just two minutes. Set a timer, clear away distractions, and promise yourself a short break afterward. Starting is the hardest part, so make it easy.",
                  "Cut the job into very small steps, and do a two minute step first. Use a timer, put distractions away, and plan a small break as a reward. The start is the hardest part, so make it easy.",
                  "Make the first step tiny, something that takes only two minutes. Then set a timer, remove distractions, and reward yourself with a short break. Getting started is the hard part, so keep starting simple.",
                  "Break the work into small pieces and start with a two minute one. Set a timer, turn off distractions, and promise yourself a quick break afterward. Once you start, the rest gets easier, so make starting easy.")),
    _instruction("composting", "How do I start composting at home? | Give me simple steps for making compost. | What do I need to begin a compost pile?",
                 "Pick a bin or a corner of the garden. Mix green scraps like fruit peels and coffee grounds with brown material like dry leaves and paper. Keep it damp, turn it every week, and in a few months you will have compost.",
                 ("Choose a bin or a corner of your garden. Mix green scraps like fruit peels and coffee grounds with brown material like dry leaves and paper. Keep it damp, turn it weekly, and in a few months you will have compost.",
                  "Start with a bin or a spot in the garden. Combine greens like peels and coffee grounds with browns like dry leaves and paper. Keep the pile damp, turn it every week, and you will have compost in a few months.",
                  "You just need a bin or a corner of the garden. Add green scraps, like fruit peels and coffee grounds, and brown things, like dry leaves and paper. Keep it moist, turn it weekly, and wait a few months for compost.",
                  "Set aside a bin or a garden corner. Layer green scraps such as fruit peels and coffee grounds with dry leaves and paper. Keep it damp and turn it every week, and after a few months you will have compost.")),
    _instruction("bicycle_balance", "Why don't bicycles fall over when they move? | Explain how a moving bike stays upright. | What keeps a bicycle balanced while riding?",
                 "A moving bike stays up mainly because the rider keeps steering slightly into any lean, which brings the wheels back under the body. The spinning wheels and the shape of the front fork help the bike steer itself too.",
                 ("Mostly it is the rider, who keeps steering a little into any lean, so the wheels move back under the body. The spinning wheels and the shape of the front fork also help the bike steer itself.",
                  "A bike in motion stays upright mainly because the rider steers slightly toward any lean, bringing the wheels back under them. The spinning wheels and the front fork's shape also help it steer on its own.",
                  "The main reason is steering. Whenever the bike leans, the rider turns slightly into the lean, which moves the wheels back under the body. The spinning wheels and the front fork's design help it steer itself too.",
                  "Riders keep a moving bike up by steering slightly into every lean, which puts the wheels back underneath them. On top of that, the spinning wheels and the front fork's shape let the bike steer itself a little.")),
    _instruction("dinner_party", "Help me plan a small dinner party. | Give me tips for hosting dinner for six people. | How should I plan a dinner party at home?",
                 "Choose a simple menu you have cooked before, with one dish you can make ahead. Set the table and chill drinks early. Plan a starter that needs no work, and ask one friend to bring dessert.",
                 ("Pick a simple menu you have made before, with one dish you can prepare ahead. Set the table and chill drinks early. Plan a starter that takes no work, and ask a friend to bring dessert.",
                  "Keep the menu simple, with dishes you have cooked before and one you can make ahead. Set the table and cool drinks early, serve a starter that needs no work, and let a friend do dessert.",
                  "Cook a simple menu you already know, with one dish made ahead of time. Get the table set and drinks chilled early. Choose a starter that needs no cooking, and ask a friend to do dessert.",
                  "Plan a simple menu you have cooked before, and make one dish in advance. Set the table and chill drinks early. A starter that needs no work saves time, and a friend can bring dessert.")),
    _instruction("memory", "How can I improve my memory? | Give me tips for remembering things better. | What helps with a better memory?",
                 "Sleep well, since the brain stores memories during sleep. Review new information a few times over several days instead of all at once. Link new facts to things you already know, and test yourself instead of rereading.",
                 ("Get good sleep, because the brain stores memories while you sleep. Go over new information a few times across several days, not all at once. Connect new facts to what you know, and quiz yourself instead of rereading.",
                  "Sleep matters most, since that is when the brain saves memories. Spread your review of new material over several days instead of cramming. Tie new facts to things you know already, and test yourself, not just reread.",
                  "Sleep well, as memories are stored during sleep. Review things a few times over several days, not all in one go. Link new ideas to what you already know, and test yourself instead of simply rereading.",
                  "First, sleep enough, because sleep is when memories get stored. Revisit new information a few times over several days. Relate new facts to things you already know, and practice recalling them instead of rereading.")),
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
        actions=(speak(0, reply, item.instruction.variants),),
        behaviour={"type": "instruction_following", "respond_after_s": [At(0, "end")]},
        busy_until=(reply_end(0, reply),),
    )
