"""Languages: the codes Quire stores, which analyser reads each language's words for the keyword lane, and the
text that analyser is given.

A chunk's language is an ISO 639-1 code ("de"), or None when it could not be told. Its analyser is a PostgreSQL
text search configuration: Snowball's stemmer and stopwords for the languages PostgreSQL ships one for (the same
list on the embedded server and on Aurora), `cjk` for Chinese, Japanese and Korean (character bigrams, read by
`simple`), and `simple` (lower case, no stemming) for every other language and for text whose language is not
known. BM25's statistics are kept per analyser, so a German chunk's term frequencies are weighed against German
chunks (docs/search.md#languages).

`keyword_text` is what every analyser reads, the query as much as the chunks: PostgreSQL's parser and lower-casing
depend on the server's locale (the embedded server runs in C, where no non-ASCII letter is lower-cased and every
non-ASCII character, punctuation included, counts as a letter; Aurora's is a UTF-8 locale), so the text is folded
here first and both servers see the same letters and separators.
"""

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# ISO 639-1, the code every detector and every HTTP client speaks. Overrides are checked against it.
_ISO_639_1 = (
    "aa:Afar ab:Abkhazian ae:Avestan af:Afrikaans ak:Akan am:Amharic an:Aragonese ar:Arabic as:Assamese "
    "av:Avaric ay:Aymara az:Azerbaijani ba:Bashkir be:Belarusian bg:Bulgarian bi:Bislama bm:Bambara "
    "bn:Bengali bo:Tibetan br:Breton bs:Bosnian ca:Catalan ce:Chechen ch:Chamorro co:Corsican cr:Cree "
    "cs:Czech cu:Church_Slavic cv:Chuvash cy:Welsh da:Danish de:German dv:Divehi dz:Dzongkha ee:Ewe "
    "el:Greek en:English eo:Esperanto es:Spanish et:Estonian eu:Basque fa:Persian ff:Fulah fi:Finnish "
    "fj:Fijian fo:Faroese fr:French fy:Western_Frisian ga:Irish gd:Gaelic gl:Galician gn:Guarani "
    "gu:Gujarati gv:Manx ha:Hausa he:Hebrew hi:Hindi ho:Hiri_Motu hr:Croatian ht:Haitian hu:Hungarian "
    "hy:Armenian hz:Herero ia:Interlingua id:Indonesian ie:Interlingue ig:Igbo ii:Sichuan_Yi ik:Inupiaq "
    "io:Ido is:Icelandic it:Italian iu:Inuktitut ja:Japanese jv:Javanese ka:Georgian kg:Kongo ki:Kikuyu "
    "kj:Kuanyama kk:Kazakh kl:Kalaallisut km:Khmer kn:Kannada ko:Korean kr:Kanuri ks:Kashmiri ku:Kurdish "
    "kv:Komi kw:Cornish ky:Kirghiz la:Latin lb:Luxembourgish lg:Ganda li:Limburgan ln:Lingala lo:Lao "
    "lt:Lithuanian lu:Luba-Katanga lv:Latvian mg:Malagasy mh:Marshallese mi:Maori mk:Macedonian "
    "ml:Malayalam mn:Mongolian mr:Marathi ms:Malay mt:Maltese my:Burmese na:Nauru nb:Norwegian_Bokmål "
    "nd:North_Ndebele ne:Nepali ng:Ndonga nl:Dutch nn:Norwegian_Nynorsk no:Norwegian nr:South_Ndebele "
    "nv:Navajo ny:Chichewa oc:Occitan oj:Ojibwa om:Oromo or:Oriya os:Ossetian pa:Punjabi pi:Pali pl:Polish "
    "ps:Pashto pt:Portuguese qu:Quechua rm:Romansh rn:Rundi ro:Romanian ru:Russian rw:Kinyarwanda "
    "sa:Sanskrit sc:Sardinian sd:Sindhi se:Northern_Sami sg:Sango si:Sinhala sk:Slovak sl:Slovenian "
    "sm:Samoan sn:Shona so:Somali sq:Albanian sr:Serbian ss:Swati st:Southern_Sotho su:Sundanese "
    "sv:Swedish sw:Swahili ta:Tamil te:Telugu tg:Tajik th:Thai ti:Tigrinya tk:Turkmen tl:Tagalog "
    "tn:Tswana to:Tonga tr:Turkish ts:Tsonga tt:Tatar tw:Twi ty:Tahitian ug:Uighur uk:Ukrainian ur:Urdu "
    "uz:Uzbek ve:Venda vi:Vietnamese vo:Volapük wa:Walloon wo:Wolof xh:Xhosa yi:Yiddish yo:Yoruba "
    "za:Zhuang zh:Chinese zu:Zulu"
)
# Underscores stand for spaces in the names above.
LANGUAGE_NAMES: dict[str, str] = {
    code: name.replace("_", " ") for code, name in (pair.split(":") for pair in _ISO_639_1.split())
}

