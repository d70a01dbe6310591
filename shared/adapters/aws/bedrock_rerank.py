"""The Reranker on AWS: a Bedrock rerank model through the agent runtime's `Rerank` operation.

What Bedrock documents for it (user guide, "Improve the relevance of query responses with a reranker model",
rerank-supported, rerank-prereq; API reference, agent-runtime Rerank) and botocore's service model says:

- two models, in different regions: Amazon Rerank 1.0 (`amazon.rerank-v1:0`: ap-northeast-1, ca-central-1,
  eu-central-1, us-west-2; not us-east-1) and Cohere Rerank 3.5 (`cohere.rerank-v3-5:0`: the same and us-east-1);
  `Rerank` takes either by its foundation-model ARN with one request shape (InvokeModel's rerank body is Cohere's
  own, so this one operation serves both);
- the request: one text query (at most 32,000 characters), 1..1,000 inline text sources (each at most 32,000),
  `numberOfResults` 1..1,000; the answer: `results`, each a source's `index` and its `relevanceScore`, best first,
  and no usage figures: Bedrock prices rerank per query, a query being up to 100 documents;
- the caller needs `bedrock:Rerank` (no resource type: any) and `bedrock:InvokeModel` on the model, which is how the
  CDK grants one model only (infra/constructs/api.py);
- errors: ValidationException, AccessDeniedException, ResourceNotFoundException, ThrottlingException,
  ServiceQuotaExceededException, ConflictException, DependencyFailedException, BadGatewayException,
  InternalServerException.

One call, no retry: a search's reranker has a budget of about a second (shared/services/reranking.py), and fusion
order is a good answer. Every failure is the skip it is (`failed`, or `timed_out` when the answer did not come within
the client's timeout), never an exception: the search says why its order is fusion's.
"""

from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError

from shared.adapters.aws.retrying import LazyClient, error_code, error_message
from shared.domain.reranking import RerankCandidate, Reranked, RerankSkip
from shared.domain.search import excerpt_of
from shared.domain.usage import rerank_usage
from shared.observability import logger
from shared.ports import Reranker

COHERE_RERANK_V35_MODEL_ID = "cohere.rerank-v3-5:0"
AMAZON_RERANK_V1_MODEL_ID = "amazon.rerank-v1:0"
RERANK_MODELS = (COHERE_RERANK_V35_MODEL_ID, AMAZON_RERANK_V1_MODEL_ID)
# One priced query reads up to 100 documents: more candidates than that would be two queries a search.
MAX_DOCUMENTS = 100
# A chunk is at most QUIRE_CHUNK_MAX_TOKENS (256 by default, about 1,000 characters); a longer one is read by its
# start, cut on a word: far under the API's 32,000 characters and within Cohere Rerank 3.5's 4,096-token context.
MAX_DOCUMENT_CHARACTERS = 4_000


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def model_arn(region: str, model_id: str) -> str:
    return f"arn:{partition_of(region)}:bedrock:{region}::foundation-model/{model_id}"


def agent_runtime_factory(region: str, *, timeout_seconds: float, max_pool_connections: int) -> Callable[[], Any]:
    """A zero-argument builder of a bedrock-agent-runtime client: botocore's retries off (one attempt a call) and
    both timeouts the search's budget, so a call the service stopped waiting for also ends soon after."""

    def build_client() -> Any:
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            max_pool_connections=max_pool_connections,
            connect_timeout=timeout_seconds,
            read_timeout=timeout_seconds,
        )
        return boto3.client("bedrock-agent-runtime", region_name=region, config=config)

    return build_client


class BedrockReranker(Reranker):
    """Reorders up to `depth` candidates (at most 100) with one `Rerank` call to `model_id` in `region`.

    `client` is a bedrock-agent-runtime client, or a zero-argument factory for one called on the first `rerank`.
    """

    metered = True
    in_process = False

    def __init__(self, client: Any, *, model_id: str, region: str, depth: int = 50) -> None:
        if model_id not in RERANK_MODELS:
            raise ValueError(f"{model_id!r} is not a rerank model Quire calls: one of {', '.join(RERANK_MODELS)}")
        if not 1 <= depth <= MAX_DOCUMENTS:
            raise ValueError(f"depth must be 1..{MAX_DOCUMENTS} (one priced query), not {depth}")
        self._client: LazyClient[Any] = LazyClient(client)
        self._model_id = model_id
        self._arn = model_arn(region, model_id)
        self._depth = depth

    @classmethod
    def from_region(
        cls, region: str, model_id: str, depth: int, timeout_seconds: float, *, max_pool_connections: int = 8
    ) -> "BedrockReranker":
        """Over the best `depth` candidates, a call given up after `timeout_seconds` (connecting, or reading)."""
        factory = agent_runtime_factory(
            region, timeout_seconds=timeout_seconds, max_pool_connections=max_pool_connections
        )
        return cls(factory, model_id=model_id, region=region, depth=depth)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def depth(self) -> int:
        return self._depth

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        given = list(candidates[: self._depth])
        count = len(given)
        if not given:
            return Reranked.skipped(self._model_id, RerankSkip.NO_OPINION)
        try:
            response = self._client.get().rerank(**self._request(query, given))
        except (ReadTimeoutError, ConnectTimeoutError) as error:
            logger.warning(
                "the rerank model did not answer in time", extra={"model": self._model_id, "error": str(error)}
            )
            return Reranked.skipped(self._model_id, RerankSkip.TIMED_OUT, candidates=count)
        except ClientError as error:
            logger.warning(
                "the rerank model refused",
                extra={"model": self._model_id, "code": error_code(error), "error": error_message(error)},
            )
            return Reranked.skipped(self._model_id, RerankSkip.FAILED, candidates=count)
        except BotoCoreError as error:  # no answer at all: the connection, or a request botocore would not send
            logger.warning(
                "the rerank model could not be reached", extra={"model": self._model_id, "error": str(error)}
            )
            return Reranked.skipped(self._model_id, RerankSkip.FAILED, candidates=count)
        order = _ranked(response, count)
        if order is None:
            logger.warning("the rerank model's answer could not be read", extra={"model": self._model_id})
            return Reranked.skipped(self._model_id, RerankSkip.FAILED, candidates=count)
        ids = tuple(given[index].chunk_id for index in order)
        return Reranked.applied(self._model_id, ids, candidates=count, usage=rerank_usage(self._model_id))

    def _request(self, query: str, given: Sequence[RerankCandidate]) -> dict[str, Any]:
        return {
            "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": _document_text(candidate)}},
                }
                for candidate in given
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(given),
                    "modelConfiguration": {"modelArn": self._arn},
                },
            },
        }


def _document_text(candidate: RerankCandidate) -> str:
    # The API refuses an empty text; a chunk has words, but an empty one must not fail the whole call.
    return excerpt_of(candidate.text, MAX_DOCUMENT_CHARACTERS) or " "


def _ranked(response: Any, count: int) -> list[int] | None:
    """The sources' indexes best first (by relevanceScore, ties by index), or None for an answer that is not a ranking
    of what was sent: an index out of range or twice, or a result without its score."""
    results = response.get("results") if isinstance(response, dict) else None
    if not isinstance(results, list):
        return None
    scored: list[tuple[float, int]] = []
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevanceScore") if isinstance(result, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            return None
        if not isinstance(score, int | float) or isinstance(score, bool):
            return None
        scored.append((float(score), index))
    if len({index for _, index in scored}) != len(scored):
        return None
    return [index for _, index in sorted(scored, key=lambda pair: (-pair[0], pair[1]))]
