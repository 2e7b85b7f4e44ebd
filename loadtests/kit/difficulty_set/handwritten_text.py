"""Hand-written prompts of the evaluation set's extraction and reasoning domains.

The labelling rule is ``handwritten.py``'s; these two domains quote the longer passages of
``passages.py`` (emails, notes, contracts), so they live apart to keep each module small.
"""

from __future__ import annotations

from loadtests.kit.difficulty_set import passages as p

Item = tuple[str, str, str]  # (domain, label, prompt)

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