# The Snowball configurations PostgreSQL ships, on the embedded server (18) and on Aurora (17) alike.
SNOWBALL_CONFIGURATIONS: dict[str, str] = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})
CJK = "cjk"
SIMPLE = "simple"
# Every analyser a chunk can have: what the keyword lane's statistics are kept by.
ANALYSERS = frozenset(SNOWBALL_CONFIGURATIONS.values()) | {CJK, SIMPLE}


def analyser_of(language: str | None) -> str:
    """The analyser that reads text in `language` (None: not known)."""
    if language is None:
        return SIMPLE
    if language in CJK_LANGUAGES:
        return CJK
    return SNOWBALL_CONFIGURATIONS.get(language, SIMPLE)


def text_search_configuration(analyser: str) -> str:
    """The PostgreSQL configuration an analyser runs: its own name, but `cjk`'s bigrams are read by `simple`."""
    if analyser not in ANALYSERS:
        raise ValueError(f"unknown analyser {analyser!r}")
    return SIMPLE if analyser == CJK else analyser


class UnknownLanguage(ValueError):
    """A language given by a caller is not an ISO 639-1 code."""


_LANGUAGE_TAG = re.compile(r"([A-Za-z]{2})(?:[-_][A-Za-z0-9]{1,8})*")


def language_code(value: str) -> str:
    """The ISO 639-1 code a caller's language tag names: "de", "DE" and "de-CH" are all "de"."""
    match = _LANGUAGE_TAG.fullmatch(value.strip())
    code = match.group(1).lower() if match else None
    if code is None or code not in LANGUAGE_NAMES:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise UnknownLanguage(
            f"{shown!r} is not a language Quire knows: give an ISO 639-1 code such as en, de, es, ru, zh or ar"
            " (a tag such as de-CH is read as its language, de)"
        )
    return code


# A file's metadata may say its language under this key (an ISO 639-1 code or tag, or the language's English name).
METADATA_KEY = "language"
_BY_NAME = {name.casefold(): code for code, name in LANGUAGE_NAMES.items()}


def declared_language(declared: str | None, metadata: Mapping[str, object] | None) -> str | None:
    """The language a version's chunks are in by its uploader's word, so none is detected: the one declared with
    the upload, else the file's metadata `language` when it names a language Quire has an analyser of its own for
    ("de", "de-CH", "German", "zh"); any other value there is the product's own and declares nothing."""
    if declared is not None:
        return declared
    value = (metadata or {}).get(METADATA_KEY)
    if not isinstance(value, str):
        return None
    try:
        named: str | None = language_code(value)
    except UnknownLanguage:
        named = _BY_NAME.get(value.strip().casefold())
    # Only a language with an analyser of its own: a product's "ts" (TypeScript) must not make a file Tsonga.
    return named if named is not None and analyser_of(named) != SIMPLE else None


# Han (with its extensions and compatibility ideographs), the iteration marks, Hiragana, Katakana and Hangul.
_CJK_CHARACTERS = (
    "\u3005\u3007\u3021-\u3029\u3038-\u303b\u3040-\u309f\u30a0-\u30ff\u3100-\u312f\u3131-\u318e\u31a0-\u31bf"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\u1100-\u11ff\U00020000-\U0003134f"
)
_CJK_RUN = re.compile(f"[{_CJK_CHARACTERS}]+")
# Arabic and Hebrew vowel marks and the Arabic tatweel: optional in writing, so a word matches with or without.
_OPTIONAL_MARKS = re.compile("[\u0591-\u05c7\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06ed]")
_NOT_WORD = re.compile(r"[^\w\s]")


