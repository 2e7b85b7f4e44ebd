"""Hand-written prompts of the evaluation set: (domain, label, prompt).

Labelling rule: "hard" when a small instruction model (1-3 B parameters) would likely fail or
give a shallow answer: multi-step reasoning, non-trivial code, proofs, many interacting
constraints, careful synthesis. "easy" when a small model answers it well, however long the
prompt is. Short hard prompts and long easy ones are included on purpose.
"""

from __future__ import annotations

from tests.unit.classify.evalset import passages as p

Item = tuple[str, str, str]

CHAT: list[Item] = [
    ("chat", "easy", "hey there! how's it going?"),
    ("chat", "easy", "Good morning :) Can you tell me a fun fact about octopuses?"),
    ("chat", "easy", "What should I name my new goldfish? He's orange and kind of grumpy."),
    ("chat", "easy", "Thanks, that was really helpful!"),
    ("chat", "easy", "Tell me a short joke about cats."),
    (
        "chat",
        "easy",
        "Can you suggest three board games for a family evening with kids aged 8 and 11?",
    ),
    ("chat", "easy", "Write a two-line birthday message for my coworker Sam."),
    ("chat", "easy", "What's a good song to play at a summer barbecue?"),
    (
        "chat",
        "easy",
        "So my sister is visiting next weekend and she's a huge fan of gardening, old movies "
        "and anything with lemons in it. I already booked a table at a little Italian place on "
        "Saturday night and we'll probably walk around the botanical garden on Sunday morning, "
        "because she always talks about the glasshouses there. We were roommates for years "
        "and she still teases me about the time I burned the pancakes three mornings in a row. "
        "Anyway, I want to get her something small to welcome her. Any quick gift ideas?",
    ),
    (
        "chat",
        "easy",
        "Here's the email my landlord sent to everyone in the building. Just tell me in one "
        "sentence whether I need to do anything.\n\n" + p.LANDLORD_EMAIL,
    ),
    ("chat", "easy", "Make this sound friendlier: 'Send me the file today.'"),
    ("chat", "easy", "I'm bored. Give me one idea for something creative to do this afternoon."),
    (
        "chat",
        "easy",
        "Hi!\n\nQuick one: a name for a book club that reads mostly mysteries?\n\nThanks :)",
    ),
    (
        "chat",
        "hard",
        "I need a week-long meal plan.\n\nConstraints:\n- vegetarian, no soy\n- at least 120 g "
        "protein per day\n- under 60 EUR for the week\n- no meal repeated\n\nShow the "
        "shopping list and the protein per day.",
    ),
    ("chat", "hard", "Steelman the case for a four-day work week, then tear it apart."),
    ("chat", "hard", "Is it ever right to break a promise to a dying friend? Defend a position."),
    (
        "chat",
        "hard",
        "My co-founder wants to raise a big round now; I want to stay bootstrapped another "
        "year. We both have good reasons. Help me figure out what we are actually disagreeing "
        "about, and how we could test it cheaply.",
    ),
    (
        "chat",
        "hard",
        "Write a eulogy for a grumpy but secretly kind grandfather who fixed bicycles, in a "
        "voice that moves from humour to grief without feeling forced, under 400 words, and "
        "without using the words 'passed away', 'journey' or 'legacy'.",
    ),
    (
        "chat",
        "hard",
        "I have job offers from a seed-stage startup (equity 0.4%, salary 20% lower) and a "
        "large bank (stable, bonus up to 15%). I'm 31, have a mortgage, and my partner is "
        "finishing a PhD. Walk through how to compare them, including what the equity might "
        "realistically be worth, and tell me which questions I should ask each employer.",
    ),
    ("chat", "hard", "Write a sonnet about entropy where each quatrain uses a different metaphor."),
    (
        "chat",
        "hard",
        "Role-play as a skeptical city councillor while I pitch a congestion charge; push "
        "back with the strongest objections and concede only to good arguments.",
    ),
    ("chat", "hard", "Why do some empires collapse quickly while others decline for centuries?"),
    (
        "chat",
        "hard",
        "Plan a 10-day trip to Japan in November for two people with a 3,000 EUR budget "
        "excluding flights: one of us uses a wheelchair, we want at least two onsen that are "
        "accessible, no more than three hotel changes, and one day fully free of trains.",
    ),
]

