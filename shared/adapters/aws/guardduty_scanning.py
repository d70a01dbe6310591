"""GuardDuty Malware Protection for S3 as the MalwareScanning port.

GuardDuty scans each new object under `tenants/` by itself (infra/constructs/storage.py's protection plan) and
publishes its verdict as an EventBridge event, which functions/malware_verdict hands to UploadCompletion. This
adapter calls nothing: it says that the scanner is on, so processing waits for that verdict.
"""

from shared.domain.capabilities import CapabilityStatus
from shared.ports import MalwareScanning

PROVIDER = "guardduty-malware-protection-s3"


class GuardDutyMalwareScanning(MalwareScanning):
    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready(PROVIDER)

    @property
    def gates_processing(self) -> bool:
        return True
