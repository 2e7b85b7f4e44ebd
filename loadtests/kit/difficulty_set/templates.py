"""Templated prompts of the evaluation set: several wordings per (domain, label), with slots.

Each template is a format string; slots are filled from the lists in ``SLOTS``. Easy and hard
templates share vocabulary on purpose (both say "explain", both quote code or long text) so a
single word does not give the label away.
"""

from __future__ import annotations

from loadtests.kit.difficulty_set import passages as p

SLOTS: dict[str, list[str]] = {
    "pet": ["kitten", "puppy", "parrot", "hamster", "rabbit", "tortoise"],
    "occasion": ["a rainy Sunday", "a date night", "a long flight", "a family evening"],
    "genre": ["comedy", "sci-fi", "documentary", "animated", "thriller"],
    "ingredient": ["chickpeas", "leftover rice", "spinach", "eggs", "sweet potatoes"],
    "blunt": [
        "Your report is late again.",
        "I can't come, stop asking.",
        "Fix this by tomorrow.",
        "That idea won't work.",
    ],
    "option_pair": [
        "renting or buying a flat in the city",
        "a master's degree or two more years of work experience",
        "hiring a senior engineer or two juniors",
        "moving our monolith to microservices or modularising it in place",
        "paying off my student loan early or investing the money",
    ],
    "position": [
        "cities should ban private cars from their centres",
        "homework should be abolished in primary schools",
        "social media companies should verify every user's identity",
        "nuclear power is essential for decarbonisation",
    ],
    "lang": ["Python", "JavaScript", "Go", "Rust", "Java", "C#"],
    "simple_task": [
        "reverse a string",
        "get the length of a list",
        "read a file line by line",
        "convert a string to uppercase",
        "check whether a key exists in a map",
        "sort a list of numbers",
        "get the current date",
    ],
    "cmd": ["git stash", "chmod +x script.sh", "pip freeze", "docker ps", "cd ..", "grep -r"],
    "hard_thing": [
        "an LRU cache with O(1) get/put and per-entry TTL expiry",
        "a consistent-hashing ring with virtual nodes and rebalancing",
        "Raft leader election with randomized timeouts",
        "a B-tree with deletion and node merging",
        "a work-stealing thread pool",
        "a persistent (immutable) red-black tree",
        "an incremental parser with error recovery for arithmetic expressions",
    ],
    "percent": ["10", "25", "12.5", "40", "75"],
    "number": ["80", "240", "1,200", "64", "350"],
    "fraction": ["1/4", "2/5", "7/8", "3/20"],
    "proof_stmt": [
        "the square root of 3 is irrational",
        "every tree with n vertices has n - 1 edges",
        "a group of prime order is cyclic",
        "the harmonic series diverges",
        "there is no largest prime",
        "every continuous function on [0, 1] is bounded",
    ],
    "day": ["Monday", "Friday", "Sunday", "Thursday"],
    "pair": ["an elephant or a mouse", "a car or a bicycle", "the sun or the moon"],
    "person": ["Ana", "Ben", "Chloe", "Dmitri"],
    "other": ["Farah", "Gus", "Hana"],
    "passage_name": ["email", "meeting notes", "article", "product page"],
}

# The passages a template may quote; the slot {text} is filled with one of them.
TEXTS: dict[str, str] = {
    "email": p.LANDLORD_EMAIL,
    "meeting notes": p.MEETING_NOTES,
    "article": p.BIKE_ARTICLE,
    "product page": p.PRODUCT_PAGE,
}

CODE_SNIPPETS: list[tuple[str, str]] = [
    ("python", p.PY_AVERAGE),
    ("js", p.JS_RENDER),
    ("sql", p.SQL_REPORT),
    ("java", p.JAVA_POINT),
]