CODE: list[Item] = [
    ("code", "easy", "How do I check the Python version from the terminal?"),
    ("code", "easy", "What's the difference between == and === in JavaScript?"),
    ("code", "easy", "Fix the typo: `SELEC name FROM users;`"),
    ("code", "easy", "git: how do I undo my last commit but keep the changes?"),
    ("code", "easy", "What does `ls -la` show?"),
    (
        "code",
        "easy",
        "Add a one-line docstring to this function, nothing else:\n```python\n"
        + p.PY_AVERAGE
        + "\n```",
    ),
    (
        "code",
        "easy",
        "Can you format this SQL so that each clause is on its own line? It's already "
        "correct.\n\n" + p.SQL_REPORT.replace("\n", " "),
    ),
    (
        "code",
        "easy",
        "Rename the class to `Coordinate` and keep everything else the same:\n```java\n"
        + p.JAVA_POINT
        + "\n```",
    ),
    (
        "code",
        "easy",
        "What does this JavaScript function do, in one sentence?\n```js\n" + p.JS_RENDER + "\n```",
    ),
    ("code", "easy", "Convert this to an f-string: print('Hello, ' + name + '!')"),
    ("code", "easy", "How do I install the requests package with pip?"),
    ("code", "easy", "In CSS, how do I center text horizontally?"),
    ("code", "easy", "Hello,\n\nHow do I print a list in Python without the brackets?\n\nThanks."),
    (
        "code",
        "hard",
        "Build a CLI tool in Go that syncs a local folder to S3.\n\nRequirements:\n- resume "
        "interrupted uploads\n- at most 4 concurrent uploads\n- never delete remote files "
        "without --prune\n\nInclude tests for the resume logic.",
    ),
    ("code", "hard", "Implement an ABA-safe lock-free stack in C++."),
    ("code", "hard", "Write a regex engine with backtracking that supports *, +, ? and groups."),
    (
        "code",
        "hard",
        "This Go cache hangs forever under load. Explain exactly why and fix it without "
        "holding the lock during the expiry check's slow path:\n```go\n" + p.GO_CACHE + "\n```",
    ),
    (
        "code",
        "hard",
        "Why does this print less than 800000 even though I use a lock? Explain the race and "
        "fix it.\n```python\n" + p.PY_WORKERS + "\n```",
    ),
    (
        "code",
        "hard",
        "We get this in production about once a day:\n\n"
        + p.PY_TRACE
        + "\n\nThe worker is supposed to keep running forever. What is the sequence of events "
        "that leads here, and how should the worker's lifecycle be restructured?",
    ),
    (
        "code",
        "hard",
        p.JAVA_TRACE + "\n\nexpireSessions iterates the sessions map while other threads log "
        "users in. What's the right fix, and what are the trade-offs of the alternatives?",
    ),
    (
        "code",
        "hard",
        "Design a schema migration strategy for a zero-downtime column rename in Postgres.",
    ),
    (
        "code",
        "hard",
        "Write a TypeScript type that turns a union of string literals like 'a.b.c' | 'a.d' "
        "into the nested object type { a: { b: { c: unknown }, d: unknown } }.",
    ),
    ("code", "hard", "Make my Rust async HTTP client survive a flaky upstream; where do I start?"),
    (
        "code",
        "hard",
        "Given these logs, what is the most likely root cause and what would you change in "
        "the connection pool and retry settings?\n\n" + p.SERVER_LOG,
    ),
]

