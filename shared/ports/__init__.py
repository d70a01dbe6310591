"""Ports: every managed service Quire uses sits behind one of these Protocols, grouped by capability.

Each port has an AWS adapter and an embedded local adapter (docs/architecture.md, "Ports and their
adapters"); services take ports as arguments and never import an SDK. The docstrings are the contracts
adapters must keep. Every port is importable from here, as it was when this was one module.
"""

from shared.domain.recognition import OcrSource
from shared.ports.documents import ArtifactRenderer, DocumentParser, PageRasterizer, PdfOperations
from shared.ports.events import DeliveryQueue, EventBus, EventOutbox, WebhookSender, WebhookStore
from shared.ports.files import (
    MAX_SIGNED_READ_LIFETIME,
    FileCatalog,
    FileContentStore,
    FileMetadataStore,
    HealthProbe,
    MetadataWriter,
    ProcessingAttempts,
    ReconciliationQueries,
    SweepProgress,
    Workflow,
)
from shared.ports.models import (
    CapabilityPort,
    ChunkSituator,
    DocumentSummarizer,
    EmbeddingProvider,
    Generator,
    LanguageDetector,
    OcrProvider,
    TranscriptionProvider,
    VisionProvider,
)
from shared.ports.search import KeywordIndex, KnowledgeStore, Reranker, SituationCache, TitleIndex, VectorIndex
from shared.ports.security import AuthorizationPolicy, MalwareScanning, TokenVerifier, ToolCallAudit, UsageLedger
from shared.ports.uploads import MultipartStore, UploadSessionStore
from shared.ports.writing import AnswerStore, ArtifactStore, ExportStore, RenderQueue, ReplacementStore

__all__ = [
    "MAX_SIGNED_READ_LIFETIME",
    "AnswerStore",
    "ArtifactRenderer",
    "ArtifactStore",
    "AuthorizationPolicy",
    "CapabilityPort",
    "ChunkSituator",
    "DeliveryQueue",
    "DocumentParser",
    "DocumentSummarizer",
    "EmbeddingProvider",
    "EventBus",
    "EventOutbox",
    "ExportStore",
    "FileCatalog",
    "FileContentStore",
    "FileMetadataStore",
    "Generator",
    "HealthProbe",
    "KeywordIndex",
    "KnowledgeStore",
    "LanguageDetector",
    "MalwareScanning",
    "MetadataWriter",
    "MultipartStore",
    "OcrProvider",
    "OcrSource",
    "PageRasterizer",
    "PdfOperations",
    "ProcessingAttempts",
    "ReconciliationQueries",
    "RenderQueue",
    "ReplacementStore",
    "Reranker",
    "SituationCache",
    "SweepProgress",
    "TitleIndex",
    "TokenVerifier",
    "ToolCallAudit",
    "TranscriptionProvider",
    "UploadSessionStore",
    "UsageLedger",
    "VectorIndex",
    "VisionProvider",
    "WebhookSender",
    "WebhookStore",
    "Workflow",
]
