"""Words stripped from keyword queries (never from the index), and each language's for ranking sentences by words.

The `simple` text configuration keeps every word, so "was the site down" would rank by how often a
chunk says "the". Stripping stopwords from the query removes the terms that carry no signal while
identifiers (ERR-4021, Q3-2026) stay whole: a stemmer or stopword-dropping index would break those.
"""

from functools import cache

from shared.domain.stopword_lists import STOPWORD_LISTS

_WORDS = """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
    herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
    most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
    while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also may might must shall
"""
ENGLISH_STOPWORDS = frozenset(_WORDS.split())
# PostgreSQL's parser splits "don't" into "don" and "t": the pieces are what a query's lexemes look like.
ENGLISH_STOPWORDS |= frozenset(piece for word in ENGLISH_STOPWORDS if "'" in word for piece in word.split("'") if piece)


@cache
def stopwords_of(language: str | None) -> frozenset[str]:
    """English's (every question's, as the keyword lane strips them) and `language`'s own, folded as words_of folds
    them: the Snowball list its analyser drops (shared/domain/stopword_lists.py); none more where there is no list
    (Chinese, Arabic)."""
    from shared.domain.languages import analyser_of, keyword_text

    listed = STOPWORD_LISTS.get(analyser_of(language), "")
    return ENGLISH_STOPWORDS | frozenset(keyword_text(listed).split())
