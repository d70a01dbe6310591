"""langid.py's model as the detector runs it (shared/adapters/language_detection.py, pure Python over
quire_langid/model.xz) gives py3langid's own answers, and a model file that is not the pinned one is refused."""

import importlib.util
from pathlib import Path

import pytest

from quire_langid import model_path
from shared.adapters.language_detection import (
    LangidModel,
    LanguageModelInvalid,
    Py3LangidDetector,
    load_model,
)
from tests.builders.languages import MIXED

pytestmark = pytest.mark.unit

_PARAGRAPH = (
    "The tenant shall pay the rent on the first working day of each month. Late payment incurs interest at the "
    "statutory rate, and repeated late payment entitles the landlord to terminate the lease with three months' "
    "notice. Repairs to the structure remain the landlord's responsibility; "
)
TEXTS = [
    # Short queries in many scripts
    "Wie lange habe ich Zeit, die Rechnung zu bezahlen?",
    "¿Cuánto tiempo tengo para pagar la factura?",
    "Combien de temps ai-je pour payer la facture ?",
    "Quanto tempo ho per pagare la fattura?",
    "Hoe lang heb ik om de factuur te betalen?",
    "Ile mam czasu na zapłacenie faktury?",
    "Какой срок оплаты счета?",
    "Скільки часу я маю на оплату рахунку?",
    "数据保护条例是什么",
    "資料保護條例是甚麼",
    "請求書の支払期限はいつですか",
    "청구서 지불 기한은 언제입니까",
    "ما هي مدة الدفع",
    "מה תקופת התשלום",
    "भुगतान की अवधि क्या है",
    "চালানের মেয়াদ কত",
    "ระยะเวลาการชำระเงินคือเท่าไร",
    "Ποια είναι η προθεσμία πληρωμής;",
    "Ödeme süresi ne kadar?",
    "Mikä on maksuaika?",
    "Hur lång är betalningstiden?",
    "Hvad er betalingsfristen?",
    "Mennyi a fizetési határidő?",
    "Care este termenul de plată?",
    "Thời hạn thanh toán là bao lâu?",
    "Berapa lama jangka waktu pembayaran?",
    "Cik ilgs ir maksājuma termiņš?",
    "Колико је рок плаћања?",
    "Koliko je rok plaćanja?",
    "ვადა რამდენია",
    "Վճարման ժամկետը որքա՞ն է",
    "பணம் செலுத்தும் காலம் என்ன",
    # Capitals, identifiers, figures, near-empty
    "HELLO WORLD",
    "THE CONTRACT IS VALID UNTIL DECEMBER",
    "ERR-4021",
    "x",
    "Q3",
    "getUserById(42)",
    "SELECT * FROM documents WHERE tenant_id = $1",
    "https://example.com/path?query=1",
    "4021 / 7.5 % — see §12(3)",
    "naïve café résumé",
    "e\u0301te\u0301",  # decomposed accents: NFC composes them first
    "😀 👍 ok",
    # Mixed languages in one text
    "The contract (Der Vertrag) is valid. Il contratto è valido.",
    "Meeting notes: 会议在周一举行 and the budget is approved.",
    "Invoice Счёт-фактура № 17 от 3 марта",
    # Long paragraphs, past the detector's 4,000-character sample too
    (_PARAGRAPH * 6)[:1000],
    ("Der Mieter zahlt die Miete am ersten Werktag jedes Monats. Bei verspäteter Zahlung fallen Zinsen an. " * 12)[
        :1000
    ],
    ("La locataire paie le loyer le premier jour ouvrable de chaque mois, sinon des intérêts sont dus. " * 12)[:1000],
    ("借款人应于每月第一个工作日支付租金，逾期付款将按法定利率计息。" * 40)[:1000],
    ("Арендатор вносит арендную плату в первый рабочий день каждого месяца. " * 20)[:1000],
    _PARAGRAPH * 30,
    *MIXED.values(),
]


@pytest.fixture(scope="module")
def model() -> LangidModel:
    return load_model(model_path())


def test_the_pure_python_model_ranks_as_py3langid_does(model: LangidModel) -> None:
    if importlib.util.find_spec("py3langid") is None:
        pytest.skip("py3langid (the `dev` extra) is not installed: nothing to compare the converted model with")
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    reference = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    assert len(TEXTS) >= 60
    for text in TEXTS:
        expected, ranked = reference.rank(text), model.rank(text)
        assert ranked[0][0] == expected[0][0], text
        assert dict(ranked).keys() == dict(expected).keys()
        probabilities = dict(ranked)
        for label, probability in expected:
            assert probabilities[label] == pytest.approx(probability, abs=1e-4), (text, label)


def test_the_detector_names_the_language_of_the_model_s_best_label(model: LangidModel) -> None:
    text = (_PARAGRAPH * 6)[:1000]
    guess = Py3LangidDetector().detect(text)
    # Nigerian Pidgin (pcm), written like English, counts for English.
    english = sum(probability for label, probability in model.rank(text) if label in {"en", "pcm"})
    assert guess is not None and guess.language == "en" and guess.confidence == pytest.approx(english)
    # The model's two Serbian columns (Cyrillic and Latin) are one label.
    assert [label for label, _ in model.rank("Колико је рок плаћања?")].count("sr") == 1


def test_a_tampered_model_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    tampered = tmp_path / "model.xz"
    content = bytearray(model_path().read_bytes())
    content[len(content) // 2] ^= 0x01
    tampered.write_bytes(bytes(content))
    with pytest.raises(LanguageModelInvalid, match=r"is not the language model this detector was built for.*reinstall"):
        Py3LangidDetector(model_path=tampered).detect("Der Vertrag ist gültig.")


def test_a_missing_model_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(LanguageModelInvalid, match="cannot be read"):
        load_model(tmp_path / "model.xz")