def keyword_text(text: str) -> str:
    """`text` as every analyser reads it: compatibility forms folded (full-width letters, ligatures), lower case,
    optional vowel marks dropped, non-ASCII punctuation and symbols turned into spaces (ASCII's are left to
    PostgreSQL's parser, which keeps ERR-4021, v2.1 and e-mail addresses whole), and each run of Chinese, Japanese
    or Korean characters written as its overlapping pairs ("数据保护" as "数据 据保 保护")."""
    # İ lower-cases to i and a combining dot in Python, to i in PostgreSQL's UTF-8 locales: the i is what matches.
    folded = _OPTIONAL_MARKS.sub("", unicodedata.normalize("NFKC", text).replace("İ", "I").lower())
    return cjk_pairs(_NOT_WORD.sub(_separator, folded))


def cjk_apart(text: str) -> str:
    """`text` with a space either side of each run of Chinese, Japanese or Korean characters, and nothing else changed:
    so a pattern of letters and digits ("ERR-4021", "12") stops at such a run as at a space ("错误ERR-4021是")."""
    return _CJK_RUN.sub(lambda match: f" {match.group(0)} ", text)


def cjk_pairs(text: str) -> str:
    """`text` with each run of Chinese, Japanese or Korean characters written as its overlapping pairs, and nothing
    else changed: how words are counted where a script leaves no space between them."""
    return _CJK_RUN.sub(_bigrams, text)


def _separator(match: re.Match[str]) -> str:
    character = match.group(0)
    if character.isascii() or unicodedata.category(character).startswith("M"):
        return character  # ASCII is the parser's; a combining mark is part of its letter (Devanagari's vowels)
    return " "


def _bigrams(match: re.Match[str]) -> str:
    return " " + " ".join(_bigrams_of(match.group(0))) + " "


def cjk_terms(text: str) -> list[str]:
    """The bigrams (or single characters) of `text`'s CJK runs, as the keyword lane indexes them."""
    return [term for run in _CJK_RUN.findall(text) for term in _bigrams_of(run)]


def _bigrams_of(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[index : index + 2] for index in range(len(run) - 1)]


@dataclass(frozen=True)
class LanguageGuess:
    """A detector's answer: the likeliest language (ISO 639-1) and its probability."""

    language: str
    confidence: float


# A guess this sure, about this many letters, names a text's language; a shorter or vaguer text (a heading, a table
# of figures) takes its document's.
MIN_CONFIDENCE = 0.6
MIN_LETTERS = 20
# A question is short: its language counts only when the detector is this sure (on 255 short questions in 17
# languages, langid's model was wrong above 0.7 on none: docs/adr/0011).
QUERY_MIN_CONFIDENCE = 0.7
# What a document's own language is read from: this many of its chunks spread over it (an English abstract does not
# decide a German paper's), this much of each.
DOCUMENT_SAMPLE_CHUNKS = 8
DOCUMENT_SAMPLE_CHARACTERS_PER_CHUNK = 500


def chunk_languages(
    texts: Sequence[str], detect: Callable[[str], LanguageGuess | None], *, declared: str | None = None
) -> list[str | None]:
    """The language of each of a document's chunks (`texts`, in order): `declared` for all when the file says, else
    each chunk's own when it is clear, else the document's (None when that is not clear either). A mixed document
    keeps each part's language."""
    if declared is not None:
        return [declared] * len(texts)
    step = max(1, len(texts) // DOCUMENT_SAMPLE_CHUNKS)
    sample = [text[:DOCUMENT_SAMPLE_CHARACTERS_PER_CHUNK] for text in texts[::step][:DOCUMENT_SAMPLE_CHUNKS]]
    document = _clear(detect("\n".join(sample))) if sample else None
    return [_clear(detect(text), text) or document for text in texts]


# A version records at most this many of its languages.
MAX_VERSION_LANGUAGES = 32


def by_share(counts: Mapping[str, int]) -> list[str]:
    """Languages by how many chunks are in each, the most first (ties by code), at most MAX_VERSION_LANGUAGES."""
    return sorted(counts, key=lambda language: (-counts[language], language))[:MAX_VERSION_LANGUAGES]


def _clear(guess: LanguageGuess | None, text: str | None = None) -> str | None:
    if guess is None or guess.confidence < MIN_CONFIDENCE:
        return None
    if text is not None and sum(1 for character in text if character.isalpha()) < MIN_LETTERS:
        return None
    return guess.language