TEMPLATES: dict[tuple[str, str], list[str]] = {
    ("chat", "easy"): [
        "What's a cute name for a {pet}?",
        "Recommend a {genre} film for {occasion}.",
        "Give me a quick dinner idea with {ingredient}.",
        'Please rewrite this so it sounds kinder: "{blunt}"',
        "Can you say this more politely? {blunt}",
        "I just got a {pet}! Any tips for the first night?",
        "Here's the {passage_name} I received. Can you tell me in a sentence what it's "
        "about?\n\n{text}",
        "One word to describe {occasion}?",
    ],
    ("chat", "hard"): [
        "I'm torn between {option_pair}. Weigh the trade-offs over five years, state your "
        "assumptions, and tell me what evidence would change your recommendation.",
        "Argue that {position}, then write the strongest rebuttal, then a synthesis a skeptic "
        "would accept.",
        "Steelman the view that {position}.",
        "Help me decide: {option_pair}?",
        "Write a short debate between two experts on whether {position}; each must concede "
        "one point and neither may strawman the other.",
        "What are the second-order effects if {position} became law?",
    ],
    ("code", "easy"): [
        "How do I {simple_task} in {lang}?",
        "{lang}: {simple_task}?",
        "What does `{cmd}` do?",
        "Quick question - what's the {lang} syntax to {simple_task}?",
        "Add comments to this code explaining each line:\n```{code_lang}\n{code}\n```",
        "Rename the variables in this snippet to more descriptive names:\n```{code_lang}\n"
        "{code}\n```",
        "Which language is this written in?\n\n{code}",
    ],
    ("code", "hard"): [
        "Implement {hard_thing} in {lang}, with tests.",
        "Design and implement {hard_thing} in {lang}. It must be thread-safe, avoid global "
        "locks on the read path, and come with a complexity analysis.",
        "Write {hard_thing}.",
        "Port this to {lang}, make it concurrent without data races, and explain the memory "
        "model guarantees you rely on:\n```{code_lang}\n{code}\n```",
        "Review this code for correctness, performance and security; rank the issues by "
        "severity and rewrite the worst part:\n```{code_lang}\n{code}\n```",
        "In {lang}, how would you build {hard_thing} that survives process restarts?",
    ],
    ("math", "easy"): [
        "What is {percent}% of {number}?",
        "Convert {fraction} to a percentage.",
        "{fraction} as a decimal?",
        "Calculate {percent}% of {number}, please.",
        "If a shirt costs {number} and is {percent}% off, what's the discount?",
        "what is {number} divided by 4",
    ],
    ("math", "hard"): [
        "Prove that {proof_stmt}.",
        "Give a rigorous proof that {proof_stmt}, and point out where each hypothesis is used.",
        "Show that {proof_stmt}. Then state and prove a generalisation.",
        "Is it true that {proof_stmt}? Justify carefully.",
        "Derive a closed form for the number of binary strings of length n with no two "
        "adjacent 1s, and prove it by induction; then compute it for n = {percent}.",
        "Find the expected number of fixed points of a random permutation of {number} "
        "elements and its variance, with derivations.",
    ],
    ("extraction", "easy"): [
        "List every date mentioned in this {passage_name}:\n\n{text}",
        "Pull out all the numbers in the following {passage_name}.\n\n{text}",
        "Which people are named in this {passage_name}?\n\n{text}",
        "Copy the first sentence of this {passage_name}:\n\n{text}",
        "Give me the title-cased version of: '{blunt}'",
        "Extract the name and email from: 'Contact: Dana Whitfield <dana@{pet}s.example>'",
    ],
    ("extraction", "hard"): [
        "From this {passage_name}, extract every commitment as JSON (who, what, by when), "
        "resolve relative dates, merge duplicates, and flag any two that conflict.\n\n{text}",
        "Build a knowledge graph (entities, typed relations, evidence spans) from this "
        "{passage_name}, then list the three facts that are implied but never stated.\n\n"
        "{text}",
        "Identify the unstated assumptions in this {passage_name} and say for each what "
        "would follow if it were false.\n\n{text}",
        "Extract every quantitative claim from this {passage_name}, check them for internal "
        "consistency, and recompute any derived figure you can.\n\n{text}",
        "From the {passage_name}, infer who depends on whom.\n\n{text}",
        "Normalise every amount in this {passage_name} to one currency, build a table that "
        "reconciles the totals, and explain any figure that cannot be reconciled.\n\n{text}",
        "Segment this {passage_name} into discourse units, label each with its rhetorical "
        "role (claim, evidence, concession, request), and show how they connect.\n\n{text}",
    ],
    ("reasoning", "easy"): [
        "If today is {day}, what day is it tomorrow?",
        "Which is bigger, {pair}?",
        "If yesterday was {day}, what is today?",
        "{person} has 3 apples and gives one to {other}. How many does {person} have left?",
        "Is {day} a weekday?",
        "Is {pair} more likely to fit in a shoebox?",
        "In this {passage_name}, is anyone's name mentioned more than once?\n\n{text}",
    ],
    ("reasoning", "hard"): [
        "Three friends meet on {day}s. Ana never comes two weeks in a row, Ben only comes when "
        "Ana doesn't, and Cy comes whenever exactly one of them came the week before. If "
        "only Ana came this week, who comes in four weeks? Show your reasoning.",
        "A says: 'At least one of us is a knave.' B says nothing. If knights always tell "
        "the truth and knaves always lie, what are A and B? Then solve it again when B "
        "replies 'A is a knight'.",
        "Which is the better analogy for technical debt, a mortgage or a credit card? Argue "
        "both sides, then decide.",
        "{person} sits opposite {other} at a round table for four; Dee is not next to "
        "{other}, and the fourth seat belongs to Eli. List every seating that fits and say "
        "which extra clue would make it unique.",
        "Exactly one of {person}, {other} and Eli took the last biscuit. {person} says "
        "'{other} did it', {other} says 'I didn't', Eli says 'I didn't'. If exactly one "
        "statement is true, who took it? Check every case.",
        "Find the flaw: 'Every {day} I carry an umbrella and it never rains, so umbrellas "
        "prevent rain.' Then design an experiment that would actually test it.",
        "Given the {passage_name} below, what can you infer that is not stated, and how "
        "confident are you in each inference?\n\n{text}",
    ],
}
