"""The synthetic corpus: vectors are a mixture of Gaussian clusters, normalised: 2,000 topic centroids
grouped under 100 subject areas (topics of one area have cosine ~0.4, as related subjects do), each
tenant's chunks on topics of its own few areas. A query is an existing chunk's vector plus noise: mostly
a chunk of the tenant searched, a fifth of the time another tenant's (a question the tenant's documents
answer poorly: the hard case for a filtered HNSW scan). Similarities then look like a sentence
embedder's: ~0.8 to the chunk a query was drawn from, ~0.45 for the 10th neighbour, ~0 for unrelated
text. Texts are words drawn Zipf-like from a 20,000-word vocabulary whose head is the English stopwords
(as in real text), a fifth of each chunk's words from its topic's own words, in sentences of 12-28 words
each ended by a full stop (the extractive answers rank sentences: bench/answers.py). The stops change no
search figure: the keyword lane's analysers drop punctuation (the same lexemes at the same positions), the
vector lane reads the synthetic vectors, and the lengths follow a fixed pattern of the chunk's index, so no
random draw, and no vector or query, changes.

Mixed languages, as a multilingual product's collections are (issue 36): each chunk's language is a fixed
pattern of its index (LANGUAGE_PATTERN: 40% English, 12% each German, Spanish, Russian, Chinese and Arabic),
so every tenant's collections hold all six and a query is read by six analysers. A chunk's words are the same
Zipf ranks it would have had in English, read in its language's vocabulary: that language's function words at
the head (what its Snowball stopwords drop; Arabic's and Chinese's analysers drop none), then words invented
from its script (German with ä ö ü ß, Spanish with ñ á é, Cyrillic, Arabic letters, Han characters), drawn
from a generator of their own, so the English corpus's draws, its vectors and its queries' chunks stay as
they were. Chinese is written as Chinese is, without spaces, each sentence ended by 。 (the keyword lane reads
it as character pairs). A query's words are drawn from the chunk it was drawn near, so they are in its
language.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shared.domain.capabilities import CapabilityStatus
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.stopwords import ENGLISH_STOPWORDS
from shared.domain.usage import Usage

TENANTS = 100
TENANT_SIZE_EXPONENT = 1.0  # tenant of rank r holds a share proportional to 1 / r
DIMENSION = 384
CENTROIDS = 2_000
AREAS = 100
CHUNKS_PER_TOPIC = 25  # a tenant's chunks sit on about size / 25 of the centroids
# Noise norms relative to the unit vector they perturb (isotropic Gaussian, then normalised).
AREA_NOISE = 1.2  # topic centroids around their area: cosine ~0.4 between topics of one area
CHUNK_NOISE = 0.9  # chunks around their topic: cosine ~0.55 between chunks of one topic
QUERY_NOISE = 0.7  # a query has cosine ~0.8 with the chunk it was drawn from
OFF_DOMAIN_SHARE = 0.2  # queries drawn near another tenant's chunk
VOCABULARY = 20_000
TOPIC_WORDS = 30
TOPIC_SHARE = 0.2
WORDS_PER_CHUNK = (60, 180)
WORDS_PER_QUERY = 8
WORDS_PER_SENTENCE = (12, 28)  # English prose averages about 20
RESTRICTED_QUERY_SHARE = 0.3  # queries narrowed to one of the tenant's collections
# Each language's vocabulary is a block of VOCABULARY word ids, in this order (English's first: ids 0..19,999).
LANGUAGES = ("en", "de", "es", "ru", "zh", "ar")
# Chunk i is in LANGUAGE_PATTERN[i % 25]: 10 English, 3 of each other language, interleaved.
LANGUAGE_PATTERN = ("en", "de", "en", "es", "en", "ru", "en", "zh", "en", "ar") * 2 + ("de", "es", "ru", "zh", "ar")
ENGLISH_ONLY = ("en",)
LANGUAGE_VOCABULARY_SEED = 36  # the other languages' words: a generator of their own, not the corpus's
FAKE_MODEL = "fake-bench-embedder"
# Tenant-size buckets, as shares of the whole table (scale-free, so a small development run keeps them).
SMALL_BELOW, LARGE_FROM = 0.01, 0.05
BUCKETS = ("small", "medium", "large")


@dataclass(frozen=True)
class Corpus:
    sizes: list[int]  # chunks per tenant, by rank
    collections: list[list[str]]  # per tenant
    tenant_of: np.ndarray  # per chunk
    collection_of: np.ndarray  # per chunk: index into its tenant's collections
    vectors: np.ndarray  # (chunks, DIMENSION) float32, unit length
    words: np.ndarray  # every chunk's word ids, concatenated
    offsets: np.ndarray  # chunk i's words are words[offsets[i]:offsets[i + 1]]
    vocabulary: list[str]  # every language's, in LANGUAGES' order, VOCABULARY words each
    topics_per_tenant: list[int]
    language_of: np.ndarray  # per chunk: index into LANGUAGES
    pattern: tuple[str, ...]  # the languages chunks were given, by index

    def language(self, chunk: int) -> str:
        return LANGUAGES[int(self.language_of[chunk])]

    def phrase(self, chunk: int, words: Sequence[int] | np.ndarray) -> str:
        """Words of the chunk's language as its script writes them: Chinese without spaces."""
        return ("" if self.language(chunk) == "zh" else " ").join(self.vocabulary[w] for w in words)

    def text(self, chunk: int) -> str:
        """The chunk's words in sentences: a full stop after each run of 12-28 words (a pattern of the index)."""
        words = self.words[self.offsets[chunk] : self.offsets[chunk + 1]]
        chinese = self.language(chunk) == "zh"
        shortest, longest = WORDS_PER_SENTENCE
        sentences, start, number = [], 0, 0
        while start < len(words):
            length = shortest + (7 * chunk + 11 * number) % (longest - shortest + 1)
            sentences.append(self.phrase(chunk, words[start : start + length]) + ("。" if chinese else "."))
            start, number = start + length, number + 1
        return ("" if chinese else " ").join(sentences)

    def is_function_word(self, word: int) -> bool:
        """One of its language's function words (the head of its Zipf ranks)."""
        return word % VOCABULARY < len(FUNCTION_WORDS[LANGUAGES[word // VOCABULARY]])

    def language_shares(self) -> dict[str, float]:
        counts = np.bincount(self.language_of, minlength=len(LANGUAGES))
        return {code: round(int(counts[i]) / len(self.language_of), 3) for i, code in enumerate(LANGUAGES) if counts[i]}

    def tenant(self, rank: int) -> str:
        return f"t{rank:03d}"

    def bucket(self, rank: int) -> str:
        share = self.sizes[rank] / sum(self.sizes)
        return "small" if share < SMALL_BELOW else "large" if share >= LARGE_FROM else "medium"


def tenant_sizes(total: int, tenants: int) -> list[int]:
    weights = 1 / np.arange(1, tenants + 1) ** TENANT_SIZE_EXPONENT
    sizes = np.floor(weights / weights.sum() * total).astype(int)
    sizes[0] += total - int(sizes.sum())
    return [int(size) for size in sizes]


# Each language's commonest function words, the most frequent first (Chinese's and Arabic's are not stopwords to
# their analysers, so they are terms there, as in real text).
_FUNCTION_WORDS = {
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er"
    " hat daß sie nach wird bei einer um am sind noch wie einem über einen so zum war haben nur oder aber vor zur"
    " bis mehr durch man sein wurde sei",
    "es": "de la que el en y a los del se las por un para con no una su al lo como más pero sus le ya o este sí"
    " porque esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno les"
    " ni contra otros ese eso",
    "ru": "и в не на я что тот быть с а весь это как она по но они к у ты из мы за вы так же от сказать этот"  # noqa: RUF001
    " который мочь человек о один еще бы такой только себя свое какой когда уже для вот кто да говорить год"  # noqa: RUF001
    " знать",
    "zh": "的 是 在 了 不 和 有 我 这 人 他 也 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 中 上 为 对 到 以 说"
    " 要 会 可以",
    "ar": "في من على إلى عن أن إن كان هذا هذه التي الذي ما لا لم لن قد ثم أو و مع بين كل بعد قبل حتى عند هو هي هم"
    " نحن كما ذلك تلك هناك إذا لكن بل",
}
FUNCTION_WORDS: dict[str, tuple[str, ...]] = {
    # English's are shared/domain/stopwords.py's, of letters only; `vocabulary` shuffles them.
    "en": tuple(sorted(word for word in ENGLISH_STOPWORDS if word.isalpha())),
    **{code: tuple(words.split()) for code, words in _FUNCTION_WORDS.items()},
}


def _invented_words(language: str, count: int, rng: np.random.Generator, seen: set[str]) -> list[str]:
    """`count` distinct words that look like `language`'s: syllables of its letters (Chinese: 1-3 Han characters)."""
    if language == "zh":
        # The commonest block of CJK Unified Ideographs; 2,500 characters, as many as everyday text uses.
        characters = [chr(0x4E00 + int(offset)) for offset in rng.choice(0x9FA5 - 0x4E00, size=2_500, replace=False)]
        lengths, shares = [1, 2, 3], [0.1, 0.7, 0.2]  # most Chinese words are two characters
    else:
        onsets, nuclei, codas = _LETTERS[language]
        syllables = [onset + nucleus for onset in onsets for nucleus in nuclei]
    words: list[str] = []
    while len(words) < count:
        if language == "zh":
            word = "".join(
                characters[i] for i in rng.integers(0, len(characters), size=int(rng.choice(lengths, p=shares)))
            )
        else:
            parts = rng.integers(0, len(syllables), size=int(rng.integers(2, 4)))
            word = "".join(syllables[i] for i in parts) + codas[int(rng.integers(0, len(codas)))]
            if language == "de" and len(words) % 3 == 0:
                word = word.capitalize()  # German capitalises its nouns: the analyser folds them
            if language == "ar" and len(words) % 3 == 1:
                word = "ال" + word  # the article, which Arabic's stemmer strips
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


# (onsets, vowels, endings) of each alphabetic language's invented words.
_LETTERS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "de": (
        [*"bdfghklmnprstwz", "sch", "st", "pf"],
        [*"aeiou", *"aeiou", "ä", "ö", "ü", "ei", "au"],  # an umlaut in about one syllable in four
        ["", "", "n", "r", "s", "t", "ß", "ng", "ch"],
    ),
    "es": ([*"bcdfglmnprstvñ", "ll", "ch"], [*"aeiou" * 3, *"áéíó"], ["", "", "s", "n", "r", "l"]),
    "ru": ([*"бвгджзклмнпрстфхцчшщ"], [*"аеиоуыэюяё"], ["", "", "й", "ь", "ть", "ов", "ия"]),
    "ar": ([*"بتثجحخدذرزسشصضطظعغفقكلمنهوي"], ["", "ا", "و", "ي"], ["", "", "ة", "ات", "ون"]),  # noqa: RUF001
}


def language_vocabulary(language: str, rng: np.random.Generator) -> list[str]:
    """VOCABULARY words of `language`: its function words first (the head of the Zipf ranks), then invented ones."""
    head = list(FUNCTION_WORDS[language])
    return head + _invented_words(language, VOCABULARY - len(head), rng, set(head))


def vocabulary(rng: np.random.Generator) -> list[str]:
    """Stopwords first (the head of the Zipf ranks, as in English), then invented words."""
    stopwords = list(FUNCTION_WORDS["en"])
    rng.shuffle(stopwords)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words: list[str] = list(stopwords)
    seen = set(words)
    while len(words) < VOCABULARY:
        word = "".join(syllables[i] for i in rng.integers(0, len(syllables), size=int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def gaussian(rng: np.random.Generator, rows: int, norm: float) -> np.ndarray:
    """Isotropic noise whose rows have about `norm` length."""
    noise: np.ndarray = (rng.standard_normal((rows, DIMENSION)) * (norm / np.sqrt(DIMENSION))).astype(np.float32)
    return noise


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    normalised: np.ndarray = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return normalised


def make_corpus(total: int, rng: np.random.Generator, *, languages: Sequence[str] = LANGUAGE_PATTERN) -> Corpus:
    """`total` chunks; chunk i in `languages[i % len(languages)]` (ENGLISH_ONLY for the corpus before issue 36)."""
    unknown = set(languages) - set(LANGUAGES)
    if unknown:
        raise ValueError(f"the corpus has no vocabulary for {sorted(unknown)}: choose from {LANGUAGES}")
    sizes = tenant_sizes(total, TENANTS)
    areas = unit_rows(rng.standard_normal((AREAS, DIMENSION)))
    area_of_topic = np.arange(CENTROIDS) % AREAS
    centroids = unit_rows(areas[area_of_topic] + gaussian(rng, CENTROIDS, AREA_NOISE))
    topic_words = rng.integers(1_000, VOCABULARY, size=(CENTROIDS, TOPIC_WORDS))
    tenant_of = np.repeat(np.arange(TENANTS), sizes)
    topic_of = np.empty(total, dtype=np.int64)
    collection_of = np.empty(total, dtype=np.int64)
    collections: list[list[str]] = []
    topics_per_tenant: list[int] = []
    start = 0
    for size in sizes:
        wanted = min(CENTROIDS, max(4, size // CHUNKS_PER_TOPIC))
        # Its areas offer about twice the topics it uses.
        own_areas = rng.choice(AREAS, size=min(AREAS, -(-2 * wanted * AREAS // CENTROIDS)), replace=False)
        offered = np.flatnonzero(np.isin(area_of_topic, own_areas))
        topics = rng.choice(offered, size=min(len(offered), wanted), replace=False)
        topics_per_tenant.append(len(topics))
        topic_of[start : start + size] = rng.choice(topics, size=size)
        count = int(rng.integers(1, 4))
        collections.append([f"c{index + 1}" for index in range(count)])
        # Uneven collections: the first holds most of a tenant's chunks.
        shares = np.array([0.6, 0.3, 0.1][:count])
        collection_of[start : start + size] = rng.choice(count, size=size, p=shares / shares.sum())
        start += size
    vectors = unit_rows(centroids[topic_of] + gaussian(rng, total, CHUNK_NOISE))

    lengths = rng.integers(WORDS_PER_CHUNK[0], WORDS_PER_CHUNK[1] + 1, size=total)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ranks = 1 / np.arange(1, VOCABULARY + 1)
    cdf = np.cumsum(ranks / ranks.sum())
    words = np.minimum(np.searchsorted(cdf, rng.random(int(offsets[-1]))), VOCABULARY - 1)
    from_topic = rng.random(words.size) < TOPIC_SHARE
    chunk_of_word = np.repeat(np.arange(total), lengths)
    picks = rng.integers(0, TOPIC_WORDS, size=int(from_topic.sum()))
    words[from_topic] = topic_words[topic_of[chunk_of_word[from_topic]], picks]
    english = vocabulary(rng)  # the last draw of `rng` here, as before the other languages
    others = np.random.default_rng(LANGUAGE_VOCABULARY_SEED)
    words_of = {"en": english} | {code: language_vocabulary(code, others) for code in LANGUAGES[1:]}
    # The same Zipf rank, in the chunk's language's block of ids.
    pattern = np.array([LANGUAGES.index(code) for code in languages])
    language_of = pattern[np.arange(total) % len(pattern)]
    words = words + language_of[chunk_of_word] * VOCABULARY
    return Corpus(
        sizes=sizes,
        collections=collections,
        tenant_of=tenant_of,
        collection_of=collection_of,
        vectors=vectors,
        words=words,
        offsets=offsets,
        vocabulary=[word for code in LANGUAGES for word in words_of[code]],
        topics_per_tenant=topics_per_tenant,
        language_of=language_of,
        pattern=tuple(languages),
    )


@dataclass(frozen=True)
class BenchQuery:
    tenant: str
    bucket: str
    readable: frozenset[str]  # the caller's collections (all of its tenant's)
    wanted: frozenset[str] | None  # the query's collection filter, when narrowed
    text: str
    vector: tuple[float, ...]
    off_domain: bool  # drawn near another tenant's chunk
    language: str | None = None  # its words' (the chunk's it was drawn near)

    @property
    def searchable(self) -> frozenset[str]:
        return self.readable & self.wanted if self.wanted is not None else self.readable


def make_queries(corpus: Corpus, count: int, rng: np.random.Generator) -> list[BenchQuery]:
    """As many queries per size bucket as the buckets allow, each bucket's spread over all its tenants."""
    by_bucket: dict[str, list[int]] = {name: [] for name in BUCKETS}
    for rank in range(TENANTS):
        by_bucket[corpus.bucket(rank)].append(rank)
    present = [name for name in BUCKETS if by_bucket[name]]
    starts = np.concatenate([[0], np.cumsum(corpus.sizes)])
    queries: list[BenchQuery] = []
    texts: set[str] = set()
    for position, name in enumerate(present):
        share = count // len(present) + (1 if position < count % len(present) else 0)
        ranks = list(by_bucket[name])
        rng.shuffle(ranks)
        for index in range(share):
            rank = ranks[index % len(ranks)]
            off_domain = bool(rng.random() < OFF_DOMAIN_SHARE)
            while True:
                chunk = int(rng.integers(starts[rank], starts[rank + 1]))
                if off_domain:
                    chunk = int(rng.integers(0, len(corpus.tenant_of)))
                    if corpus.tenant_of[chunk] == rank:
                        continue
                own = corpus.words[corpus.offsets[chunk] : corpus.offsets[chunk + 1]]
                picked = rng.choice(own, size=WORDS_PER_QUERY, replace=False)
                text = corpus.phrase(chunk, picked)
                content = [w for w in picked if not corpus.is_function_word(int(w))]
                if content and text not in texts:
                    break
            texts.add(text)
            tenant_collections = corpus.collections[rank]
            narrowed = len(tenant_collections) > 1 and rng.random() < RESTRICTED_QUERY_SHARE
            collection = int(rng.integers(0, len(tenant_collections))) if off_domain else corpus.collection_of[chunk]
            vector = unit_rows(corpus.vectors[chunk : chunk + 1] + gaussian(rng, 1, QUERY_NOISE))[0]
            queries.append(
                BenchQuery(
                    tenant=corpus.tenant(rank),
                    bucket=name,
                    readable=frozenset(tenant_collections),
                    wanted=frozenset({tenant_collections[collection]}) if narrowed else None,
                    text=text,
                    vector=tuple(float(value) for value in vector),
                    off_domain=off_domain,
                    language=corpus.language(chunk),
                )
            )
    return queries


class FakeQueryEmbedder:
    """A FAKE EmbeddingProvider: no model runs; each query text maps to the synthetic vector the bench drew
    for it (unit length, FAKE_MODEL, as the loaded chunks were written), so latency is the index's."""

    def __init__(self, vectors: dict[str, tuple[float, ...]]) -> None:
        self._vectors = vectors

    @property
    def model_id(self) -> str:
        return FAKE_MODEL

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def max_tokens(self) -> int:
        return 256

    @property
    def languages(self) -> None:
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        return MINILM_SCALE

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready(f"fake:{FAKE_MODEL}")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self._vectors[text]) for text in texts]

    def usage(self, tokens: int) -> Usage:
        return Usage(provider="fake", operation="fake:embed", model=FAKE_MODEL, priced=False, input_tokens=tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)