MATH: list[Item] = [
    ("math", "easy", "What is 15% of 80?"),
    ("math", "easy", "what's 7 times 8"),
    ("math", "easy", "Convert 3/8 to a decimal."),
    ("math", "easy", "Solve for x: 2x + 3 = 11"),
    ("math", "easy", "Is 91 a prime number?"),
    ("math", "easy", "Round 3.14159 to two decimal places."),
    ("math", "easy", "What is the area of a circle with radius 3 cm? Use pi = 3.14."),
    (
        "math",
        "easy",
        "My grandmother is making jam this weekend, as she does every year when the plums in "
        "her garden are ripe. She says each jar needs about 400 grams of fruit, and this year "
        "the tree gave a lot: she picked 6 kilograms yesterday afternoon before the rain came, "
        "and she thinks there might be another basket left if the birds don't get it first. "
        "She already has a shelf full of jars from last year, mostly apricot. How many jars "
        "can she fill with the 6 kilograms?",
    ),
    ("math", "easy", "What is $3^4$?"),
    ("math", "easy", "Simplify 12/18."),
    ("math", "easy", "How many minutes are there in 3.5 hours?"),
    ("math", "easy", "What is the average of 4, 8 and 15?"),
    ("math", "easy", "Hi there,\n\nwhat's 250 times 4?\n\ncheers"),
    ("math", "hard", "Prove that there are infinitely many primes of the form 4k + 3."),
    ("math", "hard", "Is 2^61 - 1 prime? Justify."),
    ("math", "hard", "Show that e is irrational."),
    (
        "math",
        "hard",
        "Evaluate $\\int_0^{\\infty} \\frac{\\sin x}{x}\\,dx$ and justify every interchange of "
        "limits you use.",
    ),
    ("math", "hard", "Find all integer solutions of x^2 - 2y^2 = 1."),
    (
        "math",
        "hard",
        "A fair coin is tossed until two consecutive heads appear. What is the expected "
        "number of tosses? Derive it, then generalise to k consecutive heads.",
    ),
    ("math", "hard", "Why is the determinant multiplicative?"),
    ("math", "hard", "How many ways can you tile a 3 x 10 board with 2 x 1 dominoes?"),
    (
        "math",
        "hard",
        "Let $f:\\mathbb{R}\\to\\mathbb{R}$ satisfy $f(x+y) = f(x) + f(y)$ and be bounded on "
        "$[0,1]$. Prove that $f(x) = cx$ for some constant $c$.",
    ),
    (
        "math",
        "hard",
        "Compute the eigenvalues of the n x n matrix with 2 on the diagonal and 1 elsewhere.",
    ),
]

EXTRACTION: list[Item] = [
    ("extraction", "easy", "What's the email address in: 'reach me at lee.park@example.com'?"),
    (
        "extraction",
        "easy",
        "List every phone number in this email:\n\n" + p.LANDLORD_EMAIL,
    ),
    ("extraction", "easy", "Which city is mentioned here? 'We moved to Lisbon last spring.'"),
    (
        "extraction",
        "easy",
        "Please help.\n\nWhat time does the elevator inspection start?\n\n" + p.LANDLORD_EMAIL,
    ),
    (
        "extraction",
        "hard",
        "Below is a support chat.\n\nFor each customer request give:\n1. the intent\n2. "
        "whether it was resolved\n3. the commitment made, with its date\n\nThen flag anything "
        "the agent promised that the invoice would contradict.\n\n" + p.SUPPORT_CHAT,
    ),
    (
        "extraction",
        "easy",
        "From the product page below, what is the price of the cream edition?\n\n" + p.PRODUCT_PAGE,
    ),
    (
        "extraction",
        "easy",
        "Who attended the meeting? Just the names, comma-separated.\n\n" + p.MEETING_NOTES,
    ),
    ("extraction", "easy", "Pull the order id out of this JSON: " + p.ORDER_JSON),
    (
        "extraction",
        "easy",
        "What new address did the customer give?\n\n" + p.SUPPORT_CHAT,
    ),
    ("extraction", "easy", "Get the year from 'Founded in 1998 in Oslo'."),
    ("extraction", "easy", "What are the hashtags in: 'Loved it! #travel #food #sunset'"),
    (
        "extraction",
        "easy",
        "How many kilometres of protected bike lanes does the city have now?\n\n" + p.BIKE_ARTICLE,
    ),
    (
        "extraction",
        "hard",
        "From the meeting notes below, build the dependency graph of action items (who is "
        "waiting on whom), detect any cycle, and say which single action would unblock the "
        "most work.\n\n" + p.MEETING_NOTES,
    ),
    (
        "extraction",
        "hard",
        "Reconcile the invoice against the purchase order line by line. For every "
        "discrepancy give the amount, the likely cause, and which document is probably "
        "right; then compute the corrected total including VAT.\n\n"
        + p.INVOICE_A
        + "\n\n"
        + p.INVOICE_B,
    ),
    (
        "extraction",
        "hard",
        "List each party's obligations in this contract with their concrete deadlines as "
        "dates, resolving clause overrides and the renewal logic.\n\n" + p.CONTRACT,
    ),
    (
        "extraction",
        "hard",
        "Extract the implicit assumptions behind the claim 'remote work lowers productivity' "
        "and classify each as empirical or normative.",
    ),
    (
        "extraction",
        "hard",
        "Reconstruct the chronological order of events in this story, including the ones that "
        "are only implied, and cite the phrase that supports each.\n\n" + p.LIGHTHOUSE_STORY,
    ),
    (
        "extraction",
        "hard",
        "Which claims in this article are causal and which are merely correlational? For "
        "each causal claim, name a confounder the article ignores.\n\n" + p.BIKE_ARTICLE,
    ),
    (
        "extraction",
        "hard",
        "Turn the support chat into a structured ticket: customer intent(s), entities, the "
        "resolution promised, any commitments with dates, and unresolved risks.\n\n"
        + p.SUPPORT_CHAT,
    ),
    (
        "extraction",
        "hard",
        "Extract a causal graph from: 'Rates rose, so housing cooled; rents spiked.'",
    ),
    (
        "extraction",
        "hard",
        "From these logs, derive a timeline of the incident, the earliest symptom, and the "
        "probable trigger, distinguishing evidence from speculation.\n\n" + p.SERVER_LOG,
    ),
    (
        "extraction",
        "hard",
        "Identify every entity and relation in the contract clause 'Notwithstanding clause 2, "
        "reports for December are due on 20 January.' and resolve what it overrides.",
    ),
]

