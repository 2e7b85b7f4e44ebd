"""Common English antonym pairs, for the verifier's "a word was swapped for its opposite".

A general list of everyday opposites (adjectives, verbs, nouns), written for issue 21 by
the author of the near-miss evaluation set (so that set's antonym rows are not independent
of it; QQP's are). The guard's polarity groups (``guard.py``) cover the on/off,
enable/disable kind already and the features also catch opposites made with a negating
prefix (un-, dis-, in-, ...). The features compare them after their light stemming (a
final plural "s" dropped).
"""

from __future__ import annotations

_PAIRS = """
above below; absent present; accept decline; accept refuse; active passive; add subtract; admit
deny; adult child; advantage disadvantage; alive dead; always never; ancient modern; appear
disappear; approve reject; arrive depart; asleep awake; attack defend; backward forward;
beautiful ugly; begin end; beginner expert; benefit harm; big small; bitter sweet; black white;
blunt sharp; bottom top; brave cowardly; bright dark; bright dim; broad narrow; buy rent; calm
anxious; capture release; careful careless; cause effect; cheap costly; clean dirty; clear
cloudy; clever stupid; close far; combine separate; come go; common rare; complex simple;
concave convex; constant variable; correct incorrect; create destroy; cure cause; damage repair;
day night; deep shallow; defeat victory; dense sparse; deposit withdraw; descend ascend; dry
wet; dull sharp; early late; easy hard; easy difficult; empty full; enemy friend; entrance exit;
even odd; expand shrink; expand collapse; export import; external internal; fail pass; fail
succeed; fat thin; father mother; dad mom; female male; fertile infertile; few many; fiction
nonfiction; find lose; float sink; forget remember; fresh stale; friend foe; front back; gentle
rough; give take; guilty innocent; happy sad; hard soft; hate love; heaven hell; high low; hire
fire; hot cold; husband wife; inner outer; join leave; junior senior; large small; lead follow;
left right; lend borrow; light dark; like dislike; long short; loose tight; loosen tighten; loud
quiet; love hate; major minor; majority minority; man woman; men women; boy girl; son daughter;
brother sister; maximum minimum; mean kind; melt freeze; more less; morning evening; most least;
narrow wide; native foreign; natural artificial; near far; new old; new used; noisy quiet; north
south; east west; offense defense; old young; old new; optimist pessimist; optimistic
pessimistic; ordinary special; over under; passive aggressive; past future; peace war; permanent
temporary; plus minus; polite rude; poor rich; positive negative; possible impossible; powerful
weak; predator prey; profit loss; question answer; raise lower; raw cooked; ready unready;
receive give; rise fall; rough smooth; safe risky; same different; senior junior; shallow deep;
sharp blunt; short tall; show hide; shut open; sick healthy; simple complicated; single married;
sink swim; slow fast; slow quick; small huge; smart dumb; soft loud; sober drunk; solid liquid;
sour sweet; start finish; stay leave; steep gentle; straight curved; strength weakness; strong
weak; stronger weaker; success failure; sunny rainy; superior inferior; sweet salty; tall short;
teacher student; thick thin; thicker thinner; thin thick; tight loose; tiny huge; top bottom;
true false; ugly pretty; upstairs downstairs; vacant occupied; valid invalid; victory defeat;
visible invisible; warm cool; wealthy poor; weak strong; wide narrow; win lose; winner loser;
winter summer; wise foolish; worst best; wrong right; young old; youngest oldest; biggest
smallest; largest smallest; richest poorest; hardest easiest; highest lowest; longest shortest;
fastest slowest; oldest newest; tallest shortest; hottest coldest; brighter darker; softer
harder; harder easier; higher lower; larger smaller; faster slower; longer shorter; older
younger; better worse; heavier lighter; cheaper pricier; before after; ascending descending;
inhale exhale; input output; include exclude; increase decrease; inflate deflate; maximize
minimize; overestimate underestimate; overweight underweight; private public; pros cons; push
pull; strengths weaknesses; upload download; grow shrink; heat cool; mature immature; agree
disagree; domestic international; urban rural; liberal conservative; employee employer; buyer
seller; landlord tenant
"""

PAIRS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair.split())
    for line in _PAIRS.split(";")
    for pair in [line.strip()]
    if len(pair.split()) == 2
)
