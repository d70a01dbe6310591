"""Text in several languages for the tests of detection and of the keyword lane: one lease clause, the same in
each (written for these tests)."""

MIXED = {
    "de": "Der Mieter verpflichtet sich, die Wohnung in einem ordnungsgemäßen Zustand zu halten und Schäden"
    " unverzüglich dem Vermieter zu melden.",
    "en": "The tenant agrees to keep the apartment in good condition and to report any damage to the landlord"
    " without delay.",
    "es": "El inquilino se compromete a mantener el apartamento en buen estado y a informar de cualquier daño"
    " al propietario sin demora.",
    "ru": "Арендатор обязуется содержать квартиру в надлежащем состоянии и незамедлительно сообщать"
    " арендодателю о любых повреждениях.",
    "zh": "承租人同意保持公寓处于良好状态，并及时向房东报告任何损坏情况。",
    "ar": "يوافق المستأجر على الحفاظ على الشقة في حالة جيدة وإبلاغ المالك بأي ضرر دون تأخير.",
    "ja": "借主はアパートを良好な状態に保ち、損傷があれば遅滞なく家主に報告することに同意します。",
    "ko": "임차인은 아파트를 양호한 상태로 유지하고 손상이 있으면 지체 없이 집주인에게 알리는 데 동의합니다.",
    "fr": "Le locataire s'engage à maintenir l'appartement en bon état et à signaler sans délai tout dommage"
    " au propriétaire.",
}