REASONING: list[Item] = [
    ("reasoning", "easy", "If today is Wednesday, what day was it yesterday?"),
    ("reasoning", "easy", "Which is heavier, a kilo of feathers or a kilo of bricks?"),
    ("reasoning", "easy", "Is a whale a fish?"),
    ("reasoning", "easy", "What comes next: 2, 4, 6, 8, ...?"),
    ("reasoning", "easy", "Tom is taller than Ann. Who is shorter?"),
    (
        "reasoning",
        "easy",
        "Read this and tell me what colour the boy painted the lamp.\n\n" + p.LIGHTHOUSE_STORY,
    ),
    ("reasoning", "easy", "If it's raining, should I take an umbrella or sunglasses?"),
    ("reasoning", "easy", "All dogs are animals. Rex is a dog. Is Rex an animal?"),
    ("reasoning", "easy", "What is the opposite of 'ancient'?"),
    (
        "reasoning",
        "easy",
        "Based on the chat below, did the customer choose a refund or a replacement?\n\n"
        + p.SUPPORT_CHAT,
    ),
    (
        "reasoning",
        "hard",
        "On an island, knights always tell the truth and knaves always lie. A says 'B is a "
        "knave.' B says 'A and C are the same kind.' What is C?",
    ),
    (
        "reasoning",
        "hard",
        "Five houses in a row, each a different colour, with owners of different "
        "nationalities who keep different pets. The Brit lives in the red house; the Swede "
        "keeps dogs; the green house is immediately left of the white one; the owner of the "
        "green house drinks coffee; the Norwegian lives in the first house; the Norwegian "
        "lives next to the blue house. Who could own the fish? List every consistent "
        "arrangement.",
    ),
    ("reasoning", "hard", "Why can't a perfectly rational voter ever strictly prefer to vote?"),
    (
        "reasoning",
        "hard",
        "There are 100 prisoners and a light bulb. Design a protocol that guarantees someone "
        "eventually knows with certainty that all have visited the room.",
    ),
    ("reasoning", "hard", "You have 12 coins, one counterfeit. Find it in 3 weighings."),
    (
        "reasoning",
        "hard",
        "Four friends split a taxi.\n\nAna rode 10 km, Ben 6 km, Cy 6 km and Dee 2 km, all "
        "from the same start. The fare was 36 EUR.\n\nPropose a fair split, show it has the "
        "properties you claim, and compare it with the Shapley value.",
    ),
    (
        "reasoning",
        "hard",
        "A hospital's survival rate is higher than another's for both mild and severe cases, "
        "yet lower overall. How can that be, and which hospital should I choose?",
    ),
    (
        "reasoning",
        "hard",
        "Schedule six talks into three rooms and two slots such that Ana and Ben never "
        "overlap, the keynote is alone in its slot, and no room hosts two talks by the same "
        "team. Is it possible? Prove your answer.",
    ),
    ("reasoning", "hard", "What's wrong with Pascal's wager?"),
    (
        "reasoning",
        "hard",
        "Two envelopes, one holds twice the other. Switching always seems to gain 25% in "
        "expectation. Where exactly does the argument go wrong?",
    ),
    ("reasoning", "hard", "Could a company rationally prefer to lose a lawsuit? When?"),
]

ALL: list[Item] = CHAT + CODE + MATH + EXTRACTION + REASONING
