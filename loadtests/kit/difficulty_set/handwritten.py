"""Hand-written prompts of the evaluation set: (domain, label, prompt).

Labelling rule: "hard" when a small instruction model (1-3 B parameters) would likely fail or
give a shallow answer: multi-step reasoning, non-trivial code, proofs, many interacting
constraints, careful synthesis. "easy" when a small model answers it well, however long the
prompt is. Short hard prompts and long easy ones are included on purpose.
"""

from __future__ import annotations

from loadtests.kit.difficulty_set import passages as p
from loadtests.kit.difficulty_set.handwritten_text import EXTRACTION, REASONING, Item

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

ALL: list[Item] = CHAT + CODE + MATH + EXTRACTION + REASONING
