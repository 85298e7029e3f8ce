"""English stop words: the Snowball project's English list (Martin Porter's ``stop.txt``, the
one the Snowball stemmers ship with; PostgreSQL's ``english`` dictionary and NLTK use it
without the contractions and "would", "could", "ought").

Taken as is, not tuned to any data: the keyword arm leaves these out of a query that has
other words, so "what to do if the main DB goes down" does not rank passages by "what" and
"do"; a query made only of stop words still searches with all of them. It replaced Lucene's
33-word list, which kept question words ("what", "how", "do", "my"): a question's first 32
terms then held fewer of its content words, and in a small base a stray "do" (Portuguese
"of") matched. Measured on one index (bench/README.md): keyword nDCG@10 Cranfield .366 → .376,
CISI .359 → .385.
"""

_SNOWBALL_ENGLISH = """
    i me my myself we our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom this that these those
    am is are was were be been being have has had having do does did doing
    would should could ought
    i'm you're he's she's it's we're they're i've you've we've they've
    i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll
    isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't
    won't wouldn't shan't shouldn't can't cannot couldn't mustn't
    let's that's who's what's here's there's when's where's why's how's
    a an the and but if or because as until while
    of at by for with about against between into through during before after
    above below to from up down in out on off over under
    again further then once here there when where why how
    all any both each few more most other some such no nor not only own same so than too very
    """
ENGLISH_STOP_WORDS = frozenset(_SNOWBALL_ENGLISH.split())

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def stop_word_key(term: str) -> str:
    """How a term is compared with the list: case-folded, typographic apostrophes made
    straight, punctuation around it stripped ("don't" stays "don't", so "we'll" is a stop word
    and "well" is not). Pure."""
    folded = term.casefold().translate(_APOSTROPHES)
    start, end = 0, len(folded)
    while start < end and not folded[start].isalnum():
        start += 1
    while end > start and not folded[end - 1].isalnum():
        end -= 1
    return folded[start:end]


def without_stop_words(terms: list[str]) -> list[str]:
    """``terms`` minus stop words (compared by :func:`stop_word_key`), unless that would
    leave nothing."""
    kept = [t for t in terms if stop_word_key(t) not in ENGLISH_STOP_WORDS]
    return kept or terms
