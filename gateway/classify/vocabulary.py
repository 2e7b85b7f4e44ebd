"""Cue words and markers of the difficulty features (``features.py``).

Words are lower-case ASCII bytes, matched against the set of words of the scanned window
(punctuation split them, so "trade-offs" gives "trade" and "offs", "don't" gives "don").
Lists avoid everyday English words ("let", "from", "go", "class") that would fire on prose;
the fitted weights decide how much each concept matters.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[bytes]:
    return frozenset(word.encode() for word in text.split())


CODE_KEYWORDS = _words(
    """def elif lambda async await println printf cout endl nullptr typedef namespace func fn
    impl struct const var bool int str dict tuple malloc stdout stderr null isinstance init
    self args kwargs len usize mut pub foreach elseif iter enum interface void public private
    static"""
)

CODE_TERMS = _words(
    """python javascript typescript java golang rust sql regex bash shell git docker
    kubernetes api http json css html compile compiler runtime thread threads mutex deadlock
    deadlocks race bug bugs debug refactor function functions variable variables method
    methods array syntax library package pip npm database query server endpoint cache
    concurrency concurrent exception segfault postgres linux terminal command script code
    snippet lock"""
)

# (gate word, marker): the marker is searched only when its gate word is present.
TRACE_MARKERS: tuple[tuple[bytes, str], ...] = (
    (b"traceback", "traceback (most recent call last)"),
    (b"exception", "exception in thread"),
    (b"at", "\n    at "),
    (b"at", "\n\tat "),
    (b"panic", "panic:"),
    (b"segmentation", "segmentation fault"),
    (b"error", "error[e"),
    (b"stack", "stack trace"),
    (b"dumped", "core dumped"),
)

MATH_WORDS = _words(
    """prove proof proofs derive derivation theorem lemma corollary integral integrate
    derivative differentiate equation equations polynomial matrix matrices eigenvalue
    eigenvalues determinant probability expectation expected variance prime primes modulo
    induction converge converges convergence diverge diverges inequality irrational integer
    integers rigorous combinatorial permutation permutations bounded continuous infinitely
    closed asymptotic recurrence"""
)

# Deliberately non-ASCII: these are the maths symbols to look for.
MATH_SYMBOLS = frozenset("∫∑∏√∞≤≥≠≈∂∀∃∈∉⊂⊆∪∩πθλσμ²³")  # noqa: RUF001

SEQUENCE_WORDS = _words("then next finally afterwards subsequently lastly secondly third")

NUMBERED_LINE_STARTS: tuple[str, ...] = ("\n1.", "\n2.", "\n3.", "\n4.", "\n5.", "\n1)", "\n2)")

CONSTRAINT_WORDS = _words(
    """must exactly without never always only ensure require requires required requirement
    requirements avoid mandatory strictly neither nor maximum minimum within"""
)

# (gate word, phrase): the phrase is searched only when its gate word is present.
CONSTRAINT_PHRASES: tuple[tuple[bytes, str], ...] = (
    (b"least", "at least"),
    (b"most", "at most"),
    (b"more", "no more than"),
    (b"not", "do not"),
    (b"don", "don't"),
)

BULLET_LINE_STARTS: tuple[str, ...] = ("\n- ", "\n* ", "\n• ")

REASONING = _words(
    """why explain explanation analyze analyse analysis compare contrast tradeoff tradeoffs
    trade justify justification evaluate design optimize optimise reason reasoning
    implication implications consequence consequences critique argue argument arguments
    strategy infer inference deduce assumption assumptions flaw flaws carefully consistent
    inconsistent robust cause causes causal pros cons weigh recommend recommendation
    dilemma paradox rebuttal synthesis nuanced hypothesis evidence implement architect
    review rank decide defend steelman debate plan schedule diagnose investigate prioritize
    prioritise reconcile generalise generalize negotiate"""
)

SIMPLE_WORDS = _words(
    """quick quickly simple simply just briefly translate define definition spell synonym
    opposite convert rename format reformat rewrite polite politely friendlier kinder
    summarize summarise tldr copy"""
)

SIMPLE_PHRASES: tuple[tuple[bytes, str], ...] = (
    (b"sentence", "one sentence"),
    (b"word", "one word"),
    (b"what", "what is"),
    (b"what", "what's"),
    (b"how", "how do i"),
)

# Every word the request features look up in the instruction (``features.py``): the
# instruction keeps only these of its words (``scanning.Instruction.cues``).
INSTRUCTION_CUES = (
    REASONING
    | SEQUENCE_WORDS
    | CONSTRAINT_WORDS
    | SIMPLE_WORDS
    | frozenset((b"step", b"walk", b"through", b"first", b"then"))
    | frozenset(gate for gate, _ in CONSTRAINT_PHRASES + SIMPLE_PHRASES)
)
