"""S3's refusals as the local S3's own layers answer them: the status, code and XML body S3 sends, which boto3 and a
browser read as they would AWS's."""

import uuid
from xml.sax.saxutils import escape


class S3Error(Exception):
    """A request S3 refuses: `status` and `code` as S3 answers them, `details` the extra elements of its body."""

    def __init__(self, status: int, code: str, message: str, **details: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details

    def body(self) -> bytes:
        extra = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in self.details.items())
        return (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{self.code}</Code>'
            f"<Message>{escape(self.message)}</Message>{extra}<RequestId>{uuid.uuid4().hex[:16].upper()}</RequestId>"
            "</Error>"
        ).encode()


def no_such_upload(upload_id: str) -> S3Error:
    return S3Error(
        404,
        "NoSuchUpload",
        "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or"
        " completed.",
        UploadId=upload_id,
    )


def invalid_argument(message: str, name: str, value: str) -> S3Error:
    return S3Error(400, "InvalidArgument", message, ArgumentName=name, ArgumentValue=value)
