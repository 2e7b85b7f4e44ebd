"""Word classes whose members are easily swapped in a question that then asks something else.

Two questions that differ only by one word of a class ask about different things although
their embeddings stay close: a place of another granularity ("New York city" / "state"), a
person of another age or kind ("baby" / "toddler", the dose differs), a product variant
("iPhone 15" / "iPhone 15 Pro"). The verifier's features (``pair_features.py``) flag a content
word of a class found in one text only; the lists are short and general, written for issue
21 by the author of the near-miss sets (so their rows of these kinds are not independent of
it; QQP's are). Words are as the features see them: lower case, a final plural "s" dropped.
"""

from __future__ import annotations

_CLASSES = {
    "place": """city town village borough county state province region country nation
        continent district metro citie countie suburb neighborhood downtown island peninsula""",
    "person": """baby babie infant newborn toddler child children kid preschooler teen
        teenager adolescent adult elderly senior pensioner man men woman women boy girl
        pregnant pregnancy breastfeeding puppy puppie kitten dog cat""",
    "variant": """pro max plus mini ultra lite air se slim digital standard premium basic
        deluxe compact xl xs""",
}

CLASS_OF: dict[str, str] = {
    word: name for name, words in _CLASSES.items() for word in words.split()
}
