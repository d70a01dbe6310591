"""`quire`: the command line for the local stack (and, later, a deployed one); docs/cli.md."""

from shared.cli.app import build_parser, main
from shared.cli.common import reports_api_errors
from shared.cli.stack import console_address

__all__ = ["build_parser", "console_address", "main", "reports_api_errors"]
