"""The extracted document's blocks on the wire: camelCase like the rest of the API (with the first release's
snake_case names alongside until the next one), and an artifact's body takes them back as they came."""

from functions.views.files import BlockView
from shared.domain.document import Block, BlockKind, Location, Table
from shared.domain.recognition import BoundingBox
from shared.services.artifacts import parse_blocks

TABLE = Block(
    kind=BlockKind.TABLE,
    table=Table(rows=(("Item", "Price"), ("Tea", "3")), header_rows=1),
    heading_path=("Prices",),
    location=Location(sheet="S", cell_range="A1:B2", table_index=0, box=BoundingBox(left=0, top=0, width=1, height=1)),
    confidence=0.9,
)


def test_a_block_is_camel_case_with_only_the_fields_that_apply() -> None:
    wire = BlockView.of(TABLE).model_dump(mode="json", by_alias=True)
    assert wire["headingPath"] == ["Prices"] and wire["table"]["headerRows"] == 1
    assert wire["location"]["cellRange"] == "A1:B2" and wire["location"]["tableIndex"] == 0
    assert "page" not in wire["location"] and "level" not in wire and "imageRef" not in wire


def test_the_first_releases_names_are_still_sent_beside_the_camel_case_ones() -> None:
    wire = BlockView.of(TABLE).model_dump(mode="json", by_alias=True)
    assert wire["heading_path"] == wire["headingPath"] and wire["table"]["header_rows"] == 1
    assert wire["location"]["cell_range"] == "A1:B2" and wire["location"]["table_index"] == 0


def test_the_schema_names_only_the_camel_case_fields() -> None:
    schema = BlockView.model_json_schema(by_alias=True, mode="serialization")
    assert "headingPath" in schema["properties"] and "heading_path" not in schema["properties"]


def test_a_block_read_from_the_document_is_written_back_as_the_same_block() -> None:
    wire = BlockView.of(TABLE).model_dump(mode="json", by_alias=True)
    camel_only = {key: value for key, value in wire.items() if key != "heading_path"}
    camel_only["location"] = {k: v for k, v in wire["location"].items() if "_" not in k}
    camel_only["table"] = {k: v for k, v in wire["table"].items() if "_" not in k}
    assert parse_blocks([wire]) == parse_blocks([camel_only]) == (TABLE,)
