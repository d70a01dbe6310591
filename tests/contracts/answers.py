"""What every AnswerStore keeps (shared/ports/): an answer read back exactly as it was saved, or not saved at
all; the cache's newest answer under a key from a moment on; an answer and its feedback the asker's alone (a
feedback citation the answer does not have refused, naming the ones it has); an index version that depends on
the set of collections only; and never another tenant's rows. How the index version follows changes to what is
searchable needs the knowledge store: tests/integration/test_answer_store.py on PostgreSQL.

Each test works in tenants of its own, so the suite can run against one shared database."""

import uuid
from datetime import timedelta

import pytest

from shared.domain.answers import (
    AnswerClaim,
    AnswerFeedback,
    ClaimKind,
    FeedbackVerdict,
)
from shared.domain.errors import InvalidRequest
from shared.ports import AnswerStore
from tests.builders.answers import CREATED, a_refusal, an_answer, stored
from tests.contracts.file_metadata import new_tenant


class AnswerStoreContract:
    @pytest.fixture
    def store(self) -> AnswerStore:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_an_answer_reads_back_exactly_as_it_was_saved(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer, refusal = stored(tenant, an_answer()), stored(tenant, a_refusal(), key="key-2")
        store.save(answer)
        store.save(refusal)
        read = store.get(tenant, "ann", answer.answer.answer_id)
        assert read == answer
        assert store.get(tenant, "ann", refusal.answer.answer_id) == refusal
        assert read is not None and [claim.supported for claim in read.answer.claims] == [True, True, False]

    def test_what_cannot_be_read_back_equal_is_refused_before_it_is_written(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer = an_answer()
        for bad, message in (
            (answer.model_copy(update={"answer_id": answer.answer_id.upper()}), "canonical"),
            (answer.model_copy(update={"answer_id": "not-a-uuid"}), "canonical"),
            (answer.model_copy(update={"cached": True}), "already stored"),
            (answer.model_copy(update={"created_at": CREATED.replace(tzinfo=None)}), "time zone"),
        ):
            with pytest.raises(ValueError, match=message):
                store.save(stored(tenant, bad))
        assert store.get(tenant, "ann", answer.answer_id) is None

    def test_an_answer_whose_claims_cite_a_number_it_lacks_is_not_saved_at_all(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer = an_answer()
        broken = answer.model_copy(update={"claims": (AnswerClaim(text="x", citations=(9,), kind=ClaimKind.DIRECT),)})
        with pytest.raises(Exception, match=r"(?i)citations|foreign key|numbers"):  # the adapter's is psycopg's
            store.save(stored(tenant, broken))
        assert store.get(tenant, "ann", answer.answer_id) is None
        assert store.cached(tenant, "key-1", not_before=CREATED - timedelta(days=1)) is None

    def test_the_cache_returns_the_newest_answer_under_the_key_from_the_given_time(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        older = stored(tenant, an_answer(created_at=CREATED))
        newer = stored(tenant, an_answer(created_at=CREATED + timedelta(minutes=5)))
        other_key = stored(tenant, an_answer(created_at=CREATED + timedelta(minutes=9)), key="key-other")
        for answer in (newer, older, other_key):  # saved out of order: the newest by created_at wins
            store.save(answer)
        assert store.cached(tenant, "key-1", not_before=CREATED - timedelta(days=1)) == newer
        assert store.cached(tenant, "key-1", not_before=CREATED + timedelta(minutes=5)) == newer
        assert store.cached(tenant, "key-1", not_before=CREATED + timedelta(minutes=5, microseconds=1)) is None
        assert store.cached(tenant, "key-missing", not_before=CREATED - timedelta(days=1)) is None

    def test_an_answer_is_found_only_by_the_subject_who_asked_it(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer = stored(tenant, an_answer(), subject="ann")
        store.save(answer)
        answer_id = answer.answer.answer_id
        assert store.get(tenant, "ann", answer_id) == answer
        assert store.get(tenant, "bob", answer_id) is None
        assert store.get(tenant, "ann", str(uuid.uuid4())) is None
        assert store.get(tenant, "ann", "'; DROP TABLE answers; --") is None

    def test_feedback_is_recorded_only_on_the_callers_own_answer(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer = stored(tenant, an_answer(), subject="ann")
        store.save(answer)
        answer_id = answer.answer.answer_id
        wrong = AnswerFeedback(verdict=FeedbackVerdict.WRONG_CITATION, note="Not what it says.", citation=2)
        feedback_id = store.add_feedback(tenant, "ann", answer_id, wrong)
        assert feedback_id is not None and str(uuid.UUID(feedback_id)) == feedback_id
        helpful = store.add_feedback(tenant, "ann", answer_id, AnswerFeedback(verdict=FeedbackVerdict.HELPFUL))
        assert helpful is not None and helpful != feedback_id
        for subject, target in (("bob", answer_id), ("ann", str(uuid.uuid4())), ("ann", "nope")):
            assert store.add_feedback(tenant, subject, target, wrong) is None

    def test_feedback_naming_a_citation_the_answer_does_not_have_is_refused(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        answer, refusal = stored(tenant, an_answer()), stored(tenant, a_refusal(), key="key-2")
        store.save(answer)
        store.save(refusal)
        wrong_three = AnswerFeedback(verdict=FeedbackVerdict.WRONG_CITATION, citation=3)
        with pytest.raises(InvalidRequest, match=r"citation 3 is not one of this answer's citations \(1, 2\)"):
            store.add_feedback(tenant, "ann", answer.answer.answer_id, wrong_three)
        with pytest.raises(InvalidRequest, match="it has none"):
            store.add_feedback(
                tenant,
                "ann",
                refusal.answer.answer_id,
                AnswerFeedback(verdict=FeedbackVerdict.WRONG_ANSWER, citation=1),
            )
        # Someone else's answer is not found before its citations are looked at: nothing about it is revealed.
        assert store.add_feedback(tenant, "bob", answer.answer.answer_id, wrong_three) is None

    def test_the_index_version_depends_on_the_set_of_collections_only(self, store: AnswerStore) -> None:
        tenant = new_tenant()
        both = store.index_version(tenant, frozenset({"docs", "hr"}))
        assert len(both) == 16 and int(both, 16) >= 0
        assert store.index_version(tenant, frozenset({"hr", "docs"})) == both
        assert store.index_version(tenant, frozenset({"docs"})) != both
        assert store.index_version(tenant, frozenset({"docs"})) == store.index_version(tenant, frozenset({"docs"}))

    def test_one_tenant_never_reads_anothers_answers_or_attaches_to_them(self, store: AnswerStore) -> None:
        mine, theirs = new_tenant(), new_tenant()
        their_answer = stored(theirs, an_answer(created_at=CREATED + timedelta(hours=1)), key="shared-key")
        store.save(their_answer)
        answer_id = their_answer.answer.answer_id
        assert store.cached(mine, "shared-key", not_before=CREATED - timedelta(days=1)) is None
        assert store.get(mine, "ann", answer_id) is None
        assert store.add_feedback(mine, "ann", answer_id, AnswerFeedback(verdict=FeedbackVerdict.HELPFUL)) is None
        my_answer = stored(mine, an_answer(), key="shared-key")
        store.save(my_answer)
        # Theirs is newer, and still never mine.
        assert store.cached(mine, "shared-key", not_before=CREATED - timedelta(days=1)) == my_answer
        assert store.cached(theirs, "shared-key", not_before=CREATED - timedelta(days=1)) == their_answer
